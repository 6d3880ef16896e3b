package broker

// Consumer fetches and the closest replica (KIP-392). A consumer's Fetch
// v11+ may be served by a follower, up to the follower's high watermark;
// on the leader, with replica.selector.class set to Kafka's
// RackAwareReplicaSelector, a consumer that names its rack (client.rack)
// is sent to an in-sync replica of that rack: the answer carries
// PreferredReadReplica and no records, and goes out at once, as Kafka's.
// Fetch below v11 (no rack, no preferred replica) reads from the leader
// only. A read_committed consumer is served by either replica up to that
// replica's own last stable offset, with its own aborted-transaction index. Which replica served a consumer shows in the metrics
// kbroker_consumer_fetch_bytes_total{replica=leader|follower} and
// kbroker_fetch_preferred_replica_total.

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/config"
	"github.com/kbroker/kbroker/replication"
)

// readForConsumer reads one partition for a consumer: from the leader,
// from this follower, or nowhere when another replica is preferred (op
// then carries it and fr is marked to answer now).
func (b *Broker) readForConsumer(view *metadataView, r *kmsg.FetchRequest, topic string, part *replication.Partition,
	rp kmsg.FetchRequestTopicPartition, limit int32, minOne bool, op *kmsg.FetchResponseTopicPartition, fr *fetchRead) (replication.ReadResult, error) {
	if r.Version >= 11 && b.cfg.ReplicaSelectorClass == config.RackAwareReplicaSelector && r.Rack != "" {
		views, offsets, err := part.ReadReplicas(rp.FetchOffset, rp.CurrentLeaderEpoch)
		switch {
		case err == nil:
			if id := rackAwareReplica(r.Rack, views, b.liveRack(view)); id >= 0 {
				op.PreferredReadReplica = id
				fr.redirected = true
				b.metrics.fetch.preferred.WithLabelValues(topic).Inc()
				return offsets, nil
			}
		case !errors.Is(err, kerr.NotLeaderForPartition):
			return offsets, err
		}
	}
	iso := replication.Isolation(r.IsolationLevel)
	res, err := part.ReadForConsumerAt(iso, rp.FetchOffset, limit, rp.CurrentLeaderEpoch, minOne)
	role := "leader"
	if r.Version >= 11 && errors.Is(err, kerr.NotLeaderForPartition) {
		res, err = part.ReadForConsumerOnFollowerAt(iso, rp.FetchOffset, limit, rp.CurrentLeaderEpoch, minOne)
		role = "follower"
	}
	if err == nil && len(res.Data) > 0 {
		b.metrics.fetch.consumerBytes.WithLabelValues(topic, role).Add(float64(len(res.Data)))
	}
	return res, err
}

// liveRack returns the rack of a live broker, ok false for one that is
// not registered, fenced or shutting down: no consumer is sent there.
func (b *Broker) liveRack(view *metadataView) func(id int32) (string, bool) {
	return func(id int32) (string, bool) {
		info := view.img.Brokers[id]
		if !info.Live() {
			return "", false
		}
		return info.Rack, true
	}
}

// rackAwareReplica is Kafka's RackAwareReplicaSelector: the leader (-1:
// no preferred replica) unless the client's rack holds no leader but some
// of the candidates, of which the most caught up (highest log end, then
// most recently caught up) wins. views[0] is the leader.
func rackAwareReplica(clientRack string, views []replication.ReplicaView, rackOf func(int32) (string, bool)) int32 {
	if clientRack == "" || len(views) == 0 {
		return -1
	}
	var best *replication.ReplicaView
	for i := range views {
		v := &views[i]
		if rack, ok := rackOf(v.ID); !ok || rack != clientRack {
			continue
		}
		if i == 0 {
			return -1 // the leader is in the client's rack
		}
		if best == nil || v.LogEndOffset > best.LogEndOffset ||
			(v.LogEndOffset == best.LogEndOffset && v.SinceCaughtUp < best.SinceCaughtUp) {
			best = v
		}
	}
	if best == nil {
		return -1
	}
	return best.ID
}

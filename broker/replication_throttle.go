package broker

import (
	"math"
	"strconv"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/internal/sampled"
	"github.com/kbroker/kbroker/replication"
)

// replicationThrottles are this broker's replication throttles
// (replication/throttle.go): the leader side, applied when serving
// follower fetches here, and the follower side, applied by the replica
// fetchers.
type replicationThrottles struct {
	leader, follower *replication.ReplicaQuota
}

func (b *Broker) newReplicationThrottles() *replicationThrottles {
	w := sampled.Config{Samples: int(b.cfg.ReplicationQuotaWindowNum), Window: b.cfg.ReplicationQuotaWindowSize}
	return &replicationThrottles{
		leader:   replication.NewReplicaQuota(w, b.now),
		follower: replication.NewReplicaQuota(w, b.now),
	}
}

// applyReplicationThrottles follows a new image: the rates from the
// dynamic broker configs (this broker's, else the cluster default, else the
// static config: Kafka's BrokerConfigHandler), the throttled partitions
// from each topic's *.replication.throttled.replicas naming this broker.
func (b *Broker) applyReplicationThrottles(view *metadataView) {
	rate := func(key string, static int64) int64 {
		for _, res := range []string{strconv.Itoa(int(b.cfg.NodeID)), ""} {
			if v, ok := view.img.BrokerConfigs[res][key]; ok {
				if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 0 {
					return n
				}
			}
		}
		return static
	}
	t := b.throttles
	t.leader.SetRate(rate("leader.replication.throttled.rate", b.cfg.LeaderReplicationThrottledRate))
	t.follower.SetRate(rate("follower.replication.throttled.rate", b.cfg.FollowerReplicationThrottledRate))
	leader, follower := map[string]replication.ThrottledPartitions{}, map[string]replication.ThrottledPartitions{}
	for name, tc := range view.topicCfg {
		if l := replication.ParseThrottledReplicas(tc.LeaderReplicationThrottledReplicas, b.cfg.NodeID); l.All || len(l.Partitions) > 0 {
			leader[name] = l
		}
		if f := replication.ParseThrottledReplicas(tc.FollowerReplicationThrottledReplicas, b.cfg.NodeID); f.All || len(f.Partitions) > 0 {
			follower[name] = f
		}
	}
	t.leader.SetThrottled(leader)
	t.follower.SetThrottled(follower)
}

// leaderThrottled reports whether a follower's fetch of a partition led
// here is answered without records: shouldLeaderThrottle.
func (b *Broker) leaderThrottled(part *replication.Partition, topic string, replicaID int32) bool {
	return b.throttles.leader.ShouldThrottle(topic, part.Index, part.InSync(replicaID))
}

// recordLeaderThrottled adds the records of the throttled partitions of a
// follower's fetch answer to the leader rate, in sync or not
// (KafkaApis.sizeOfThrottledPartitions).
func (b *Broker) recordLeaderThrottled(body kmsg.Response) {
	r := fetchResponseOf(body)
	if r == nil {
		return
	}
	q, view := b.throttles.leader, b.view()
	bytes := 0
	for i := range r.Topics {
		t := &r.Topics[i]
		name := t.Topic
		if r.Version >= 13 {
			known, ok := view.topicByID(t.TopicID)
			if !ok {
				continue
			}
			name = known.Name
		}
		for j := range t.Partitions {
			if q.IsThrottled(name, t.Partitions[j].Partition) {
				bytes += len(t.Partitions[j].RecordBatches)
			}
		}
	}
	q.Record(bytes)
}

// leaderActive reports whether the leader side has a rate bound: only
// then do follower fetches need measuring.
func (t *replicationThrottles) leaderActive() bool {
	_, bound := t.leader.Stats()
	return !math.IsInf(bound, 1)
}

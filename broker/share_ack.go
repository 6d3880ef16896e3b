package broker

import (
	"context"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kbroker/kbroker/broker/sharepartition"
	"github.com/kbroker/kbroker/protocol"
	"github.com/kbroker/kbroker/security/acl"
)

// The acknowledgements of ShareFetch (piggy-backed) and ShareAcknowledge:
// each partition's batches go to its share-partition on this broker, which
// must lead the partition and hold the share-partition that handed the
// records out; the partitions are acknowledged concurrently (each waits
// for its state write).

// ackBatchesOf converts a request's acknowledgement batches.
func ackBatchesOf[B any](batches []B, fields func(B) (first, last int64, types []int8)) []sharepartition.AckBatch {
	out := make([]sharepartition.AckBatch, 0, len(batches))
	for _, b := range batches {
		first, last, types := fields(b)
		ab := sharepartition.AckBatch{FirstOffset: first, LastOffset: last, Types: make([]sharepartition.AckType, len(types))}
		for i, t := range types {
			ab.Types[i] = sharepartition.AckType(t)
		}
		out = append(out, ab)
	}
	return out
}

// partitionAck is one partition's acknowledgement and its outcome.
type partitionAck struct {
	tp      sharepartition.TopicIDPartition
	batches []sharepartition.AckBatch
	code    int16
	leader  leaderHint // set with NOT_LEADER_OR_FOLLOWER
}

// leaderHint is where a partition's leader is now (KIP-951), -1 unknown.
type leaderHint struct{ id, epoch int32 }

var noLeaderHint = leaderHint{-1, -1}

// shareTopic resolves a topic id of a share request and checks READ on
// it: the topic's name, or UNKNOWN_TOPIC_ID / TOPIC_AUTHORIZATION_FAILED.
func (b *Broker) shareTopic(req *protocol.Request, view *metadataView, id [16]byte) (string, int16) {
	t, ok := view.topicByID(id)
	if !ok {
		return "", kerr.UnknownTopicID.Code
	}
	if code := b.topicAllowed(req, acl.OpRead, t.Name); code != 0 {
		return t.Name, code
	}
	return t.Name, 0
}

// ledPartition checks that this broker leads a share request's partition
// and returns it with its leader epoch, or NOT_LEADER_OR_FOLLOWER with
// where the leader is, or UNKNOWN_TOPIC_OR_PARTITION.
func (b *Broker) ledPartition(view *metadataView, topic string, idx int32) (*shareTarget, int16, leaderHint) {
	t, _, ok := view.topic(topic)
	if !ok || idx < 0 || int(idx) >= len(t.Partitions) {
		return nil, kerr.UnknownTopicOrPartition.Code, noLeaderHint
	}
	meta := t.Partitions[idx]
	hint := leaderHint{meta.Leader, meta.LeaderEpoch}
	part, held := b.replicas.Partition(topic, idx)
	if !held {
		return nil, kerr.NotLeaderForPartition.Code, hint
	}
	epoch, leader := part.LeaderEpoch()
	if leader != b.cfg.NodeID {
		return nil, kerr.NotLeaderForPartition.Code, hint
	}
	return &shareTarget{topicID: t.ID, topic: topic, partition: idx, part: part, leaderEpoch: epoch}, 0, hint
}

// acknowledgeAll applies acks (in place: each gets its code) concurrently.
// allowRenew: the request has IsRenewAck (v2).
func (s *shares) acknowledgeAll(ctx context.Context, req *protocol.Request, group, member string, acks []*partitionAck, allowRenew bool) {
	s.startAcknowledgeAll(ctx, req, group, member, acks, allowRenew)()
}

// startAcknowledgeAll makes the transitions of acks at once and returns
// what waits for their writes (each ack gets its code once it returns).
func (s *shares) startAcknowledgeAll(ctx context.Context, req *protocol.Request, group, member string, acks []*partitionAck, allowRenew bool) (wait func()) {
	view := s.b.view()
	var wg sync.WaitGroup
	for _, a := range acks {
		name, code := s.b.shareTopic(req, view, a.tp.TopicID)
		if code != 0 {
			a.code = code
			continue
		}
		target, code, hint := s.b.ledPartition(view, name, a.tp.Partition)
		if code != 0 {
			a.code, a.leader = code, hint
			continue
		}
		sp, code := s.parts.Existing(target.key(group))
		if code != 0 {
			a.code = code
			continue
		}
		write := sp.StartAcknowledge(member, a.batches, allowRenew)
		wg.Add(1)
		go func() {
			defer wg.Done()
			a.code = write(ctx)
		}()
	}
	return wg.Wait
}

// releaseClosed releases the member's records on the partitions of a
// share session it closed (epoch -1), after its acknowledgements.
func (s *shares) releaseClosed(ctx context.Context, key sharepartition.SessionKey, closed []sharepartition.TopicIDPartition) {
	if len(closed) > 0 {
		s.parts.ReleaseSession(ctx, sharepartition.ClosedSession{Key: key, Partitions: closed})
	}
}

package replication

import (
	"errors"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kbroker/kbroker/storage"
)

// Fetching from the closest replica (KIP-392): a follower serves
// consumers' fetches up to its own high watermark, which it learns from
// the leader's fetch responses, and read_committed consumers up to its own
// last stable offset with its own aborted-transaction index (markers
// replicate like any batch, so both match the leader's once caught up);
// the leader names, per consumer fetch, the replica a consumer should read
// from (the broker's replica selector, from the candidates ReadReplicas
// lists).

// ReadForConsumerOnFollower reads for a read_uncommitted consumer from
// this replica as a follower (ReadForConsumerOnFollowerAt).
func (p *Partition) ReadForConsumerOnFollower(offset int64, maxBytes int32, currentLeaderEpoch int32, minOneBatch bool) (ReadResult, error) {
	return p.ReadForConsumerOnFollowerAt(ReadUncommitted, offset, maxBytes, currentLeaderEpoch, minOneBatch)
}

// ReadForConsumerOnFollowerAt reads for a consumer at isolation level iso
// from this replica as a follower: up to its high watermark (or its last
// stable offset, with the aborted transactions read), as Kafka's
// Partition.fetchRecords with fetchOnlyFromLeader false. A replica that is
// not a follower answers NOT_LEADER_OR_FOLLOWER (the leader serves through
// ReadForConsumer); a leader epoch other than the one followed is fenced
// or unknown. An offset past this replica's log end is the leader's
// records not replicated here yet: a fetch that named its leader epoch
// gets OFFSET_OUT_OF_RANGE (it knows to ask the leader), one that did not
// gets an empty answer and retries (Kafka 3.4+, KAFKA-14313's rule).
func (p *Partition) ReadForConsumerOnFollowerAt(iso Isolation, offset int64, maxBytes int32, currentLeaderEpoch int32, minOneBatch bool) (ReadResult, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.role != RoleFollower {
		return ReadResult{}, kerr.NotLeaderForPartition
	}
	if err := p.checkEpochLocked(currentLeaderEpoch); err != nil {
		return ReadResult{}, err
	}
	res := p.offsetsLocked()
	if offset > res.LogEndOffset && currentLeaderEpoch < 0 {
		return res, nil
	}
	return p.readConsumerLocked(res, iso, offset, maxBytes, minOneBatch)
}

// offsetsLocked is a read's answer before its records: the partition's
// HW, LSO, log start and log end. Must be called with mu held.
func (p *Partition) offsetsLocked() ReadResult {
	return ReadResult{HighWatermark: p.log.HighWatermark(), LogStartOffset: p.log.LogStartOffset(), LogEndOffset: p.log.LogEndOffset(),
		LastStableOffset: p.log.LastStableOffset()}
}

// readConsumerLocked reads for a consumer at iso into res: below the HW,
// or below the LSO with the aborted transactions that overlap the batches
// read (Kafka's fetch with isolation_level=read_committed). An empty read
// has no aborted transactions. Must be called with mu held.
func (p *Partition) readConsumerLocked(res ReadResult, iso Isolation, offset int64, maxBytes int32, minOneBatch bool) (ReadResult, error) {
	bound := res.HighWatermark
	if iso == ReadCommitted {
		bound = res.LastStableOffset
	}
	res, err := p.readLocked(res, offset, maxBytes, bound, minOneBatch)
	if err == nil && iso == ReadCommitted && len(res.Data) > 0 {
		res.Aborted = p.log.AbortedTransactions(offset, res.NextOffset)
	}
	return res, err
}

// readLocked reads from offset up to bound (exclusive) into res; an offset
// outside the log is OFFSET_OUT_OF_RANGE. Must be called with mu held.
func (p *Partition) readLocked(res ReadResult, offset int64, maxBytes int32, bound int64, minOneBatch bool) (ReadResult, error) {
	rr, err := p.log.Read(offset, maxBytes, bound, minOneBatch)
	if err != nil {
		if errors.Is(err, storage.ErrOffsetOutOfRange) {
			return res, kerr.OffsetOutOfRange
		}
		return res, err
	}
	res.ReadResult = rr
	return res, nil
}

// ReplicaView is a replica a consumer could read from, as the leader sees
// it (Kafka's ReplicaView).
type ReplicaView struct {
	ID           int32
	LogEndOffset int64
	// SinceCaughtUp is how long ago the replica last had every record the
	// leader had (0 for the leader).
	SinceCaughtUp time.Duration
}

// ReadReplicas lists, on the leader, the replicas that may serve a
// consumer fetching at offset: the leader first, then the in-sync
// followers whose log reaches offset (Kafka's findPreferredReadReplica:
// a follower out of the ISR may lag without bound). It also returns the
// partition's offsets, which a fetch sent elsewhere is answered with. A
// replica that does not lead answers NOT_LEADER_OR_FOLLOWER, another
// leader epoch than currentLeaderEpoch (-1: any) is fenced or unknown.
func (p *Partition) ReadReplicas(offset int64, currentLeaderEpoch int32) ([]ReplicaView, ReadResult, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.role != RoleLeader {
		return nil, ReadResult{}, kerr.NotLeaderForPartition
	}
	if err := p.checkEpochLocked(currentLeaderEpoch); err != nil {
		return nil, ReadResult{}, err
	}
	now := p.now()
	offsets := p.offsetsLocked()
	views := []ReplicaView{{ID: p.localID, LogEndOffset: offsets.LogEndOffset}}
	for _, id := range p.isr.committed {
		f, isFollower := p.followers[id]
		if !isFollower || id == p.localID || f.LEO < offset || !slices.Contains(p.replicas, id) {
			continue
		}
		views = append(views, ReplicaView{ID: id, LogEndOffset: f.LEO, SinceCaughtUp: now.Sub(f.lastCaughtUp())})
	}
	return views, offsets, nil
}

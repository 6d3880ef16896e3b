package replication

import (
	"github.com/twmb/franz-go/pkg/kerr"
)

// Special timestamps of ListOffsets.
const (
	LatestTimestamp        int64 = -1 // the next offset to be written (HW for consumers)
	EarliestTimestamp      int64 = -2 // the log start offset
	MaxTimestamp           int64 = -3 // the record with the largest timestamp (KIP-734)
	EarliestLocalTimestamp int64 = -4 // the first offset on local disk (KIP-405); the log start here
	EarliestPendingUpload  int64 = -5 // KIP-1023; without tiered storage, the log start
)

// OffsetLookup is a ListOffsets answer for one partition.
type OffsetLookup struct {
	Offset      int64
	Timestamp   int64
	LeaderEpoch int32
}

// ListOffset answers ListOffsets. Consumers (fromReplica false) see only
// committed data: the latest offset is the HW and a timestamp lookup finds
// nothing at or beyond it. A replica sees up to the log end. Until a new
// leader's HW reaches the start of its epoch, a consumer's latest offset
// and a timestamp found beyond the HW get OFFSET_NOT_AVAILABLE (retriable),
// as Kafka's.
func (p *Partition) ListOffset(ts int64, currentLeaderEpoch int32, fromReplica bool) (OffsetLookup, error) {
	return p.ListOffsetAt(ReadUncommitted, ts, currentLeaderEpoch, fromReplica)
}

// ListOffsetAt is ListOffset for a consumer at isolation level iso: a
// read_committed one sees up to the last stable offset (Kafka's
// lastFetchableOffset), the latest offset included.
func (p *Partition) ListOffsetAt(iso Isolation, ts int64, currentLeaderEpoch int32, fromReplica bool) (OffsetLookup, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.role != RoleLeader {
		return OffsetLookup{}, kerr.NotLeaderForPartition
	}
	if err := p.checkEpochLocked(currentLeaderEpoch); err != nil {
		return OffsetLookup{}, err
	}
	end := p.log.HighWatermark()
	switch {
	case fromReplica:
		end = p.log.LogEndOffset()
	case iso == ReadCommitted:
		end = p.log.LastStableOffset()
	}
	none := OffsetLookup{Offset: -1, Timestamp: -1, LeaderEpoch: -1}
	// A new leader whose HW has not yet reached its epoch's start offset
	// does not know the committed end yet (Kafka's fetchOffsetForTimestamp:
	// the HW, not the LSO, is compared).
	lagging := !fromReplica && p.leaderEpochStartOffset > p.log.HighWatermark()
	switch ts {
	case LatestTimestamp:
		if lagging {
			return none, kerr.OffsetNotAvailable
		}
		return OffsetLookup{Offset: end, Timestamp: -1, LeaderEpoch: p.epochForOffsetLocked(end)}, nil
	case EarliestTimestamp, EarliestLocalTimestamp, EarliestPendingUpload:
		start := p.log.LogStartOffset()
		return OffsetLookup{Offset: start, Timestamp: -1, LeaderEpoch: p.epochForOffsetLocked(start)}, nil
	case MaxTimestamp:
		maxTS, off := p.log.MaxTimestamp()
		if off < 0 || off >= end {
			return none, nil
		}
		return OffsetLookup{Offset: off, Timestamp: maxTS, LeaderEpoch: p.epochForOffsetLocked(off)}, nil
	}
	if ts < 0 {
		return none, kerr.InvalidRequest
	}
	off, found, ok := p.log.OffsetForTimestamp(ts)
	if !ok || off >= end {
		if lagging {
			return none, kerr.OffsetNotAvailable
		}
		return none, nil
	}
	return OffsetLookup{Offset: off, Timestamp: found, LeaderEpoch: p.epochForOffsetLocked(off)}, nil
}

// epochForOffsetLocked is the leader epoch that wrote offset (the latest
// epoch for the log end), -1 if unknown.
func (p *Partition) epochForOffsetLocked(offset int64) int32 {
	epoch := int32(-1)
	for _, e := range p.log.EpochCache().Entries() {
		if e.StartOffset > offset {
			break
		}
		epoch = e.Epoch
	}
	return epoch
}

// DeleteRecordsBefore moves the log start offset to offset (DeleteRecords);
// -1 means the HW. Only the leader may, and not beyond the HW. Followers
// follow the leader's log start from their fetch responses. The log start
// moves (deleting segments, writing the epoch checkpoint) with roleMu held
// for reading and mu released.
func (p *Partition) DeleteRecordsBefore(offset int64) (int64, error) {
	p.roleMu.RLock()
	defer p.roleMu.RUnlock()
	p.mu.RLock()
	isLeader := p.role == RoleLeader
	p.mu.RUnlock()
	if !isLeader {
		return -1, kerr.NotLeaderForPartition
	}
	hw := p.log.HighWatermark()
	if offset == -1 {
		offset = hw
	}
	if offset < 0 || offset > hw {
		return -1, kerr.OffsetOutOfRange
	}
	if offset > p.log.LogStartOffset() {
		if err := p.log.SetLogStartOffset(offset); err != nil {
			return -1, err
		}
	}
	return p.log.LogStartOffset(), nil
}

package sharestate

import (
	"context"
	"slices"
)

// Pruning. __share_group_state is not compacted: a key's state is its last
// snapshot plus the updates after it, so every record below the oldest
// "last snapshot" of the partition's keys is redundant (Kafka's
// ShareCoordinatorOffsetsManager.lastRedundantOffset) and is deleted with
// DeleteRecords every PruneInterval. Keys idle for ColdSnapshotInterval
// that have updates after their snapshot, or whose snapshot was never
// rewritten, get a fresh snapshot first (Kafka's snapshotColdPartitions),
// so that an idle key does not hold the partition's log forever.

// redundantOffset is the offset below which no key needs a record: the
// lowest last-snapshot offset, or the log end when no key has state.
func redundantOffset(states map[Key]*keyState, logEnd int64) int64 {
	off := logEnd
	for _, ks := range states {
		off = min(off, ks.snapshotOffset)
	}
	return off
}

// coldKeys returns the keys a cold snapshot should rewrite, sorted.
func coldKeys(states map[Key]*keyState, nowMs, intervalMs int64) []Key {
	var out []Key
	for k, ks := range states {
		idle := nowMs-ks.lastWriteMs >= intervalMs
		neverRewritten := ks.state.CreateTimestamp == ks.state.WriteTimestamp
		if idle && (ks.updates > 0 || neverRewritten) {
			out = append(out, k)
		}
	}
	slices.SortFunc(out, func(a, b Key) int { return compareKeys(a, b) })
	return out
}

func compareKeys(a, b Key) int {
	if a.Group != b.Group {
		if a.Group < b.Group {
			return -1
		}
		return 1
	}
	for i := range a.TopicID {
		if a.TopicID[i] != b.TopicID[i] {
			return int(a.TopicID[i]) - int(b.TopicID[i])
		}
	}
	return int(a.Partition - b.Partition)
}

// armPrune schedules the next prune round on the loop; the timer's
// goroutine waits for the round, so a test clock that fires it knows its
// effects are done. Must be called on the loop goroutine (or before it
// starts).
func (s *shard) armPrune() {
	s.stopTimer = s.c.opts.AfterFunc(s.c.opts.PruneInterval, func() {
		s.submit(context.Background(), &op{run: s.pruneRound})
	})
}

// pruneRound writes the cold snapshots, deletes the redundant records and
// re-arms the timer. It runs on the loop goroutine.
func (s *shard) pruneRound() {
	defer s.armPrune()
	now := s.c.nowMs()
	var records []stateRecord
	for _, k := range coldKeys(s.states, now, s.c.opts.ColdSnapshotInterval.Milliseconds()) {
		records = append(records, *coldSnapshot(s.states[k], k, now))
	}
	if code := s.appendRecords(records); code != 0 {
		return // try again next round
	}
	off := redundantOffset(s.states, s.logEnd)
	if off <= s.pruned {
		return
	}
	ctx, cancel := context.WithTimeout(s.ctx, s.c.opts.WriteTimeout)
	defer cancel()
	if err := s.log.DeleteRecordsBefore(ctx, off); err != nil {
		s.c.log.Warn("sharestate: pruning failed", "partition", s.p, "before", off, "err", err)
		return
	}
	s.c.metrics.pruned.Add(off - s.pruned)
	s.pruned = off
}

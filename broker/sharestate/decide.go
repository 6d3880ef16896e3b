package sharestate

import "slices"

// The decisions of the share coordinator, one per state API, as Kafka's
// ShareCoordinatorShard makes them: pure functions of the key's current
// state (nil when the key has none) and the request, returning the error
// code, the record to write (nil: none) and what to answer.

// decision is the outcome of one request on one key.
type decision struct {
	code   int16
	msg    string
	record *stateRecord
	// state is what a read answers: the state before the record.
	state *State
}

func fail(code int16, msg string) decision { return decision{code: code, msg: msg} }

// writeData is the partition part of a WriteShareGroupState request (or of
// the write a read makes to record a newer leader epoch).
type writeData struct {
	stateEpoch, leaderEpoch int32
	startOffset             int64
	deliveryCompleteCount   int32
	batches                 []StateBatch
}

// checkKey answers the checks every API makes first (Kafka's
// maybeGet*Error): a group id, a partition that is not negative and exists.
func checkKey(k Key, exists func([16]byte, int32) bool) (int16, string) {
	switch {
	case k.Group == "":
		return codeInvalidGroupID, "Group id must be specified and non-empty."
	case k.Partition < 0:
		return codeInvalidRequest, "The partition id cannot be a negative number."
	case !exists(k.TopicID, k.Partition):
		return codeUnknownTopicOrPartition, "Topic/TopicPartition not found in metadata image."
	}
	return 0, ""
}

// decideInitialize is InitializeShareGroupState: a fresh snapshot with the
// given state epoch and start offset, no batches (Kafka's
// generateInitializeStateRecord). A lower state epoch than the recorded one
// is FENCED_STATE_EPOCH.
func decideInitialize(cur *keyState, k Key, stateEpoch int32, startOffset int64, nowMs int64) decision {
	if cur != nil && cur.stateEpoch > stateEpoch {
		return fail(codeFencedStateEpoch, "Initialize request state epoch is smaller than the last recorded.")
	}
	snapshotEpoch := int32(0)
	if cur != nil {
		snapshotEpoch = cur.state.SnapshotEpoch + 1
	}
	dcc := unknownDeliveryComplete
	if startOffset != uninitializedStartOffset {
		dcc = 0 // the lag is known from an explicit start offset on
	}
	s := State{
		SnapshotEpoch: snapshotEpoch, StateEpoch: stateEpoch, LeaderEpoch: defaultLeaderEpoch,
		StartOffset: startOffset, DeliveryCompleteCount: dcc, CreateTimestamp: nowMs, WriteTimestamp: nowMs,
	}
	return decision{record: &stateRecord{key: k, kind: kindSnapshot, value: s}}
}

// decideWrite is WriteShareGroupState. A key without state (never
// initialized, or deleted) is INVALID_REQUEST, as Kafka 4.1+
// (KAFKA-19338): a share-partition leader that wrote first would have its
// acknowledgements wiped by the group coordinator's initialization.
// Older leader or state epochs than the recorded ones are fenced (-1 is
// not checked). The record is a snapshot after perSnapshot updates, else
// an update holding only the request's batches (Kafka's
// generateShareStateRecord).
func decideWrite(cur *keyState, k Key, w writeData, nowMs int64, perSnapshot int) decision {
	if cur == nil {
		return fail(codeInvalidRequest, "Write operation on uninitialized share partition not allowed.")
	}
	if w.leaderEpoch != noEpoch && cur != nil && cur.leaderEpoch > w.leaderEpoch {
		return fail(codeFencedLeaderEpoch, "Request leader epoch smaller than last recorded.")
	}
	if w.stateEpoch != noEpoch && cur != nil && cur.stateEpoch > w.stateEpoch {
		return fail(codeFencedStateEpoch, "Request state epoch smaller than last recorded.")
	}
	return decision{record: stateRecordFor(cur, k, w, nowMs, perSnapshot)}
}

// stateRecordFor is the record of a write to a key with state.
func stateRecordFor(cur *keyState, k Key, w writeData, nowMs int64, perSnapshot int) *stateRecord {
	switch {
	case cur.updates >= perSnapshot:
		s := cur.state
		s.SnapshotEpoch++
		s.StateEpoch = orCurrent(w.stateEpoch, s.StateEpoch)
		s.LeaderEpoch = orCurrent(w.leaderEpoch, s.LeaderEpoch)
		s.DeliveryCompleteCount = orCurrent(w.deliveryCompleteCount, s.DeliveryCompleteCount)
		if w.startOffset != -1 {
			s.StartOffset = w.startOffset
		}
		s.Batches = combineBatches(cur.state.Batches, w.batches, s.StartOffset)
		s.CreateTimestamp, s.WriteTimestamp = nowMs, nowMs
		return &stateRecord{key: k, kind: kindSnapshot, value: s}
	}
	u := State{
		SnapshotEpoch: cur.state.SnapshotEpoch, LeaderEpoch: w.leaderEpoch, StartOffset: w.startOffset,
		DeliveryCompleteCount: w.deliveryCompleteCount, Batches: combineBatches(nil, w.batches, w.startOffset),
	}
	return &stateRecord{key: k, kind: kindUpdate, value: u}
}

func orCurrent(v, cur int32) int32 {
	if v == -1 {
		return cur
	}
	return v
}

// decideRead is ReadShareGroupState: the state, INVALID_REQUEST for a key
// without one (never initialized by the group coordinator, or deleted:
// Kafka 4.1+, KAFKA-19338), FENCED_LEADER_EPOCH for a leader epoch older
// than the recorded one, and a record of the newer leader epoch when the
// reader is a new leader (Kafka's readStateAndMaybeUpdateLeaderEpoch).
func decideRead(cur *keyState, k Key, leaderEpoch int32, nowMs int64, perSnapshot int) decision {
	if cur == nil {
		return fail(codeInvalidRequest, "Read operation on uninitialized share partition not allowed.")
	}
	if cur.leaderEpoch > leaderEpoch {
		return fail(codeFencedLeaderEpoch, "Request leader epoch is smaller than last recorded.")
	}
	s := cur.state
	s.Batches = slices.Clone(cur.state.Batches)
	d := decision{state: &s}
	if leaderEpoch != noEpoch && cur.leaderEpoch != leaderEpoch {
		w := writeData{stateEpoch: cur.state.StateEpoch, leaderEpoch: leaderEpoch, startOffset: cur.state.StartOffset, deliveryCompleteCount: -1}
		d.record = stateRecordFor(cur, k, w, nowMs, perSnapshot)
	}
	return d
}

// decideDelete is DeleteShareGroupState: a tombstone of the snapshot key,
// nothing for a key without state.
func decideDelete(cur *keyState, k Key) decision {
	if cur == nil {
		return decision{}
	}
	return decision{record: &stateRecord{key: k, kind: kindTombstone}}
}

// summary is ReadShareGroupStateSummary: no epoch checks, no writes.
func summary(cur *keyState) State {
	if cur == nil {
		return State{StartOffset: uninitializedStartOffset, StateEpoch: defaultStateEpoch, LeaderEpoch: defaultLeaderEpoch, DeliveryCompleteCount: unknownDeliveryComplete}
	}
	return cur.state
}

// coldSnapshot is the snapshot that rewrites an idle key so that the
// records before it can be pruned (Kafka's snapshotColdPartitions): same
// content, next snapshot epoch, a new write timestamp.
func coldSnapshot(cur *keyState, k Key, nowMs int64) *stateRecord {
	s := cur.state
	s.SnapshotEpoch++
	s.WriteTimestamp = nowMs
	s.Batches = slices.Clone(cur.state.Batches)
	return &stateRecord{key: k, kind: kindSnapshot, value: s}
}

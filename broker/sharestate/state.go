package sharestate

import "slices"

// Defaults of an uninitialized share-partition (Kafka's PartitionFactory).
const (
	uninitializedStartOffset   int64 = -1
	unknownDeliveryComplete    int32 = -1
	defaultStateEpoch          int32 = 0
	defaultLeaderEpoch         int32 = 0
	noEpoch                    int32 = -1 // a request field that is not set
	defaultSnapshotsPerUpdates       = 500
)

// keyState is the soft state of one key on a shard: the merged state and
// what the write decisions need (Kafka's shareStateMap, leaderEpochMap,
// stateEpochMap and snapshotUpdateCount entries of a key).
type keyState struct {
	state State
	// leaderEpoch and stateEpoch are the highest seen in the key's records.
	leaderEpoch, stateEpoch int32
	// updates counts ShareUpdate records since the last snapshot.
	updates int
	// snapshotOffset is the log offset of the key's last snapshot, the
	// lowest offset a reload of this key needs.
	snapshotOffset int64
	// lastWriteMs is when a record of the key was last written (cold
	// snapshots).
	lastWriteMs int64
}

// apply returns the key's state after one record at offset (the replay of
// Kafka's ShareCoordinatorShard): a snapshot replaces the state, an update
// merges its batches into it, a tombstone deletes it (nil). cur is not
// modified. Load and live writes both go through apply, so a reload
// rebuilds exactly the state that was served.
func apply(cur *keyState, sr stateRecord, offset int64) *keyState {
	switch sr.kind {
	case kindTombstone:
		return nil
	case kindSnapshot:
		n := &keyState{state: sr.value, snapshotOffset: offset, leaderEpoch: sr.value.LeaderEpoch, stateEpoch: sr.value.StateEpoch}
		n.state.Batches = slices.Clone(sr.value.Batches)
		if cur != nil {
			n.leaderEpoch = max(cur.leaderEpoch, n.leaderEpoch)
			n.stateEpoch = max(cur.stateEpoch, n.stateEpoch)
		}
		return n
	}
	if cur == nil {
		// An update without a snapshot (its snapshot was pruned away by a
		// foreign tool): it is all there is.
		n := &keyState{state: sr.value, snapshotOffset: offset, leaderEpoch: sr.value.LeaderEpoch}
		n.state.StateEpoch = defaultStateEpoch
		n.state.Batches = slices.Clone(sr.value.Batches)
		return n
	}
	n := *cur
	n.updates++
	n.leaderEpoch = max(n.leaderEpoch, sr.value.LeaderEpoch)
	n.state = mergeUpdate(cur.state, sr.value)
	return &n
}

// mergeUpdate folds an update into a state (Kafka's ShareCoordinatorShard
// merge): -1 fields keep the current value.
func mergeUpdate(cur, u State) State {
	next := cur
	if u.StartOffset != -1 {
		next.StartOffset = u.StartOffset
	}
	if u.LeaderEpoch != -1 {
		next.LeaderEpoch = u.LeaderEpoch
	}
	if u.DeliveryCompleteCount != -1 {
		next.DeliveryCompleteCount = u.DeliveryCompleteCount
	}
	next.Batches = combineBatches(cur.Batches, u.Batches, next.StartOffset)
	return next
}

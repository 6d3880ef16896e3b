package replication

import (
	"slices"
	"time"
)

// FollowerProgress is the leader's view of one follower, updated on each of
// its fetches (Kafka's Replica.updateFetchState).
type FollowerProgress struct {
	ID int32
	// LEO is the follower's log end offset: its last fetch offset.
	LEO int64
	// LastCaughtUp is the last time the follower was known to have every
	// record the leader had at some earlier fetch; -lag is measured from it.
	LastCaughtUp time.Time
	// BrokerEpoch is the follower's broker epoch as its last fetch gave it
	// (Fetch v15+ ReplicaState), -1 when not given. It goes with the
	// follower into AlterPartition (KIP-903), so that the controller refuses
	// an expansion the follower's next incarnation did not earn.
	BrokerEpoch int64
	// lastFetchTime and lastFetchLeaderLEO remember the previous fetch: a
	// follower that reaches the leader's LEO as of its previous fetch was
	// caught up at that fetch's time.
	lastFetchTime      time.Time
	lastFetchLeaderLEO int64
}

// observeFetch records a follower fetch at fetchOffset, made at now, while the
// leader's LEO was leaderLEO.
func (f *FollowerProgress) observeFetch(fetchOffset, leaderLEO int64, now time.Time) {
	switch {
	case fetchOffset >= leaderLEO:
		f.LastCaughtUp = now
	case fetchOffset >= f.lastFetchLeaderLEO && !f.lastFetchTime.IsZero():
		f.LastCaughtUp = maxTime(f.LastCaughtUp, f.lastFetchTime)
	}
	f.LEO = fetchOffset
	f.lastFetchTime = now
	f.lastFetchLeaderLEO = leaderLEO
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// ShrinkCandidates returns the ISR members (other than the leader) that have
// not caught up within lagMax: they should leave the ISR.
func ShrinkCandidates(leader int32, isr []int32, followers map[int32]*FollowerProgress, now time.Time, lagMax time.Duration) []int32 {
	var out []int32
	for _, id := range isr {
		if id == leader {
			continue
		}
		f, ok := followers[id]
		if !ok || now.Sub(f.LastCaughtUp) > lagMax {
			out = append(out, id)
		}
	}
	return out
}

// CanJoinISR reports whether a follower outside the ISR has caught up enough
// to join it: its LEO has reached the HW and the start offset of the current
// leader epoch (so it holds every record of this epoch that is committed).
func CanJoinISR(f *FollowerProgress, hw, leaderEpochStartOffset int64) bool {
	return f.LEO >= hw && f.LEO >= leaderEpochStartOffset
}

// without returns isr minus the ids in drop, keeping order.
func without(isr, drop []int32) []int32 {
	out := make([]int32, 0, len(isr))
	for _, id := range isr {
		if !slices.Contains(drop, id) {
			out = append(out, id)
		}
	}
	return out
}

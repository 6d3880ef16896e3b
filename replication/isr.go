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
	// idle is the mark of the follower's session that skips this partition
	// while nothing changes (idle.go), nil when none: the session's fetches
	// count as caught-up times until it is released.
	idle *IdleMark
}

// lastCaughtUp is LastCaughtUp with the fetches of the session that skips
// the partition, which found the follower caught up (idle.go).
func (f *FollowerProgress) lastCaughtUp() time.Time {
	if f.idle != nil {
		return maxTime(f.LastCaughtUp, f.idle.s.lastFetchTime())
	}
	return f.LastCaughtUp
}

// takeIdle releases f's idle mark, if any, keeping its caught-up time, and
// returns the mark's session (nil: none), whose wake-ups the partition
// still delivers (rewatchIdleLocked).
func (f *FollowerProgress) takeIdle() *FollowerSession {
	m := f.idle
	if m == nil {
		return nil
	}
	f.foldIdle()
	m.released.Store(true)
	m.s.released(m)
	return m.s
}

// foldIdle drops f's idle mark, keeping its caught-up time: the follower
// fetched at the leader's log end, unchanged since, at the session's last
// fetch.
func (f *FollowerProgress) foldIdle() {
	if f.idle == nil {
		return
	}
	if t := f.idle.s.lastFetchTime(); !t.IsZero() {
		f.LastCaughtUp = maxTime(f.LastCaughtUp, t)
		f.lastFetchTime = maxTime(f.lastFetchTime, t)
	}
	f.idle = nil
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
		if !ok || now.Sub(f.lastCaughtUp()) > lagMax {
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

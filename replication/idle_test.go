package replication

import (
	"testing"
	"time"

	"github.com/kbroker/kbroker/internal/testsupport"
	"github.com/kbroker/kbroker/storage"
)

// idleRig is a leader (broker 1) of ISR {1, 2, 3} whose follower 2 fetches
// in an incremental session, driven as the broker's fetch path drives it:
// Begin, the session's check of its marks (a changed one is released),
// Fetched, then a read of the partition when it is not skipped.
type idleRig struct {
	t     *testing.T
	clock *fakeClock
	l     *testReplica
	s     *FollowerSession
	mark  *IdleMark // the session's mark, nil: read next fetch
	reads int       // the fetches that read the partition
}

func newIdleRig(t *testing.T) *idleRig {
	clock := testsupport.NewClock(time.Unix(1000, 0))
	r := &idleRig{t: t, clock: clock, l: newTestReplica(t, 1, clock), s: NewFollowerSession(clock.Now)}
	must(t, r.l.p.MakeLeader(leaderState(1, 1, 1, 2, 3), 1))
	return r
}

// fetch is one fetch of follower 2's session at the leader's log end (the
// follower is caught up): it returns whether the partition was skipped.
func (r *idleRig) fetch() (skipped bool) {
	r.t.Helper()
	r.s.Begin()
	if r.mark != nil && r.mark.Unchanged() {
		r.s.Fetched()
		return true
	}
	if r.mark != nil {
		r.mark.Release()
		r.mark = nil
	}
	r.s.Fetched()
	r.reads++
	_, leo, _ := r.l.p.Offsets()
	res, err := r.l.p.UpdateFollowerAndRead(FollowerFetch{ReplicaID: 2, FetchOffset: leo, CurrentLeaderEpoch: 1, LastFetchedEpoch: -1,
		MaxBytes: 1 << 20, MinOneBatch: true, Session: r.s})
	if err != nil {
		r.t.Fatal(err)
	}
	r.mark = res.Idle
	return false
}

// follower3 keeps follower 3 caught up with a sessionless fetch at the log
// end (it never leaves the ISR in these tests).
func (r *idleRig) follower3() {
	r.t.Helper()
	_, leo, _ := r.l.p.Offsets()
	if _, err := r.l.p.UpdateFollowerAndRead(FollowerFetch{ReplicaID: 3, FetchOffset: leo, CurrentLeaderEpoch: 1, LastFetchedEpoch: -1, MaxBytes: 1 << 20}); err != nil {
		r.t.Fatal(err)
	}
}

// shrinks reports whether the ISR check now proposes to drop follower 2.
func (r *idleRig) shrinks() bool {
	r.t.Helper()
	r.follower3()
	before := len(r.l.proposed)
	r.l.p.MaybeShrinkISR(30 * time.Second)
	change, ok := r.l.lastProposal()
	return ok && len(r.l.proposed) > before && !containsID(change.NewISR, 2)
}

func containsID(ids []int32, id int32) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// An idle partition is read once, then skipped by every fetch of the
// session until something it answers changes: an append, a high watermark
// move, an ISR change.
func TestIdleMarkSkipsUntilThePartitionChanges(t *testing.T) {
	r := newIdleRig(t)
	if r.fetch() || r.mark == nil {
		t.Fatalf("first fetch: skipped or no mark (%v)", r.mark)
	}
	for range 5 {
		if !r.fetch() {
			t.Fatal("an unchanged idle partition was read")
		}
	}
	if r.reads != 1 {
		t.Fatalf("%d reads, want 1", r.reads)
	}
	// An append: read again (the rig's follower fetches at the new log
	// end at once, and is marked there).
	if _, err := r.l.p.AppendAsLeader(batch(1), 1, storage.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	if r.fetch() || r.mark == nil {
		t.Fatal("skipped after an append, or not marked at the new log end")
	}
	if !r.fetch() {
		t.Fatal("not skipped with nothing changed")
	}
	r.follower3() // follower 3 catches up: the HW moves
	if r.fetch() {
		t.Fatal("skipped after an HW move")
	}
	if !r.fetch() {
		t.Fatal("not skipped with nothing changed")
	}
	// An ISR change (here a shrink proposal of follower 3's) invalidates.
	r.l.p.mu.Lock()
	r.l.p.bumpVersionLocked()
	r.l.p.mu.Unlock()
	if r.fetch() {
		t.Fatal("skipped after a state change")
	}
}

// Kafka advances a caught-up follower's last caught-up time on every fetch:
// a follower whose idle partition its session skips stays in the ISR as
// long as the session fetches, and leaves it replica.lag.time.max.ms after
// the session stops.
func TestIdleFollowerStaysInTheISRWhileItsSessionFetches(t *testing.T) {
	r := newIdleRig(t)
	r.fetch()
	for range 10 {
		r.clock.Advance(10 * time.Second)
		if !r.fetch() {
			t.Fatal("idle partition read")
		}
		if r.shrinks() {
			t.Fatalf("follower 2 dropped from the ISR at %v while its session fetches", r.clock.Now())
		}
	}
	// The session stops fetching (the follower went away).
	r.clock.Advance(29 * time.Second)
	if r.shrinks() {
		t.Fatal("dropped before replica.lag.time.max.ms")
	}
	r.clock.Advance(2 * time.Second)
	if !r.shrinks() {
		t.Fatal("follower 2 still in the ISR 31 s after its session's last fetch")
	}
}

// Once the partition moved, the session's later fetches (which read it)
// are no caught-up times of the follower: if it does not come back for the
// records, it leaves the ISR replica.lag.time.max.ms after the last fetch
// that skipped the partition.
func TestIdleMarkStopsCountingOnceThePartitionMoved(t *testing.T) {
	r := newIdleRig(t)
	r.fetch()
	r.clock.Advance(10 * time.Second)
	r.fetch() // skipped: caught up at 1010 s
	if _, err := r.l.p.AppendAsLeader(batch(1), 1, storage.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	// The follower's session goes on fetching, but the mark was released:
	// the session's next fetches only count when they find it caught up.
	r.clock.Advance(10 * time.Second)
	r.s.Begin()
	if r.mark.Unchanged() {
		t.Fatal("mark unchanged after an append")
	}
	r.mark.Release()
	r.s.Fetched()
	r.clock.Advance(25 * time.Second) // 35 s after the last caught-up fetch, 25 s after the last fetch
	if !r.shrinks() {
		t.Fatal("follower 2 kept in the ISR by fetches after the partition moved")
	}
}

// A skipped partition wakes its session's long poll when it moves.
func TestIdleMarkWakesItsSession(t *testing.T) {
	r := newIdleRig(t)
	r.fetch()
	r.s.Begin() // drains
	select {
	case <-r.s.Woken():
		t.Fatal("woken with nothing changed")
	default:
	}
	if _, err := r.l.p.AppendAsLeader(batch(1), 1, storage.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-r.s.Woken():
	default:
		t.Fatal("an append to an idle partition did not wake its session")
	}
	// Released, the partition no longer wakes the session.
	r.mark.Release()
	if _, err := r.l.p.AppendAsLeader(batch(1), 1, storage.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-r.s.Woken():
		t.Fatal("woken by a partition no longer marked")
	default:
	}
}

// A leadership change drops the marks and their wake-ups.
func TestIdleMarkDroppedOnRoleChange(t *testing.T) {
	r := newIdleRig(t)
	r.fetch()
	if _, err := r.l.p.MakeFollower(PartitionState{Topic: "t", Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3},
		Leader: 2, LeaderEpoch: 2, PartitionEpoch: 2}); err != nil {
		t.Fatal(err)
	}
	if r.mark.Unchanged() {
		t.Fatal("mark unchanged after the leadership moved")
	}
	r.l.p.watchers.mu.Lock()
	_, watched := r.l.p.watchers.set[r.s.waiter]
	r.l.p.watchers.mu.Unlock()
	if watched {
		t.Fatal("the session's waiter still watches a partition this broker no longer leads")
	}
}

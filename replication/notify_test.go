package replication

import (
	"testing"

	"github.com/kbroker/kbroker/storage"
)

// woken reports whether w was woken since the last call, and drains it.
func woken(w *Waiter) bool {
	select {
	case <-w.C:
		return true
	default:
		return false
	}
}

// A waiter is woken only by the events it asked for, and always by a role
// change: an append wakes a follower's long poll but not a consumer's, the
// follower's fetch that moves the HW wakes the consumer's and the acks=all
// wait but not the follower's.
func TestWaitersWakeOnTheirEvents(t *testing.T) {
	r := newFetcherRig(t)
	leo := NewWaiterFor(LogEndMoved)
	hw := NewWaiterFor(HighWatermarkMoved)
	all := NewWaiter()
	for _, w := range []*Waiter{leo, hw, all} {
		defer r.leader.Watch(w)()
	}
	r.round() // the follower's first fetch: its LEO becomes known, nothing to move

	if _, err := r.leader.AppendAsLeader(batch(1), -1, storage.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	if !woken(leo) || woken(hw) || !woken(all) {
		t.Fatal("an append must wake the log-end and all-events waiters only")
	}
	r.round() // the follower fetches the batch (nothing moves on the leader yet)
	woken(leo)
	woken(all)
	r.round() // its next fetch acknowledges it: the HW moves
	if hwNow, _, _ := r.leader.Offsets(); hwNow != 1 {
		t.Fatalf("HW %d, want 1", hwNow)
	}
	if woken(leo) || !woken(hw) || !woken(all) {
		t.Fatal("a HW move must wake the HW and all-events waiters only")
	}

	r.elect(1, 2)
	if !woken(leo) || !woken(hw) || !woken(all) {
		t.Fatal("a role change must wake every waiter")
	}
}

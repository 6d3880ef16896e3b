package replication

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

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

// WaitForHWUntil answers as soon as the HW passes the offset, and
// REQUEST_TIMED_OUT once expired fires, without waiting further.
func TestWaitForHWUntil(t *testing.T) {
	r := newFetcherRig(t)
	r.round()
	if _, err := r.leader.AppendAsLeader(batch(1), -1, storage.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	fired := make(chan time.Time)
	close(fired)
	if err := r.leader.WaitForHWUntil(context.Background(), fired, 0); !errors.Is(err, kerr.RequestTimedOut) {
		t.Fatalf("HW not passed, timer fired: %v, want REQUEST_TIMED_OUT", err)
	}
	done := make(chan error, 1)
	go func() { done <- r.leader.WaitForHWUntil(context.Background(), nil, 0) }()
	r.round() // the follower fetches the batch
	r.round() // and acknowledges it
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("HW passed: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the wait was not woken by the HW move")
	}
}

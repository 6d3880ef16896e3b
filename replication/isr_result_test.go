package replication

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kbroker/kbroker/storage"
)

// KIP-497 with Kafka's handleAlterPartitionError: an AlterPartition whose
// answer was lost may have been applied, so the expansion stays pending
// (its member keeps counting for the HW) and is sent again; only an answer
// saying it was not applied drops it; an answer saying our view is stale
// keeps it until metadata settles it.
func TestAlterPartitionFailures(t *testing.T) {
	for _, tc := range []struct {
		name    string
		err     error
		resend  bool
		pending bool
	}{
		{"timeout", errors.New("i/o timeout"), true, true},
		{"NOT_CONTROLLER", kerr.NotController, true, true},
		{"OPERATION_NOT_ATTEMPTED", kerr.OperationNotAttempted, false, false},
		{"INELIGIBLE_REPLICA", kerr.IneligibleReplica, false, false},
		{"no controller", errNoController, false, false},
		{"FENCED_LEADER_EPOCH", kerr.FencedLeaderEpoch, false, true},
		{"INVALID_UPDATE_VERSION", kerr.InvalidUpdateVersion, false, true},
		{"NEW_LEADER_ELECTED", kerr.NewLeaderElected, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, change := pendingExpansion(t)
			if resend := p.ISRResult(change, nil, 0, 0, tc.err); resend != tc.resend {
				t.Fatalf("resend = %v, want %v", resend, tc.resend)
			}
			if pending := p.stillPending(change); pending != tc.pending {
				t.Fatalf("still pending = %v, want %v", pending, tc.pending)
			}
			want := []int32{1}
			if tc.pending {
				want = []int32{1, 2}
			}
			if got := p.Snapshot().MaximalISR; !slices.Equal(got, want) {
				t.Fatalf("maximal ISR %v, want %v", got, want)
			}
		})
	}
}

// The manager sends a change whose answer was lost again, after
// isrRetryBackoff on its timer source, and the second answer commits it.
func TestManagerResendsALostISRChange(t *testing.T) {
	var mu sync.Mutex
	calls := 0
	alter := func(_ context.Context, changes []AlterISR) ([]AlterISRResult, error) {
		mu.Lock()
		defer mu.Unlock()
		calls++
		if calls == 1 {
			return nil, errors.New("connection reset")
		}
		out := make([]AlterISRResult, len(changes))
		for i, c := range changes {
			out[i] = AlterISRResult{ISR: c.NewISR, LeaderEpoch: c.LeaderEpoch, PartitionEpoch: c.PartitionEpoch + 1}
		}
		return out, nil
	}
	r := newManagerRig(t, alter)
	p, err := r.m.MakeLeader(rigState(1, 1, 1, 2), storage.DefaultLogConfig(), 1)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return r.timers.waiting() > 0 })
	r.timers.Advance(11 * time.Second) // the shrink of broker 2, which never fetched
	waitFor(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return calls == 1
	})
	waitFor(t, func() bool {
		r.timers.Advance(isrRetryBackoff)
		return slices.Equal(p.Snapshot().ISR, []int32{1})
	})
}

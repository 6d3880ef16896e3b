package replication

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kbroker/kbroker/internal/testsupport"
	"github.com/kbroker/kbroker/storage"
)

// The txn-power-loss chaos scenario (seed 657485018), on two replicas. A
// (broker 2) leads epoch 1 and writes a batch of 8 records that B (broker
// 1) fetches; a power cut takes A's whole unflushed log. A restarts and
// applies the image it replays, which still names it the leader of epoch
// 1, before it registers again; its transaction coordinator then writes a
// marker to the partition. Once registered, A is out of the ISR and B
// leads epoch 2. Had the marker gone in, A's log would hold a batch of
// epoch 1 at offset 0 that B's log has not: A's fetch at offset 1 with
// last fetched epoch 1 is no divergence for B (its epoch 1 ends at 8), B
// answers its batch at base 0, which A's log cannot take
// (storage.ErrInvalidOffset), and A backs off for ever at log end 1, out
// of the ISR. The gate held the marker until A serves, so A catches up.
func TestRestartedLeaderAppendsNothingAtItsReplayedEpoch(t *testing.T) {
	rig := newTwoReplicaRig(t, slog.New(slog.DiscardHandler))
	clock, state, fetcherOf, round := rig.clock, rig.state, rig.fetcherOf, rig.round
	a := memPartition(2, clock, newMemLog(memLogConfig{}))
	b := memPartition(1, clock, newMemLog(memLogConfig{}))

	// Epoch 1: A leads, B fetches A's batch of 8.
	must(t, a.MakeLeader(state(2, 1, 2, 1), 1))
	if _, err := b.MakeFollower(state(2, 1, 2, 1)); err != nil {
		t.Fatal(err)
	}
	if _, err := a.AppendAsLeader(batch(8), 1, storage.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	fb, cb := fetcherOf(1, 2, func() *Partition { return a })
	fb.add(b)
	round(fb, cb)
	if _, leo, _ := b.Offsets(); leo != 8 {
		t.Fatalf("B's LEO %d, want 8", leo)
	}
	fb.remove(b)

	// The power cut: A restarts with an empty log, its leader appends held
	// as a broker's manager holds them, and applies the replayed image.
	gate := NewLeaderAppendGate()
	a = NewPartition("t", 0, newMemLog(memLogConfig{}), PartitionOptions{LocalID: 2, Now: clock.Now, LeaderAppends: gate})
	must(t, a.MakeLeader(state(2, 1, 2, 1), 1))
	// The coordinator's transaction marker.
	if _, err := a.AppendAsLeader(batch(1), 1, storage.AppendOptions{}); !errors.Is(err, kerr.NotLeaderForPartition) {
		t.Errorf("append before the broker serves: %v, want NOT_LEADER_OR_FOLLOWER", err)
	}

	// Registered again: out of the ISR, B leads epoch 2 and takes more.
	must(t, b.MakeLeader(state(1, 2, 1), 1))
	if _, err := b.AppendAsLeader(batch(2), 1, storage.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.MakeFollower(state(1, 2, 1)); err != nil {
		t.Fatal(err)
	}
	gate.Open() // A serves

	fa, ca := fetcherOf(2, 1, func() *Partition { return b })
	fa.add(a)
	for range 10 {
		round(fa, ca)
		clock.Advance(time.Second) // past any backoff
	}
	_, leoA, _ := a.Offsets()
	_, leoB, _ := b.Offsets()
	if leoA != leoB {
		t.Fatalf("A's LEO %d after 10 rounds, B's %d: A is stuck", leoA, leoB)
	}
	if ea, eb := a.log.EpochCache().Entries(), b.log.EpochCache().Entries(); len(ea) != len(eb) || ea[len(ea)-1] != eb[len(eb)-1] {
		t.Fatalf("epochs: A %v, B %v", ea, eb)
	}
}

// A manager that holds leader appends refuses them until it is told the
// broker serves; one that does not never holds them.
func TestManagerHoldsLeaderAppendsUntilOpened(t *testing.T) {
	for _, hold := range []bool{true, false} {
		logs, err := storage.NewManager([]string{t.TempDir()}, storage.ManagerOptions{Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		m := NewManager(ManagerOptions{LocalID: 1, Logs: logs, HoldLeaderAppends: hold})
		p, err := m.MakeLeader(rigState(1, 1, 1), storage.DefaultLogConfig(), 1)
		if err != nil {
			t.Fatal(err)
		}
		_, err = p.AppendAsLeader(batch(1), 1, storage.AppendOptions{})
		if hold && !errors.Is(err, kerr.NotLeaderForPartition) {
			t.Errorf("held: append %v, want NOT_LEADER_OR_FOLLOWER", err)
		}
		if !hold && err != nil {
			t.Errorf("not held: append %v", err)
		}
		m.OpenLeaderAppends()
		if _, err := p.AppendAsLeader(batch(1), 1, storage.AppendOptions{}); err != nil {
			t.Errorf("hold %v: append after OpenLeaderAppends: %v", hold, err)
		}
		m.Close()
		logs.Close()
	}
}

// twoReplicaRig drives replicas 2 and 1 of partition t through a real
// fetcher on a fake clock, one fetch round at a time.
type twoReplicaRig struct {
	t      *testing.T
	clock  *testsupport.Clock
	timers *fakeTimers
	logger *slog.Logger
}

func newTwoReplicaRig(t *testing.T, logger *slog.Logger) *twoReplicaRig {
	clock := testsupport.NewClock(time.Unix(1000, 0))
	return &twoReplicaRig{t: t, clock: clock, timers: &fakeTimers{clock: clock}, logger: logger}
}

// state is the partition's state with leader, epoch and isr.
func (r *twoReplicaRig) state(leader, epoch int32, isr ...int32) PartitionState {
	return PartitionState{Topic: "t", TopicID: rigTopicID, Replicas: []int32{2, 1}, ISR: isr, Leader: leader,
		LeaderEpoch: epoch, PartitionEpoch: epoch}
}

// fetcherOf is local's fetcher from leader, whose partition from returns.
func (r *twoReplicaRig) fetcherOf(local, leader int32, from func() *Partition) (*fetcher, *directClient) {
	c := &directClient{leader: from}
	return newFetcher(fetcherConfig{parent: context.Background(), leader: leader, localID: local,
		opts: FetcherOptions{Backoff: time.Second}, client: c, now: r.clock.Now, after: r.timers.After,
		logger: r.logger, retire: func(*fetcher) bool { return true }}), c
}

// round runs one fetch round of f (none when every partition backs off).
func (r *twoReplicaRig) round(f *fetcher, c *directClient) {
	r.t.Helper()
	rd, ok := f.nextRound()
	if !ok {
		return
	}
	resp, err := c.Fetch(context.Background(), rd.req)
	f.complete(rd, resp, err)
}

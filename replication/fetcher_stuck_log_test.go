package replication

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kbroker/kbroker/storage"
)

// lockedBuffer is a log sink the fetcher and the test share.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) count(s string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Count(b.buf.String(), s)
}

// A follower whose log refuses its leader's batches (the stuck state of the
// txn-power-loss scenario, reached here without the leader append gate)
// retries for ever: that must reach an operator at WARN, once per
// localErrorLogInterval, not only at DEBUG on every retry.
func TestStuckFollowerWarnsOncePerInterval(t *testing.T) {
	var logs lockedBuffer
	rig := newTwoReplicaRig(t, slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn})))
	clock, state, fetcherOf, round := rig.clock, rig.state, rig.fetcherOf, rig.round

	// B holds A's batch of 8 of epoch 1; A comes back empty, still leading
	// epoch 1, and takes one batch no other replica has.
	a := memPartition(2, clock, newMemLog(memLogConfig{}))
	b := memPartition(1, clock, newMemLog(memLogConfig{}))
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
	fb.remove(b)
	a = memPartition(2, clock, newMemLog(memLogConfig{}))
	must(t, a.MakeLeader(state(2, 1, 2, 1), 1))
	if _, err := a.AppendAsLeader(batch(1), 1, storage.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	must(t, b.MakeLeader(state(1, 2, 1), 1))
	if _, err := a.MakeFollower(state(1, 2, 1)); err != nil {
		t.Fatal(err)
	}

	const warning = "replica fetch of partition keeps failing here"
	fa, ca := fetcherOf(2, 1, func() *Partition { return b })
	fa.add(a)
	for range 10 { // 10 s of retries: one warning
		round(fa, ca)
		clock.Advance(time.Second)
	}
	if _, leo, _ := a.Offsets(); leo != 1 {
		t.Fatalf("A's LEO %d: the scenario did not leave A stuck at 1", leo)
	}
	if n := logs.count(warning); n != 1 {
		t.Fatalf("%d warnings in 10 s of retries, want 1:\n%s", n, logs.buf.String())
	}
	clock.Advance(localErrorLogInterval)
	round(fa, ca)
	if n := logs.count(warning); n != 2 {
		t.Fatalf("%d warnings after another %v, want 2", n, localErrorLogInterval)
	}
}

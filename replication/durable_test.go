package replication

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kbroker/kbroker/storage"
	"github.com/kbroker/kbroker/storage/vfs"
)

// gate blocks msyncs of one log dir until opened: a flush in progress.
type gate struct{ open chan struct{} }

func (g *gate) injector(dir string) vfs.Injector {
	return func(op vfs.Op, path string) error {
		if op == vfs.OpMsync && strings.HasPrefix(path, dir) {
			<-g.open
		}
		return nil
	}
}

// durableLog opens t-0 with flush.messages=1 in a Manager of its own over
// a CrashFS, so that a test can hold its flushes.
func durableLog(t *testing.T) (*storage.Log, *vfs.CrashFS, string) {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, "data")
	os.MkdirAll(dir, 0o755)
	cfs, err := vfs.NewCrashFS(root)
	if err != nil {
		t.Fatal(err)
	}
	m, err := storage.NewManager([]string{dir}, storage.ManagerOptions{FS: cfs, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	cfg := storage.DefaultLogConfig()
	cfg.FlushMessages = 1
	l, err := m.Open(storage.TopicPartition{Topic: "t", Partition: 0}, rigTopicID, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return l, cfs, dir
}

func newDurableRig(t *testing.T) (*fetcherRig, *vfs.CrashFS, string, *vfs.CrashFS, string) {
	r := newFetcherRig(t)
	ll, lfs, ldir := durableLog(t)
	fl, ffs, fdir := durableLog(t)
	r.f.remove(r.follower) // the rig's in-memory follower
	r.leader = memPartition(1, r.clock, ll)
	r.follower = memPartition(2, r.clock, fl)
	st := PartitionState{Topic: "t", TopicID: rigTopicID, Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: 1,
		LeaderEpoch: 1, PartitionEpoch: 1}
	must(t, r.leader.MakeLeader(st, 2))
	if _, err := r.follower.MakeFollower(st); err != nil {
		t.Fatal(err)
	}
	r.f.add(r.follower)
	return r, lfs, ldir, ffs, fdir
}

func waitHW(t *testing.T, p *Partition, want int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for p.log.HighWatermark() != want {
		if time.Now().After(deadline) {
			t.Fatalf("HW %d, want %d; %+v durable end %d", p.log.HighWatermark(), want, p.Snapshot(), p.log.DurableEnd())
		}
		time.Sleep(time.Millisecond) // polling a condition with a deadline
	}
}

// Durable acks (issue 19): the HW counts the leader's own copy only once it
// is flushed, even when the follower already has the batch on disk.
func TestDurableHWWaitsForLeaderFlush(t *testing.T) {
	r, lfs, ldir, _, _ := newDurableRig(t)
	g := &gate{open: make(chan struct{})}
	lfs.SetInjector(g.injector(ldir))
	// acks=all: queued for the leader's group commit, held by the gate.
	if _, err := r.leader.AppendAsLeader(batch(3), -1, storage.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	for r.follower.log.DurableEnd() < 3 {
		r.round() // the follower appends offsets 0-2 and flushes them
	}
	r.round() // its fetch at 3 reports them
	if hw := r.leader.log.HighWatermark(); hw != 0 {
		t.Fatalf("HW %d while the leader's copy is not flushed", hw)
	}
	close(g.open)
	waitHW(t, r.leader, 3)
}

// A follower's fetch offset counts only flushed data: its fetcher waits for
// the group commit of what it appended before fetching again.
func TestDurableFollowerReportsFlushedOnly(t *testing.T) {
	r, _, _, ffs, fdir := newDurableRig(t)
	g := &gate{open: make(chan struct{})}
	ffs.SetInjector(g.injector(fdir))
	r.produce(3) // acks=1: flushed on the leader before it returns
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.round() // appends, then waits for its flush before the round ends
	}()
	select {
	case <-done:
		t.Fatal("the fetch round ended before the follower's flush")
	case <-time.After(50 * time.Millisecond): // the round is blocked in the flush
	}
	if hw := r.leader.log.HighWatermark(); hw != 0 {
		t.Fatalf("HW %d before the follower flushed", hw)
	}
	close(g.open)
	<-done
	for r.follower.log.DurableEnd() < 3 {
		r.round()
	}
	r.round()
	waitHW(t, r.leader, 3)
}

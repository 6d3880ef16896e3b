package storage

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kbroker/kbroker/storage/vfs"
)

func durableConfig() LogConfig {
	c := smallConfig()
	c.SegmentBytes = 1 << 20
	c.FlushMessages = 1
	return c
}

// Appends of many partitions at once share group commit rounds: every
// WaitDurable returns with the append on disk, and there are fewer rounds
// than appends.
func TestGroupCommitSharesRounds(t *testing.T) {
	m, _, _, _ := newTestManager(t, []string{t.TempDir()})
	defer m.Close()
	const parts, each = 8, 40
	logs := make([]*Log, parts)
	for i := range logs {
		l, err := m.Open(TopicPartition{Topic: "d", Partition: int32(i)}, [16]byte{1}, durableConfig())
		if err != nil {
			t.Fatal(err)
		}
		logs[i] = l
	}
	var wg sync.WaitGroup
	errs := make(chan error, parts)
	for _, l := range logs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range each {
				info, err := l.AppendAsLeader(leaderBatches(t, spec(2, int64(j)).build(t)), 0, AppendOptions{})
				if err == nil {
					err = l.WaitDurable()
				}
				if err == nil && l.DurableEnd() <= info.LastOffset {
					err = fmt.Errorf("durable end %d after WaitDurable of offset %d", l.DurableEnd(), info.LastOffset)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	st := m.GroupSyncStats()
	if st.Rounds == 0 || st.Rounds >= parts*each {
		t.Fatalf("%d rounds for %d appends: no group commit", st.Rounds, parts*each)
	}
	if st.Syncs <= st.Rounds {
		t.Fatalf("%d log flushes in %d rounds: no round covered several partitions", st.Syncs, st.Rounds)
	}
	t.Logf("%d appends, %d rounds, %d log flushes", parts*each, st.Rounds, st.Syncs)
}

// The leader's flush listener runs after the round that flushed its
// append, with DurableEnd past it.
func TestGroupCommitNotifiesListener(t *testing.T) {
	m, _, _, _ := newTestManager(t, []string{t.TempDir()})
	defer m.Close()
	l, err := m.Open(TopicPartition{Topic: "d", Partition: 0}, [16]byte{1}, durableConfig())
	if err != nil {
		t.Fatal(err)
	}
	flushed := make(chan int64, 16)
	l.SetFlushListener(func() { flushed <- l.DurableEnd() })
	if _, err := l.AppendAsLeader(leaderBatches(t, spec(3, 0).build(t)), 0, AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	if end := <-flushed; end != 3 {
		t.Fatalf("durable end %d at the listener, want 3", end)
	}
}

// crashManager is a Manager of one log dir on a CrashFS (for fault
// injection), closed with the test. opts.FS, Logger and ResourceLimits
// are set here; dir is the log dir.
func crashManager(t *testing.T, opts ManagerOptions) (m *Manager, cfs *vfs.CrashFS, dir string, lb *logBuffer) {
	t.Helper()
	root := t.TempDir()
	dir = filepath.Join(root, "data")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cfs, err := vfs.NewCrashFS(root)
	if err != nil {
		t.Fatal(err)
	}
	opts.FS, opts.ResourceLimits = cfs, unlimitedResources
	opts.Logger, lb = testLogger(t)
	if m, err = NewManager([]string{dir}, opts); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m, cfs, dir, lb
}

// A failed fsync is never retried nor acknowledged: WaitDurable fails, the
// whole log dir goes offline and every log in it refuses writes.
func TestGroupCommitFsyncErrorTakesDirOffline(t *testing.T) {
	m, cfs, _, lb := crashManager(t, ManagerOptions{})
	a, err := m.Open(TopicPartition{Topic: "a", Partition: 0}, [16]byte{1}, durableConfig())
	if err != nil {
		t.Fatal(err)
	}
	b, err := m.Open(TopicPartition{Topic: "b", Partition: 0}, [16]byte{2}, DefaultLogConfig())
	if err != nil {
		t.Fatal(err)
	}
	cfs.SetInjector(func(op vfs.Op, path string) error {
		if op == vfs.OpMsync && filepath.Base(filepath.Dir(path)) == "a-0" {
			return syscall.EIO
		}
		return nil
	})
	if _, err := a.AppendAsLeader(leaderBatches(t, spec(1, 0).build(t)), 0, AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := a.WaitDurable(); !errors.Is(err, ErrLogFailed) {
		t.Fatalf("WaitDurable after EIO: %v, want ErrLogFailed", err)
	}
	if a.DurableEnd() != 0 {
		t.Fatalf("durable end %d after a failed flush", a.DurableEnd())
	}
	cfs.SetInjector(nil)
	if err := a.WaitDurable(); err == nil {
		t.Fatal("a retried flush succeeded after a failed fsync")
	}
	if _, err := b.AppendAsLeader(leaderBatches(t, spec(1, 0).build(t)), 0, AppendOptions{}); !errors.Is(err, ErrLogDirOffline) {
		t.Fatalf("append to another log of the offline dir: %v, want ErrLogDirOffline", err)
	}
	dirs := m.LogDirs()
	if len(dirs) != 1 || !dirs[0].Offline {
		t.Fatalf("log dirs %+v: want the dir offline", dirs)
	}
	waitFor(t, "the offline log line", func() bool { return strings.Contains(lb.String(), "log dir offline") })
}

// Any failed flush takes the log dir offline, not only a group commit's: a
// flush.ms flush by the background loop too. The owner is told once
// (OnLogDirFailure), so that the broker can stop and let its partitions
// move.
func TestFailedFlushTellsOwnerOnce(t *testing.T) {
	type failure struct {
		dir string
		err error
	}
	failures := make(chan failure, 4)
	m, cfs, dir, _ := crashManager(t, ManagerOptions{OnLogDirFailure: func(d string, err error) { failures <- failure{d, err} }})
	cfg := DefaultLogConfig()
	cfg.FlushMs = 1
	l, err := m.Open(TopicPartition{Topic: "a", Partition: 0}, [16]byte{1}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	other, err := m.Open(TopicPartition{Topic: "b", Partition: 0}, [16]byte{2}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i, lg := range []*Log{l, other, l, other} {
		if i == 2 { // the epochs are checkpointed: only the data is left to sync
			cfs.SetInjector(func(op vfs.Op, path string) error {
				if op.IsSync() {
					return syscall.EIO
				}
				return nil
			})
		}
		if _, err := lg.AppendAsLeader(leaderBatches(t, spec(1, int64(i/2)).build(t)), 0, AppendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	m.flushPass(time.Now().Add(time.Hour))
	select {
	case f := <-failures:
		if f.dir != dir || !errors.Is(f.err, syscall.EIO) {
			t.Fatalf("OnLogDirFailure(%q, %v)", f.dir, f.err)
		}
	default:
		t.Fatal("OnLogDirFailure not called")
	}
	if len(failures) != 0 {
		t.Fatalf("OnLogDirFailure called %d more times", len(failures))
	}
	if dirs := m.LogDirs(); !dirs[0].Offline {
		t.Fatalf("log dirs %+v: want the dir offline", dirs)
	}
}

// A checkpoint that cannot be written (EIO) takes its dir offline too, as
// any I/O error does in Kafka.
func TestFailedCheckpointTakesDirOffline(t *testing.T) {
	failed := make(chan string, 4)
	m, cfs, dir, _ := crashManager(t, ManagerOptions{OnLogDirFailure: func(d string, err error) { failed <- d }})
	if _, err := m.Open(TopicPartition{Topic: "a", Partition: 0}, [16]byte{1}, DefaultLogConfig()); err != nil {
		t.Fatal(err)
	}
	cfs.SetInjector(func(op vfs.Op, path string) error {
		if op == vfs.OpSync && strings.Contains(path, "checkpoint") {
			return syscall.EIO
		}
		return nil
	})
	if err := m.WriteCheckpoints(); err == nil {
		t.Fatal("checkpoints written despite EIO")
	}
	select {
	case d := <-failed:
		if d != dir {
			t.Fatalf("OnLogDirFailure(%q)", d)
		}
	default:
		t.Fatal("the dir did not go offline")
	}
	if !m.LogDirs()[0].Offline {
		t.Fatal("LogDirs does not report the dir offline")
	}
}

// A durable log reopened after an unclean shutdown, its recovery point
// below the recovered log end, flushes the recovered tail at once: a
// durable leader counts only DurableEnd for the high watermark, so a tail
// left unflushed would hold the HW (and every acks=all answer and
// consumer) until the next append. Likewise a log that becomes durable by
// a config change.
func TestDurableLogFlushesRecoveredTail(t *testing.T) {
	e := newTestEnv(t)
	l := e.open(smallConfig(), LogState{})
	appendN(t, l, 5, 2, 1000)
	leo := l.LogEndOffset()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// Unclean: the checkpointed recovery point says nothing was flushed.
	l = e.open(durableConfig(), LogState{RecoveryPoint: 0, CleanShutdown: false})
	defer l.Close()
	if l.LogEndOffset() != leo || l.DurableEnd() != leo {
		t.Fatalf("reopened durable log: log end %d, durable end %d, want both %d", l.LogEndOffset(), l.DurableEnd(), leo)
	}

	cfg := smallConfig()
	if err := l.UpdateConfig(cfg); err != nil {
		t.Fatal(err)
	}
	appendN(t, l, 3, 2, 2000)
	if l.DurableEnd() >= l.LogEndOffset() {
		t.Skip("the default flush policy flushed the appends already") // not the case this test is about
	}
	if err := l.UpdateConfig(durableConfig()); err != nil {
		t.Fatal(err)
	}
	if l.DurableEnd() != l.LogEndOffset() {
		t.Fatalf("after becoming durable: durable end %d, log end %d", l.DurableEnd(), l.LogEndOffset())
	}
}

package storage

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kbroker/kbroker/internal/testsupport"
)

type fakeTickers struct {
	chans map[time.Duration]chan time.Time
}

func (f *fakeTickers) newTicker(d time.Duration) (<-chan time.Time, func()) {
	c := make(chan time.Time)
	f.chans[d] = c
	return c, func() {}
}

func newTestManager(t *testing.T, dirs []string) (*Manager, *testsupport.Clock, *logBuffer, *fakeTickers) {
	t.Helper()
	logger, lb := testLogger(t)
	clock := newFakeClock()
	ft := &fakeTickers{chans: map[time.Duration]chan time.Time{}}
	m, err := NewManager(dirs, ManagerOptions{
		Logger: logger, Now: clock.Now, FlushCheckInterval: time.Second,
		RetentionCheckInterval: time.Minute, CheckpointInterval: time.Hour, newTicker: ft.newTicker,
	})
	if err != nil {
		t.Fatal(err)
	}
	return m, clock, lb, ft
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond) // polling a condition with a deadline
	}
}

func TestManagerOpenPlacementAndMetadata(t *testing.T) {
	root := t.TempDir()
	dirs := []string{filepath.Join(root, "a"), filepath.Join(root, "b")}
	// The controller's Raft store and other non-partition dirs are ignored.
	meta := filepath.Join(dirs[0], "__cluster_metadata-0")
	os.MkdirAll(meta, 0o755)
	os.WriteFile(filepath.Join(meta, "00000000000000000000.log"), []byte("raft"), 0o644)
	os.MkdirAll(filepath.Join(dirs[1], "not-a-partition-x"), 0o755)

	m, _, _, _ := newTestManager(t, dirs)
	if od := m.OnDisk(); len(od) != 0 {
		t.Fatalf("found %+v", od)
	}
	id := [16]byte{0xe3, 0x18, 0xd1, 0x06, 0xc6, 0x11, 0x4b, 0x8c, 0x97, 0xb7, 0x5c, 0xe8, 0xe2, 0xac, 0x8c, 0x24}
	count := map[string]int{}
	for p := int32(0); p < 4; p++ {
		l, err := m.Open(TopicPartition{"orders", p}, id, smallConfig())
		if err != nil {
			t.Fatal(err)
		}
		count[filepath.Dir(l.Dir())]++
		if filepath.Base(l.Dir()) != "orders-"+string(rune('0'+p)) {
			t.Fatalf("dir %s", l.Dir())
		}
	}
	if count[dirs[0]] != 2 || count[dirs[1]] != 2 {
		t.Fatalf("placement %v", count)
	}
	l, ok := m.Get(TopicPartition{"orders", 1})
	if !ok || len(m.All()) != 4 {
		t.Fatal("Get/All")
	}
	data, _ := os.ReadFile(filepath.Join(l.Dir(), PartitionMetadataFile))
	if string(data) != "version: 0\ntopic_id: 4xjRBsYRS4yXt1zo4qyMJA\n" {
		t.Fatalf("partition.metadata %q", data)
	}
	again, err := m.Open(TopicPartition{"orders", 1}, id, smallConfig())
	if err != nil || again != l {
		t.Fatal("reopening an open log must return it")
	}
	if _, err := m.Open(TopicPartition{"orders", 1}, [16]byte{1}, smallConfig()); !errors.Is(err, ErrInconsistentTopicID) {
		t.Fatalf("topic id mismatch: %v", err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(meta, "00000000000000000000.log")); err != nil {
		t.Fatal("touched __cluster_metadata-0")
	}
}

func TestManagerRestartCheckpointsAndCleanShutdown(t *testing.T) {
	root := t.TempDir()
	m, _, _, _ := newTestManager(t, []string{root})
	tp := TopicPartition{"events", 3}
	id := [16]byte{9, 9}
	l, _ := m.Open(tp, id, smallConfig())
	appendN(t, l, 200, 2, 0)
	l.SetHighWatermark(300)
	if err := l.SetLogStartOffset(150); err != nil {
		t.Fatal(err)
	}
	idle, _ := m.Open(TopicPartition{"idle", 0}, [16]byte{}, smallConfig())
	appendN(t, idle, 3, 1, 0)
	idle.SetHighWatermark(3)
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		RecoveryPointCheckpointFile:  "0\n2\nevents 3 400\nidle 0 3\n",
		ReplicationCheckpointFile:    "0\n2\nevents 3 300\nidle 0 3\n",
		LogStartOffsetCheckpointFile: "0\n2\nevents 3 150\nidle 0 0\n",
	} {
		data, _ := os.ReadFile(filepath.Join(root, name))
		if string(data) != want {
			t.Errorf("%s = %q, want %q", name, data, want)
		}
	}
	if _, err := os.Stat(filepath.Join(root, CleanShutdownFile)); err != nil {
		t.Fatal("no clean shutdown marker")
	}

	m2, _, lb, _ := newTestManager(t, []string{root})
	if _, err := os.Stat(filepath.Join(root, CleanShutdownFile)); !os.IsNotExist(err) {
		t.Fatal("marker not removed on open")
	}
	od := m2.OnDisk()
	if len(od) != 2 || od[0].TopicPartition != tp || od[0].TopicID != id {
		t.Fatalf("OnDisk %+v", od)
	}
	if got, ok := m2.TopicID(tp); !ok || got != id {
		t.Fatal("TopicID")
	}
	// Writing checkpoints before the logs are opened keeps their values.
	if err := m2.WriteCheckpoints(); err != nil {
		t.Fatal(err)
	}
	l2, err := m2.Open(tp, id, smallConfig())
	if err != nil {
		t.Fatal(err)
	}
	if l2.LogEndOffset() != 400 || l2.HighWatermark() != 300 || l2.LogStartOffset() != 150 || l2.RecoveryPoint() != 400 {
		t.Fatalf("LEO %d HW %d LSO %d RP %d", l2.LogEndOffset(), l2.HighWatermark(), l2.LogStartOffset(), l2.RecoveryPoint())
	}
	if !strings.Contains(lb.String(), "recovered_segments=0") {
		t.Fatalf("clean restart recovered segments: %s", lb)
	}
	m2.Close()
}

func TestManagerTruncatedCheckpointFallsBackToFullRecovery(t *testing.T) {
	root := t.TempDir()
	m, _, _, _ := newTestManager(t, []string{root})
	tp := TopicPartition{"t", 0}
	l, _ := m.Open(tp, [16]byte{}, smallConfig())
	appendN(t, l, 200, 2, 0)
	m.Close()
	path := filepath.Join(root, RecoveryPointCheckpointFile)
	data, _ := os.ReadFile(path)
	os.WriteFile(path, data[:len(data)-3], 0o644)

	m2, _, lb, _ := newTestManager(t, []string{root})
	defer m2.Close()
	l2, err := m2.Open(tp, [16]byte{}, smallConfig())
	if err != nil {
		t.Fatal(err)
	}
	logs := lb.String()
	if !strings.Contains(logs, "unreadable checkpoint file") || !strings.Contains(logs, "fully recovered") {
		t.Fatalf("log: %s", logs)
	}
	if strings.Contains(logs, "recovered_segments=0") || l2.LogEndOffset() != 400 {
		t.Fatalf("no full recovery: LEO %d, %s", l2.LogEndOffset(), logs)
	}
}

func TestManagerDelete(t *testing.T) {
	root := t.TempDir()
	m, _, _, _ := newTestManager(t, []string{root})
	tp := TopicPartition{"gone", 0}
	l, _ := m.Open(tp, [16]byte{}, smallConfig())
	appendN(t, l, 5, 1, 0)
	dir := l.Dir()
	if err := m.Delete(tp); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatal("dir remains")
	}
	if _, ok := m.Get(tp); ok {
		t.Fatal("still open")
	}
	ents, _ := os.ReadDir(root)
	for _, e := range ents {
		if strings.Contains(e.Name(), "gone") {
			t.Fatalf("left %s", e.Name())
		}
	}
	// Recreated from offset 0 (KAFKA-PITFALLS: same name starts at 0).
	l2, _ := m.Open(tp, [16]byte{}, smallConfig())
	if l2.LogEndOffset() != 0 {
		t.Fatalf("recreated at %d", l2.LogEndOffset())
	}
	if err := m.Delete(TopicPartition{"never", 1}); err != nil {
		t.Fatal(err)
	}
	m.Close()
	// A tombstone left by a crash mid-delete is cleaned at startup.
	os.MkdirAll(filepath.Join(root, "x-0.abcd-delete"), 0o755)
	m3, _, _, _ := newTestManager(t, []string{root})
	defer m3.Close()
	if _, err := os.Stat(filepath.Join(root, "x-0.abcd-delete")); !os.IsNotExist(err) {
		t.Fatal("tombstone not removed")
	}
}

func TestManagerBackgroundLoop(t *testing.T) {
	root := t.TempDir()
	m, clock, _, ft := newTestManager(t, []string{root})
	cfg := smallConfig()
	cfg.FlushMs = 1000
	cfg.RetentionMs = 3_600_000
	l, _ := m.Open(TopicPartition{"t", 0}, [16]byte{}, cfg)
	now := clock.Now().UnixMilli()
	for i := 0; i < 200; i++ {
		l.AppendAsLeader(leaderBatches(t, spec(2, now).build(t)), 0, AppendOptions{})
	}
	l.SetHighWatermark(l.LogEndOffset())
	m.Run(t.Context())
	flush, retention, checkpoint := ft.chans[time.Second], ft.chans[time.Minute], ft.chans[time.Hour]

	// Rolled segments are flushed by the next check; the active one when
	// flush.ms has passed.
	flush <- clock.Now()
	waitFor(t, "roll flush", func() bool { return l.RecoveryPoint() >= l.segmentList()[l.NumSegments()-1].baseOffset })
	appendN(t, l, 1, 1, now) // no roll
	flush <- clock.Now()
	flush <- clock.Now() // the loop handles ticks in order: the first is done
	if l.RecoveryPoint() == l.LogEndOffset() {
		t.Fatal("flushed before flush.ms")
	}
	clock.Advance(time.Second)
	flush <- clock.Now()
	waitFor(t, "flush.ms", func() bool { return l.RecoveryPoint() == l.LogEndOffset() })

	clock.Advance(2 * time.Hour)
	retention <- clock.Now()
	waitFor(t, "retention", func() bool { return l.NumSegments() == 1 })

	checkpoint <- clock.Now()
	waitFor(t, "checkpoint", func() bool {
		data, _ := os.ReadFile(filepath.Join(root, LogStartOffsetCheckpointFile))
		return strings.Contains(string(data), "t 0 "+itoa(l.LogStartOffset()))
	})
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

func TestParsePartitionDirName(t *testing.T) {
	good := map[string]TopicPartition{"a-0": {"a", 0}, "my-topic-12": {"my-topic", 12}, "x.y_z-3": {"x.y_z", 3}}
	for name, want := range good {
		if got, ok := parsePartitionDirName(name); !ok || got != want {
			t.Errorf("%s -> %+v %v", name, got, ok)
		}
	}
	for _, name := range []string{"__cluster_metadata-0", "a", "a-", "-1", "a-01", "a-b", "t-0.123-delete", "a b-1", "a-1-future"} {
		if _, ok := parsePartitionDirName(name); ok {
			t.Errorf("%s parsed", name)
		}
	}
}

// A log dir that was not shut down cleanly stays "unclean" until every one
// of its logs was opened (recovered): closing the manager earlier must not
// write the marker.
func TestManagerNoCleanMarkerWithUnrecoveredLogs(t *testing.T) {
	root := t.TempDir()
	m, _, _, _ := newTestManager(t, []string{root})
	l, _ := m.Open(TopicPartition{"a", 0}, [16]byte{}, smallConfig())
	appendN(t, l, 3, 1, 0)
	m.Open(TopicPartition{"b", 0}, [16]byte{}, smallConfig())
	m.Close()
	os.Remove(filepath.Join(root, CleanShutdownFile)) // as after a crash

	m2, _, _, _ := newTestManager(t, []string{root})
	m2.Open(TopicPartition{"a", 0}, [16]byte{}, smallConfig())
	m2.Close()
	if _, err := os.Stat(filepath.Join(root, CleanShutdownFile)); !os.IsNotExist(err) {
		t.Fatal("clean marker written although b-0 was never recovered")
	}
	m3, _, _, _ := newTestManager(t, []string{root})
	m3.Open(TopicPartition{"a", 0}, [16]byte{}, smallConfig())
	m3.Open(TopicPartition{"b", 0}, [16]byte{}, smallConfig())
	m3.Close()
	if _, err := os.Stat(filepath.Join(root, CleanShutdownFile)); err != nil {
		t.Fatal("no marker after every log was opened")
	}
}

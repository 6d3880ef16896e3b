package storage

import (
	"errors"
	"math"
	"os"
	"strings"
	"testing"
	"time"
)

func TestRetentionByTime(t *testing.T) {
	e := newTestEnv(t)
	cfg := smallConfig()
	cfg.RetentionMs = int64(time.Hour / time.Millisecond)
	l := e.open(cfg, LogState{})
	defer l.Close()
	now := e.clock.Now().UnixMilli()
	// Old records (2h ago), then fresh ones; both span several segments.
	for i := 0; i < 100; i++ {
		l.AppendAsLeader(leaderBatches(t, spec(2, now-2*3600_000).build(t)), 0, AppendOptions{})
	}
	oldEnd := l.LogEndOffset()
	for i := 0; i < 100; i++ {
		l.AppendAsLeader(leaderBatches(t, spec(2, now).build(t)), 0, AppendOptions{})
	}
	l.SetHighWatermark(l.LogEndOffset())
	before := l.Segments()
	n, err := l.DeleteOldSegments(e.clock.Now())
	if err != nil || n == 0 {
		t.Fatalf("deleted %d: %v", n, err)
	}
	after := l.Segments()
	for _, s := range before[:n] {
		if s.MaxTimestamp >= now-3600_000 {
			t.Fatalf("deleted a fresh segment %+v", s)
		}
		if _, err := os.Stat(segmentFileName(e.dir, s.BaseOffset, logSuffix)); !os.IsNotExist(err) {
			t.Fatalf("file of deleted segment %d remains", s.BaseOffset)
		}
	}
	if after[0].BaseOffset > oldEnd || l.LogStartOffset() != after[0].BaseOffset {
		t.Fatalf("deleted fresh data: first %d, old end %d, LSO %d", after[0].BaseOffset, oldEnd, l.LogStartOffset())
	}
	if _, err := l.Read(0, 100, math.MaxInt64, true); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read below log start: %v", err)
	}
	if !strings.Contains(e.logs.String(), "reason=retention.ms") {
		t.Fatal("deletion not logged")
	}
	// The segment holding only old data that is still there is the one
	// straddling into fresh data (Kafka stops at the first keeper).
	if n2, _ := l.DeleteOldSegments(e.clock.Now()); n2 != 0 {
		t.Fatalf("second pass deleted %d", n2)
	}
}

func TestRetentionBySizeAndHighWatermarkGuard(t *testing.T) {
	e := newTestEnv(t)
	cfg := smallConfig()
	cfg.RetentionMs = -1
	cfg.RetentionBytes = 8192
	l := e.open(cfg, LogState{})
	defer l.Close()
	appendN(t, l, 300, 2, 0)
	segs := l.Segments()
	if len(segs) < 6 {
		t.Fatalf("segments %d", len(segs))
	}
	// HW inside the second segment: only the first may go.
	l.SetHighWatermark(segs[1].BaseOffset + 1)
	if n, _ := l.DeleteOldSegments(e.clock.Now()); n != 1 {
		t.Fatalf("HW guard: deleted %d", n)
	}
	// HW at the start of the third segment: the second (ending at HW) may go now.
	l.SetHighWatermark(segs[2].BaseOffset)
	if n, _ := l.DeleteOldSegments(e.clock.Now()); n != 1 {
		t.Fatalf("deleted %d", n)
	}
	l.SetHighWatermark(l.LogEndOffset())
	n, _ := l.DeleteOldSegments(e.clock.Now())
	if l.Size() < cfg.RetentionBytes || l.Size()-l.Segments()[0].Size >= cfg.RetentionBytes {
		t.Fatalf("size %d after deleting %d (limit %d)", l.Size(), n, cfg.RetentionBytes)
	}
	// Never the active segment, even with retention.bytes tiny.
	l.UpdateConfig(func() LogConfig { c := cfg; c.RetentionBytes = 1; return c }())
	l.DeleteOldSegments(e.clock.Now())
	if l.NumSegments() != 1 || l.Segments()[0].BaseOffset != segs[len(segs)-1].BaseOffset {
		t.Fatalf("segments %+v", l.Segments())
	}
	checkContiguous(t, readAll(t, l, l.LogStartOffset(), math.MaxInt64), l.LogStartOffset(), 600)
}

func TestRetentionSkipsCompactedLogs(t *testing.T) {
	e := newTestEnv(t)
	cfg := smallConfig()
	cfg.RetentionBytes = 1
	cfg.Compact = true
	l := e.open(cfg, LogState{})
	defer l.Close()
	appendN(t, l, 200, 2, 0)
	l.SetHighWatermark(l.LogEndOffset())
	if n, _ := l.DeleteOldSegments(e.clock.Now()); n != 0 {
		t.Fatalf("compact policy deleted %d", n)
	}
	cfg.CompactDelete = true
	l.UpdateConfig(cfg)
	if n, _ := l.DeleteOldSegments(e.clock.Now()); n == 0 {
		t.Fatal("compact,delete did not delete")
	}
}

// DeleteRecords (KIP-107).
func TestSetLogStartOffset(t *testing.T) {
	e := newTestEnv(t)
	l := e.open(smallConfig(), LogState{})
	defer l.Close()
	appendN(t, l, 200, 2, 0)
	segs := l.Segments()
	if err := l.SetLogStartOffset(10); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("beyond HW: %v", err)
	}
	l.SetHighWatermark(400)
	target := segs[2].BaseOffset + 3
	if err := l.SetLogStartOffset(target); err != nil {
		t.Fatal(err)
	}
	if l.LogStartOffset() != target || l.Segments()[0].BaseOffset != segs[2].BaseOffset {
		t.Fatalf("LSO %d, first segment %d", l.LogStartOffset(), l.Segments()[0].BaseOffset)
	}
	if _, err := l.Read(target-1, 100, math.MaxInt64, true); !errors.Is(err, ErrOffsetOutOfRange) {
		t.Fatalf("read below: %v", err)
	}
	res, err := l.Read(target, 100, math.MaxInt64, true)
	if err != nil || res.FirstOffset > target || res.NextOffset <= target {
		t.Fatalf("read at LSO: %+v %v", res, err)
	}
	res.Release()
	if err := l.SetLogStartOffset(5); err != nil || l.LogStartOffset() != target {
		t.Fatal("moved backwards")
	}
	// Survives a reopen through the state the manager checkpoints.
	l.Close()
	l2 := e.open(smallConfig(), LogState{LogStartOffset: target, CleanShutdown: true, RecoveryPoint: 400, HighWatermark: 400})
	defer l2.Close()
	if l2.LogStartOffset() != target || l2.HighWatermark() != 400 {
		t.Fatalf("reopened LSO %d HW %d", l2.LogStartOffset(), l2.HighWatermark())
	}
}

// A mapped slice handed out by Read stays valid while retention deletes
// its segment; the unmap happens at Release.
func TestReadSliceSurvivesRetention(t *testing.T) {
	e := newTestEnv(t)
	cfg := smallConfig()
	cfg.RetentionBytes = 1
	l := e.open(cfg, LogState{})
	defer l.Close()
	appendN(t, l, 200, 2, 0)
	l.SetHighWatermark(l.LogEndOffset())
	res, err := l.Read(0, 1<<20, math.MaxInt64, true)
	if err != nil {
		t.Fatal(err)
	}
	want := append([]byte(nil), res.Data...)
	seg := l.segmentList()[0]
	if n, _ := l.DeleteOldSegments(e.clock.Now()); n == 0 {
		t.Fatal("nothing deleted")
	}
	if _, err := os.Stat(seg.logPath()); !os.IsNotExist(err) {
		t.Fatal("file not unlinked")
	}
	seg.mu.Lock()
	mapped := seg.data != nil
	seg.mu.Unlock()
	if !mapped {
		t.Fatal("segment unmapped while a reader holds it")
	}
	if string(res.Data) != string(want) { // touching unmapped memory would fault here
		t.Fatal("data changed under the reader")
	}
	res.Release()
	seg.mu.Lock()
	mapped = seg.data != nil
	seg.mu.Unlock()
	if mapped {
		t.Fatal("retired segment still mapped after the last release")
	}
}

func TestMappedSegmentsAreBounded(t *testing.T) {
	e := newTestEnv(t)
	e.opts.MaxMappedSegments = 2
	l := e.open(smallConfig(), LogState{})
	appendN(t, l, 400, 2, 0)
	l.Close()
	l = e.open(smallConfig(), LogState{CleanShutdown: true})
	defer l.Close()
	checkContiguous(t, readAll(t, l, 0, math.MaxInt64), 0, 800)
	mapped := 0
	for _, s := range l.segmentList()[:l.NumSegments()-1] {
		s.mu.Lock()
		if s.mapped {
			mapped++
		}
		s.mu.Unlock()
	}
	if mapped > 2 {
		t.Fatalf("%d inactive segments mapped", mapped)
	}
}

package storage

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kbroker/kbroker/record"
)

func TestAppendReadAcrossSizeRolls(t *testing.T) {
	e := newTestEnv(t)
	l := e.open(smallConfig(), LogState{})
	defer l.Close()
	infos := appendN(t, l, 100, 3, 1000)
	for i, info := range infos {
		if info.FirstOffset != int64(i*3) || info.LastOffset != int64(i*3+2) || info.NumRecords != 3 || info.LogAppendTime != -1 {
			t.Fatalf("append %d: %+v", i, info)
		}
	}
	if l.LogEndOffset() != 300 {
		t.Fatalf("LEO %d", l.LogEndOffset())
	}
	if l.NumSegments() < 3 {
		t.Fatalf("expected rolls by segment.bytes, got %d segments", l.NumSegments())
	}
	for _, si := range l.Segments() {
		if si.Size > 4096 {
			t.Fatalf("segment %d has %d bytes > segment.bytes", si.BaseOffset, si.Size)
		}
		// Kafka file naming.
		if _, err := os.Stat(segmentFileName(l.Dir(), si.BaseOffset, logSuffix)); err != nil {
			t.Fatal(err)
		}
	}
	checkContiguous(t, readAll(t, l, 0, math.MaxInt64), 0, 300)
	// Every offset, also mid-batch, finds its batch.
	for off := int64(0); off < 300; off++ {
		res, err := l.Read(off, 1, math.MaxInt64, true)
		if err != nil {
			t.Fatal(err)
		}
		h, _ := record.ParseBatchHeader(res.Data)
		if h.BaseOffset > off || h.LastOffset() < off || res.FirstOffset != h.BaseOffset || res.NextOffset != h.NextOffset() {
			t.Fatalf("offset %d read batch %d-%d (%+v)", off, h.BaseOffset, h.LastOffset(), res)
		}
		res.Release()
	}
}

func TestRollBySegmentMs(t *testing.T) {
	e := newTestEnv(t)
	cfg := smallConfig()
	cfg.SegmentMs = time.Hour
	l := e.open(cfg, LogState{})
	defer l.Close()
	appendN(t, l, 2, 1, 0)
	e.clock.Advance(time.Hour) // not more than segment.ms yet
	appendN(t, l, 1, 1, 0)
	if l.NumSegments() != 1 {
		t.Fatalf("rolled too early: %d segments", l.NumSegments())
	}
	e.clock.Advance(time.Millisecond)
	appendN(t, l, 1, 1, 0)
	if l.NumSegments() != 2 || l.Segments()[1].BaseOffset != 3 {
		t.Fatalf("segments %+v", l.Segments())
	}
	// The new segment's clock starts at its first append.
	e.clock.Advance(30 * time.Minute)
	appendN(t, l, 1, 1, 0)
	if l.NumSegments() != 2 {
		t.Fatalf("rolled again: %+v", l.Segments())
	}
}

func TestRollWhenIndexFull(t *testing.T) {
	e := newTestEnv(t)
	cfg := smallConfig()
	cfg.SegmentBytes = 1 << 20
	cfg.IndexIntervalBytes = 1 // an index entry for every batch after the first
	cfg.MaxIndexBytes = 48     // 6 offset entries, 4 time entries
	l := e.open(cfg, LogState{})
	defer l.Close()
	appendN(t, l, 20, 1, 0)
	if l.NumSegments() < 3 {
		t.Fatalf("index full should roll: %d segments", l.NumSegments())
	}
	checkContiguous(t, readAll(t, l, 0, math.MaxInt64), 0, 20)
	for _, s := range l.segmentList() {
		if s.index.count.Load() > s.index.maxEntries() || s.timeIndex.count.Load() > s.timeIndex.maxEntries() {
			t.Fatal("index overflow")
		}
	}
}

func TestRelativeOffsetOverflowRolls(t *testing.T) {
	e := newTestEnv(t)
	cfg := smallConfig()
	cfg.Compact = true // followers of compacted logs may skip offsets
	l := e.open(cfg, LogState{})
	defer l.Close()
	b := spec(1, 0).build(t)
	if _, err := l.AppendAsFollower(b); err != nil {
		t.Fatal(err)
	}
	s := spec(1, 0)
	s.baseOffset = 1 << 32
	if _, err := l.AppendAsFollower(s.build(t)); err != nil {
		t.Fatal(err)
	}
	segs := l.Segments()
	if len(segs) != 2 || segs[1].BaseOffset != 1<<32 {
		t.Fatalf("segments %+v", segs)
	}
	hs := readAll(t, l, 1, math.MaxInt64)
	if len(hs) != 1 || hs[0].BaseOffset != 1<<32 {
		t.Fatalf("read across gap: %+v", hs)
	}
}

func TestReadRules(t *testing.T) {
	e := newTestEnv(t)
	l := e.open(smallConfig(), LogState{})
	defer l.Close()
	appendN(t, l, 5, 4, 0) // batches [0-3] [4-7] [8-11] [12-15] [16-19]
	batchSize := int32(len(spec(4, 0).build(t)))

	t.Run("mid-batch offset returns the whole batch", func(t *testing.T) {
		res, err := l.Read(6, 1<<20, math.MaxInt64, false)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Release()
		h, _ := record.ParseBatchHeader(res.Data)
		if h.BaseOffset != 4 || res.FirstOffset != 4 || res.NextOffset != 20 {
			t.Fatalf("got batch %d, result %+v", h.BaseOffset, res)
		}
	})
	t.Run("maxOffset excludes straddling batch", func(t *testing.T) {
		res, _ := l.Read(0, 1<<20, 10, false) // HW inside batch [8-11]
		defer res.Release()
		if res.NextOffset != 8 || len(res.Data) != int(2*batchSize) {
			t.Fatalf("%+v len %d", res, len(res.Data))
		}
		res2, _ := l.Read(8, 1<<20, 10, true)
		if len(res2.Data) != 0 || res2.NextOffset != 8 {
			t.Fatalf("batch ending after maxOffset returned: %+v", res2)
		}
		res2.Release()
		res3, _ := l.Read(0, 1<<20, 12, false) // batch ending exactly below maxOffset
		if res3.NextOffset != 12 {
			t.Fatalf("%+v", res3)
		}
		res3.Release()
	})
	t.Run("maxBytes and minOneBatch", func(t *testing.T) {
		res, _ := l.Read(0, batchSize*2+1, math.MaxInt64, false)
		if len(res.Data) != int(batchSize*2) {
			t.Fatalf("len %d", len(res.Data))
		}
		res.Release()
		res, _ = l.Read(0, 10, math.MaxInt64, false)
		if len(res.Data) != 0 {
			t.Fatalf("without minOneBatch got %d bytes", len(res.Data))
		}
		res.Release()
		res, _ = l.Read(0, 10, math.MaxInt64, true)
		if len(res.Data) != int(batchSize) {
			t.Fatalf("KIP-74: first batch must be returned whole, got %d bytes", len(res.Data))
		}
		res.Release()
		res.Release() // idempotent
	})
	t.Run("log end and maxOffset give empty results", func(t *testing.T) {
		for _, c := range []struct{ off, max int64 }{{20, math.MaxInt64}, {8, 8}, {12, 5}} {
			res, err := l.Read(c.off, 1<<20, c.max, true)
			if err != nil || len(res.Data) != 0 || res.NextOffset != c.off {
				t.Fatalf("read(%d, max %d): %+v %v", c.off, c.max, res, err)
			}
		}
	})
	t.Run("out of range", func(t *testing.T) {
		for _, off := range []int64{-1, 21} {
			if _, err := l.Read(off, 1<<20, math.MaxInt64, true); !errors.Is(err, ErrOffsetOutOfRange) {
				t.Fatalf("read(%d): %v", off, err)
			}
		}
	})
}

func TestAppendValidation(t *testing.T) {
	e := newTestEnv(t)
	l := e.open(smallConfig(), LogState{})
	defer l.Close()
	// Corrupt, torn and multi-batch produce input is refused before it
	// reaches the log, by record.ParseProduce (record.TestParseProduce); a
	// leader append of nothing is refused here.
	if _, err := l.AppendAsLeader(nil, 0, AppendOptions{}); !errors.Is(err, record.ErrCorruptBatch) {
		t.Fatalf("empty input: %v", err)
	}
	if _, err := l.AppendAsLeader(make([]record.Batch, 1), 0, AppendOptions{}); !errors.Is(err, record.ErrCorruptBatch) {
		t.Fatalf("zero Batch: %v", err)
	}
	if l.LogEndOffset() != 0 || l.Size() != 0 {
		t.Fatalf("something was written: LEO %d size %d", l.LogEndOffset(), l.Size())
	}
	big := batchOfSize(t, 5000, 0)
	if _, err := l.AppendAsLeader(leaderBatches(t, big), 0, AppendOptions{}); !errors.Is(err, ErrRecordBatchTooLarge) {
		t.Fatalf("batch larger than segment.bytes: %v", err)
	}
}

func TestAppendAssignsOffsetsEpochAndLogAppendTime(t *testing.T) {
	e := newTestEnv(t)
	l := e.open(smallConfig(), LogState{})
	defer l.Close()
	appendN(t, l, 1, 2, 0)
	buf := append(spec(2, 50).build(t), spec(3, 40).build(t)...)
	info, err := l.AppendAsLeader(leaderBatches(t, buf), 7, AppendOptions{LogAppendTime: true, Now: time.UnixMilli(777)})
	if err != nil {
		t.Fatal(err)
	}
	if info.FirstOffset != 2 || info.LastOffset != 6 || info.LogAppendTime != 777 || info.MaxTimestamp != 777 || info.NumRecords != 5 || info.Bytes != int64(len(buf)) {
		t.Fatalf("info %+v", info)
	}
	hs := readAll(t, l, 2, math.MaxInt64)
	if len(hs) != 2 || hs[0].BaseOffset != 2 || hs[1].BaseOffset != 4 {
		t.Fatalf("headers %+v", hs)
	}
	for _, h := range hs {
		if h.PartitionLeaderEpoch != 7 || h.TimestampType() != record.LogAppendTime || h.MaxTimestamp != 777 {
			t.Fatalf("header %+v", h)
		}
	}
	if got := l.EpochCache().Entries(); len(got) != 2 || got[1] != (EpochEntry{Epoch: 7, StartOffset: 2}) {
		t.Fatalf("epochs %+v", got)
	}
	// CreateTime: max timestamp and its (shallow) offset.
	info, _ = l.AppendAsLeader(leaderBatches(t, append(spec(2, 900).build(t), spec(2, 100).build(t)...)), 7, AppendOptions{})
	if info.MaxTimestamp != 901 || info.OffsetOfMaxTimestamp != 8 || info.LogAppendTime != -1 {
		t.Fatalf("info %+v", info)
	}
}

func TestAppendAsFollower(t *testing.T) {
	e := newTestEnv(t)
	l := e.open(smallConfig(), LogState{})
	defer l.Close()
	mk := func(base int64, n int, epoch int32) []byte {
		s := spec(n, 0)
		s.baseOffset, s.leaderEpoch = base, epoch
		return s.build(t)
	}
	if _, err := l.AppendAsFollower(append(mk(0, 2, 1), mk(2, 3, 3)...)); err != nil {
		t.Fatal(err)
	}
	if l.LogEndOffset() != 5 {
		t.Fatalf("LEO %d", l.LogEndOffset())
	}
	want := []EpochEntry{{1, 0}, {3, 2}}
	if got := l.EpochCache().Entries(); len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("epochs %+v", got)
	}
	for _, b := range [][]byte{mk(4, 1, 3), mk(6, 1, 3), append(mk(5, 2, 3), mk(6, 1, 3)...)} {
		if _, err := l.AppendAsFollower(b); !errors.Is(err, ErrInvalidOffset) {
			t.Fatalf("got %v", err)
		}
	}
	bad := mk(5, 1, 3)
	bad[70] ^= 1
	if _, err := l.AppendAsFollower(bad); !errors.Is(err, record.ErrCorruptBatch) {
		t.Fatalf("crc: %v", err)
	}
	if l.LogEndOffset() != 5 {
		t.Fatalf("LEO moved: %d", l.LogEndOffset())
	}
}

func TestCloseReopenKeepsEverything(t *testing.T) {
	e := newTestEnv(t)
	l := e.open(smallConfig(), LogState{})
	appendN(t, l, 60, 2, 500)
	segs := l.Segments()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Read(0, 100, math.MaxInt64, true); !errors.Is(err, ErrLogClosed) {
		t.Fatalf("read after close: %v", err)
	}
	if _, err := l.AppendAsLeader(leaderBatches(t, spec(1, 0).build(t)), 0, AppendOptions{}); !errors.Is(err, ErrLogClosed) {
		t.Fatalf("append after close: %v", err)
	}
	// Clean shutdown: files trimmed to their logical sizes.
	last := segs[len(segs)-1]
	st, _ := os.Stat(segmentFileName(e.dir, last.BaseOffset, logSuffix))
	if st.Size() != last.Size {
		t.Fatalf("active segment not trimmed: %d vs %d", st.Size(), last.Size)
	}
	l2 := e.open(smallConfig(), LogState{RecoveryPoint: 120, CleanShutdown: true})
	defer l2.Close()
	if l2.LogEndOffset() != 120 || l2.NumSegments() != len(segs) {
		t.Fatalf("reopened: LEO %d, %d segments", l2.LogEndOffset(), l2.NumSegments())
	}
	checkContiguous(t, readAll(t, l2, 0, math.MaxInt64), 0, 120)
	appendN(t, l2, 5, 2, 0)
	checkContiguous(t, readAll(t, l2, 0, math.MaxInt64), 0, 130)
	if ts, off := l2.MaxTimestamp(); ts != 619 || off != 119 {
		t.Fatalf("max timestamp %d at %d", ts, off)
	}
}

func TestOpenRejectsBadConfig(t *testing.T) {
	cfg := smallConfig()
	cfg.SegmentBytes = 1 << 40
	if _, err := OpenLog(filepath.Join(t.TempDir(), "t-0"), cfg, LogState{}, LogOptions{}); err == nil {
		t.Fatal("accepted segment.bytes beyond 2 GiB")
	}
}

// A reader's walk that reaches the end of what it may see (a fetch at the
// log end, a consumer at the HW) costs no allocation: an error was
// formatted there and dropped on every such read.
func TestBatchAtEndAllocatesNothing(t *testing.T) {
	data := make([]byte, 4096)
	for _, c := range []struct{ pos, end int64 }{{4096, 4096}, {100, 105}, {0, 4096}} { // end, torn, zeroed
		if _, _, ok := batchAt(data, c.pos, c.end); ok {
			t.Fatalf("batchAt(%d, %d) found a batch in zeroes", c.pos, c.end)
		}
		if n := testing.AllocsPerRun(100, func() { batchAt(data, c.pos, c.end) }); n != 0 {
			t.Fatalf("batchAt(%d, %d) without a batch: %v allocations, want 0", c.pos, c.end, n)
		}
	}
}

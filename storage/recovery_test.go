package storage

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kbroker/kbroker/record"
)

// batchPositions returns the byte position of each batch of a segment file.
func batchPositions(t *testing.T, path string) []int64 {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []int64
	it := record.Batches(data)
	for it.Next() {
		out = append(out, int64(it.Pos()))
	}
	return out
}

func lastSegmentPath(t *testing.T, dir string) string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	if len(m) == 0 {
		t.Fatal("no segments")
	}
	return m[len(m)-1]
}

func TestRecoveryZeroFilledTail(t *testing.T) {
	e := newTestEnv(t)
	l := e.open(smallConfig(), LogState{})
	appendN(t, l, 10, 2, 0)
	crashClone(t, l, e)
	st, _ := os.Stat(lastSegmentPath(t, e.dir))
	l2 := e.open(smallConfig(), LogState{})
	defer l2.Close()
	if l2.LogEndOffset() != 20 {
		t.Fatalf("LEO %d", l2.LogEndOffset())
	}
	if st.Size() <= l2.Size() {
		t.Fatalf("expected a preallocated tail in the crashed file (%d <= %d)", st.Size(), l2.Size())
	}
	if !strings.Contains(e.logs.String(), "trimming preallocated tail") {
		t.Fatalf("log: %s", e.logs)
	}
	checkContiguous(t, readAll(t, l2, 0, math.MaxInt64), 0, 20)
}

func TestRecoveryCrashMidAppend(t *testing.T) {
	e := newTestEnv(t)
	l := e.open(smallConfig(), LogState{})
	appendN(t, l, 10, 2, 0)
	size := l.Size()
	crashClone(t, l, e)
	// Keep only part of the last batch: a torn write.
	path := lastSegmentPath(t, e.dir)
	pos := batchPositions(t, path)
	if err := os.Truncate(path, pos[len(pos)-1]+30); err != nil {
		t.Fatal(err)
	}
	l2 := e.open(smallConfig(), LogState{})
	defer l2.Close()
	if l2.LogEndOffset() != 18 || l2.Size() >= size {
		t.Fatalf("LEO %d size %d", l2.LogEndOffset(), l2.Size())
	}
	checkContiguous(t, readAll(t, l2, 0, math.MaxInt64), 0, 18)
	appendN(t, l2, 1, 2, 0)
	checkContiguous(t, readAll(t, l2, 0, math.MaxInt64), 0, 20)
}

func TestRecoveryGarbageTail(t *testing.T) {
	e := newTestEnv(t)
	l := e.open(smallConfig(), LogState{})
	appendN(t, l, 5, 2, 0)
	end := l.Size()
	l.Close() // clean files...
	path := lastSegmentPath(t, e.dir)
	f, _ := os.OpenFile(path, os.O_WRONLY, 0)
	f.WriteAt(bytes.Repeat([]byte{0xAB}, 500), end)
	f.Close()
	// ...but the marker is missing: unclean, recovered from the recovery point.
	l2 := e.open(smallConfig(), LogState{RecoveryPoint: 10})
	defer l2.Close()
	if l2.LogEndOffset() != 10 || l2.Size() != end {
		t.Fatalf("LEO %d size %d", l2.LogEndOffset(), l2.Size())
	}
	if !strings.Contains(e.logs.String(), "truncating torn or corrupt data") {
		t.Fatalf("log: %s", e.logs)
	}
	st, _ := os.Stat(path)
	if st.Size() < end {
		t.Fatalf("file cut below valid data")
	}
}

func TestRecoveryCorruptBatchInMiddleDropsLaterSegments(t *testing.T) {
	e := newTestEnv(t)
	l := e.open(smallConfig(), LogState{})
	appendN(t, l, 200, 2, 0)
	segs := l.Segments()
	if len(segs) < 4 {
		t.Fatalf("need 4 segments, have %d", len(segs))
	}
	l.Close()
	victim := segs[1]
	path := segmentFileName(e.dir, victim.BaseOffset, logSuffix)
	pos := batchPositions(t, path)
	f, _ := os.OpenFile(path, os.O_RDWR, 0)
	f.WriteAt([]byte{0xFF}, pos[3]+record.BatchHeaderSize+2) // inside the records: CRC mismatch
	f.Close()
	// The fourth batch of segment 1 is corrupt.
	hdr := make([]byte, record.BatchHeaderSize)
	f, _ = os.Open(path)
	f.ReadAt(hdr, pos[3])
	f.Close()
	h, _ := record.ParseBatchHeader(hdr)

	l2 := e.open(smallConfig(), LogState{RecoveryPoint: 0})
	defer l2.Close()
	if l2.LogEndOffset() != h.BaseOffset || l2.NumSegments() != 2 {
		t.Fatalf("LEO %d (want %d), %d segments", l2.LogEndOffset(), h.BaseOffset, l2.NumSegments())
	}
	for _, s := range segs[2:] {
		if _, err := os.Stat(segmentFileName(e.dir, s.BaseOffset, logSuffix)); !os.IsNotExist(err) {
			t.Fatalf("later segment %d survived", s.BaseOffset)
		}
	}
	checkContiguous(t, readAll(t, l2, 0, math.MaxInt64), 0, h.BaseOffset)
	appendN(t, l2, 3, 2, 0)
	checkContiguous(t, readAll(t, l2, 0, math.MaxInt64), 0, h.BaseOffset+6)
}

func TestRecoveryRebuildsMissingIndex(t *testing.T) {
	e := newTestEnv(t)
	l := e.open(smallConfig(), LogState{})
	appendN(t, l, 80, 2, 1000)
	segs := l.Segments()
	l.Close()
	mid := segs[1].BaseOffset
	os.Remove(segmentFileName(e.dir, mid, indexSuffix))
	os.Remove(segmentFileName(e.dir, mid, timeIndexSuffix))
	l2 := e.open(smallConfig(), LogState{RecoveryPoint: 160, CleanShutdown: true})
	defer l2.Close()
	if !strings.Contains(e.logs.String(), "failed sanity check") {
		t.Fatalf("log: %s", e.logs)
	}
	for _, p := range []string{indexSuffix, timeIndexSuffix} {
		if st, err := os.Stat(segmentFileName(e.dir, mid, p)); err != nil || st.Size() == 0 {
			t.Fatalf("%s not rebuilt: %v", p, err)
		}
	}
	checkContiguous(t, readAll(t, l2, 0, math.MaxInt64), 0, 160)
	if off, ts, ok := l2.OffsetForTimestamp(1000 + mid + 1); !ok || off != mid+1 || ts != 1000+mid+1 {
		t.Fatalf("time lookup in rebuilt segment: %d %d %v", off, ts, ok)
	}
}

func TestRecoveryRebuildsCorruptIndex(t *testing.T) {
	e := newTestEnv(t)
	l := e.open(smallConfig(), LogState{})
	appendN(t, l, 200, 2, 0)
	segs := l.Segments()
	l.Close()

	// Segment 0: the last entry points nowhere: caught by the sanity check
	// at open.
	p0 := segmentFileName(e.dir, segs[0].BaseOffset, indexSuffix)
	data, _ := os.ReadFile(p0)
	copy(data[len(data)-4:], []byte{0, 0, 0x0f, 0xff})
	os.WriteFile(p0, data, 0o644)
	// Segment 1: entries out of order but a valid last entry: caught by the
	// full check when the segment is first mapped.
	p1 := segmentFileName(e.dir, segs[1].BaseOffset, indexSuffix)
	data, _ = os.ReadFile(p1)
	if len(data) < 24 {
		t.Fatalf("index too small: %d", len(data))
	}
	copy(data[0:8], data[8:16])
	os.WriteFile(p1, data, 0o644)

	l2 := e.open(smallConfig(), LogState{RecoveryPoint: 400, CleanShutdown: true})
	defer l2.Close()
	checkContiguous(t, readAll(t, l2, 0, math.MaxInt64), 0, 400)
	logs := e.logs.String()
	if !strings.Contains(logs, "failed sanity check") || !strings.Contains(logs, "rebuilding corrupt index") {
		t.Fatalf("log: %s", logs)
	}
	for off := int64(0); off < 400; off += 7 {
		res, err := l2.Read(off, 1, math.MaxInt64, true)
		if err != nil {
			t.Fatal(err)
		}
		h, _ := record.ParseBatchHeader(res.Data)
		if h.BaseOffset > off || h.LastOffset() < off {
			t.Fatalf("offset %d -> batch %d", off, h.BaseOffset)
		}
		res.Release()
	}
}

func TestRecoveryDeletesStrayFilesAndReportsProgress(t *testing.T) {
	e := newTestEnv(t)
	l := e.open(smallConfig(), LogState{})
	appendN(t, l, 80, 2, 0)
	n := l.NumSegments()
	l.Close()
	strays := []string{"00000000000000000000.log.deleted", "00000000000000000002.index.swap", "x.cleaned",
		"leader-epoch-checkpoint.tmp", "00000000000000099999.index"}
	for _, s := range strays {
		os.WriteFile(filepath.Join(e.dir, s), []byte("junk"), 0o644)
	}
	e.opts.RecoveryProgressEvery = 2
	l2 := e.open(smallConfig(), LogState{})
	defer l2.Close()
	for _, s := range strays {
		if _, err := os.Stat(filepath.Join(e.dir, s)); !os.IsNotExist(err) {
			t.Errorf("stray %s survived", s)
		}
	}
	if !strings.Contains(e.logs.String(), "recovered 2/") || l2.NumSegments() != n {
		t.Fatalf("log: %s", e.logs)
	}
	checkContiguous(t, readAll(t, l2, 0, math.MaxInt64), 0, 160)
}

func TestRecoveryCleanShutdownChecksTail(t *testing.T) {
	// A "clean" log whose last segment has a corrupt tail is still caught.
	e := newTestEnv(t)
	l := e.open(smallConfig(), LogState{})
	appendN(t, l, 3, 2, 0)
	l.Close()
	path := lastSegmentPath(t, e.dir)
	pos := batchPositions(t, path)
	os.Truncate(path, pos[2]+20)
	l2 := e.open(smallConfig(), LogState{CleanShutdown: true, RecoveryPoint: 6})
	defer l2.Close()
	if l2.LogEndOffset() != 4 {
		t.Fatalf("LEO %d", l2.LogEndOffset())
	}
}

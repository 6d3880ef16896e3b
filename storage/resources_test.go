package storage

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// procCounts counts the process's open descriptors and memory mappings.
func procCounts(t *testing.T) (fds, maps int) {
	t.Helper()
	des, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	m, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	return len(des), strings.Count(string(m), "\n")
}

// resourceBounds is what n partitions may cost at most: one descriptor
// each (the active .log), three mappings each (the active .log and its two
// indexes) plus three per mapped inactive segment of the shared budget,
// and a small constant for the runtime (heap growth, test bookkeeping).
func resourceBounds(n, mappedTotal int) (fds, maps int) {
	return n + 16, 3*n + 3*mappedTotal + 64
}

func checkResources(t *testing.T, when string, fds0, maps0, n, mappedTotal int) {
	t.Helper()
	fds, maps := procCounts(t)
	maxFds, maxMaps := resourceBounds(n, mappedTotal)
	t.Logf("%s: %d partitions hold %d descriptors and %d mappings", when, n, fds-fds0, maps-maps0)
	if fds-fds0 > maxFds {
		t.Errorf("%s: %d descriptors for %d partitions, want at most %d", when, fds-fds0, n, maxFds)
	}
	if maps-maps0 > maxMaps {
		t.Errorf("%s: %d mappings for %d partitions, want at most %d", when, maps-maps0, n, maxMaps)
	}
}

// 200 partitions of 5 segments each hold one descriptor per partition and
// a bounded number of mappings, after appends (rolls), after reading every
// segment of every partition (fetch and ListOffsets by time), and after a
// restart that recovers them. (The code before this test held 3
// descriptors and up to 15 mappings per partition.)
func TestDescriptorsAndMappingsPerPartitionAreBounded(t *testing.T) {
	const parts, segs, mappedTotal = 200, 5, 50
	root := t.TempDir()
	fds0, maps0 := procCounts(t)
	open := func() (*Manager, []*Log) {
		m, err := NewManager([]string{root}, ManagerOptions{Logger: discardLogger(), MaxMappedSegmentsTotal: mappedTotal})
		if err != nil {
			t.Fatal(err)
		}
		var logs []*Log
		for p := range parts {
			l, err := m.Open(TopicPartition{Topic: "t", Partition: int32(p)}, [16]byte{}, smallConfig())
			if err != nil {
				t.Fatal(err)
			}
			logs = append(logs, l)
		}
		return m, logs
	}
	m, logs := open()
	for _, l := range logs {
		for l.NumSegments() < segs {
			appendN(t, l, 1, 30, l.LogEndOffset()) // timestamps equal offsets
		}
	}
	checkResources(t, "after appends", fds0, maps0, parts, mappedTotal)
	readEverything := func() {
		for _, l := range logs {
			checkContiguous(t, readAll(t, l, 0, math.MaxInt64), 0, l.LogEndOffset())
			// Timestamps equal offsets: the first segment's time index answers.
			if off, _, ok := l.OffsetForTimestamp(1); !ok || off != 1 {
				t.Fatalf("%s: offset for timestamp 1 is %d (%v)", l.Dir(), off, ok)
			}
			if ts, _ := l.MaxTimestamp(); ts != l.LogEndOffset()-1 {
				t.Fatalf("%s: max timestamp %d", l.Dir(), ts)
			}
		}
	}
	readEverything()
	checkResources(t, "after reading every segment", fds0, maps0, parts, mappedTotal)
	if n := m.maps.mappedSegments(); n > mappedTotal {
		t.Fatalf("%d inactive segments mapped, budget %d", n, mappedTotal)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	m, logs = open()
	defer m.Close()
	readEverything()
	checkResources(t, "after a restart and reading every segment", fds0, maps0, parts, mappedTotal)
}

// The shared budget evicts the least recently used segment of any log, and
// each log keeps at most its own share.
func TestMapCacheBoundsAcrossLogs(t *testing.T) {
	c := newMapCache(2, 3)
	a, b := c.forLog(), c.forLog()
	seg := func() *segment { return newSegment(t.TempDir(), 0, nil) }
	a1, a2, a3, b1, b2 := seg(), seg(), seg(), seg(), seg()
	for _, s := range []*segment{a1, a2, a3, b1, b2} {
		s.mapped = true // evict unmaps only what is mapped
	}
	a.note(a1)
	a.note(a2)
	a.note(a3) // a's share is 2: a1 goes
	if a1.mapped || !a2.mapped || !a3.mapped {
		t.Fatalf("per-log eviction: a1 %v a2 %v a3 %v", a1.mapped, a2.mapped, a3.mapped)
	}
	a.touch(a2) // a3 is now a's least recently used, and the oldest overall
	b.note(b1)  // 3 in total
	b.note(b2)  // over the total: a3 goes
	if a3.mapped || !a2.mapped || !b1.mapped || !b2.mapped || c.mappedSegments() != 3 {
		t.Fatalf("total eviction: a2 %v a3 %v b1 %v b2 %v, %d mapped", a2.mapped, a3.mapped, b1.mapped, b2.mapped, c.mappedSegments())
	}
	b.forget(b1, b2)
	if c.mappedSegments() != 1 || !b1.mapped {
		t.Fatal("forget must drop entries without unmapping")
	}
}

// diskBlocks is the disk space allocated to the files of dir.
func diskBlocks(t *testing.T, dir string) int64 {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, de := range des {
		var st syscall.Stat_t
		if err := syscall.Stat(filepath.Join(dir, de.Name()), &st); err != nil {
			t.Fatal(err)
		}
		n += st.Blocks * 512
	}
	return n
}

// An idle partition reserves a small first step of disk, not a whole
// preallocation chunk (10,000 of them would reserve 80 GB with 8 MiB
// chunks); a growing one doubles its step up to the chunk.
func TestPreallocationGrowsWithTheSegment(t *testing.T) {
	e := newTestEnv(t)
	cfg := DefaultLogConfig() // 1 GiB segments, 8 MiB chunks
	l := e.open(cfg, LogState{})
	defer l.Close()
	if got := diskBlocks(t, e.dir); got > minPreallocate+64<<10 {
		t.Fatalf("an empty log holds %d bytes of disk", got)
	}
	batch := batchOfSize(t, 16<<10, 1)
	for l.Size() < 3<<20 {
		if _, err := l.AppendAsLeader(leaderBatches(t, batch), 0, AppendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if got, size := diskBlocks(t, e.dir), l.Size(); got > 2*size+minPreallocate+64<<10 {
		t.Fatalf("a log of %d bytes holds %d bytes of disk", size, got)
	}
	l.appendMu.Lock()
	step := l.activeLocked().growStep()
	l.appendMu.Unlock()
	if step < 1<<20 {
		t.Fatalf("the step is still %d bytes after 3 MiB", step)
	}
}

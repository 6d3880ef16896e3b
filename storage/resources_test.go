package storage

import (
	"math"
	"os"
	"strings"
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
		for i := 0; l.NumSegments() < segs; i++ {
			appendN(t, l, 1, 2, int64(i*2))
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

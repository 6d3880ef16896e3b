package storage

import (
	"errors"
	"github.com/kbroker/kbroker/storage/vfs"
	"path/filepath"
	"testing"
)

func newTestIndexes(t *testing.T, base int64, maxBytes int64) (*offsetIndex, *timeIndex) {
	t.Helper()
	dir := t.TempDir()
	env := &fileEnv{fs: vfs.Default, fallocate: osFallocate, logger: discardLogger()}
	oi := newOffsetIndex(filepath.Join(dir, "x.index"), base, env)
	ti := newTimeIndex(filepath.Join(dir, "x.timeindex"), base, env)
	if err := oi.openWritable(maxBytes, 0); err != nil {
		t.Fatal(err)
	}
	if err := ti.openWritable(maxBytes, 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { oi.close(); ti.close() })
	return oi, ti
}

func TestOffsetIndexLookup(t *testing.T) {
	oi, _ := newTestIndexes(t, 1000, 80)
	if oi.maxEntries() != 10 {
		t.Fatalf("max entries %d", oi.maxEntries())
	}
	if e := oi.lookup(1500); e != (indexEntry{Offset: 1000, Position: 0}) {
		t.Fatalf("empty lookup %+v", e)
	}
	if err := oi.reserve(5); err != nil {
		t.Fatal(err)
	}
	for i := int64(1); i <= 5; i++ {
		oi.append(1000+i*10, i*100) // (1010,100) (1020,200) ...
	}
	cases := []struct{ target, off, pos int64 }{
		{999, 1000, 0}, {1000, 1000, 0}, {1009, 1000, 0}, {1010, 1010, 100}, {1015, 1010, 100},
		{1049, 1040, 400}, {1050, 1050, 500}, {99999, 1050, 500},
	}
	for _, c := range cases {
		if e := oi.lookup(c.target); e.Offset != c.off || e.Position != c.pos {
			t.Errorf("lookup(%d) = %+v, want (%d, %d)", c.target, e, c.off, c.pos)
		}
	}
	if err := oi.check(600); err != nil {
		t.Fatal(err)
	}
	if err := oi.check(500); !errors.Is(err, ErrCorruptIndex) {
		t.Fatalf("entry beyond the log passed the check: %v", err)
	}
	oi.truncateTo(1030)
	if oi.count.Load() != 2 || oi.lastEntry().Offset != 1020 {
		t.Fatalf("after truncate: %d entries, last %+v", oi.count.Load(), oi.lastEntry())
	}
	if oi.isFull(8) || !oi.isFull(9) {
		t.Fatal("isFull")
	}
}

func TestOffsetIndexCheckDetectsDisorder(t *testing.T) {
	oi, _ := newTestIndexes(t, 0, 80)
	oi.reserve(3)
	oi.append(10, 100)
	oi.append(5, 200)
	if err := oi.check(1000); !errors.Is(err, ErrCorruptIndex) {
		t.Fatalf("got %v", err)
	}
}

func TestTimeIndex(t *testing.T) {
	_, ti := newTestIndexes(t, 100, 120)
	if e := ti.lookup(5); e != (timeEntry{Timestamp: -1, Offset: 100}) {
		t.Fatalf("empty lookup %+v", e)
	}
	ti.reserve(4)
	if !ti.maybeAppend(1000, 105) || ti.maybeAppend(1000, 106) || ti.maybeAppend(900, 107) || !ti.maybeAppend(2000, 110) {
		t.Fatal("maybeAppend must only add growing timestamps")
	}
	ti.maybeAppend(3000, 120)
	cases := []struct{ ts, wantTs, wantOff int64 }{
		{999, -1, 100}, {1000, 1000, 105}, {1999, 1000, 105}, {2500, 2000, 110}, {5000, 3000, 120},
	}
	for _, c := range cases {
		if e := ti.lookup(c.ts); e.Timestamp != c.wantTs || e.Offset != c.wantOff {
			t.Errorf("lookup(%d) = %+v", c.ts, e)
		}
	}
	if last := ti.lastEntry(); last.Timestamp != 3000 {
		t.Fatalf("last %+v", last)
	}
	if err := ti.check(121); err != nil {
		t.Fatal(err)
	}
	if err := ti.check(120); !errors.Is(err, ErrCorruptIndex) {
		t.Fatal("entry at the next offset passed")
	}
	ti.truncateTo(110)
	if ti.count.Load() != 1 {
		t.Fatalf("truncate kept %d", ti.count.Load())
	}
}

func TestIndexTrimAndReopenReadOnly(t *testing.T) {
	oi, _ := newTestIndexes(t, 0, 800)
	oi.reserve(3)
	for i := int64(1); i <= 3; i++ {
		oi.append(i, i*10)
	}
	if err := oi.trim(); err != nil {
		t.Fatal(err)
	}
	ro := newOffsetIndex(oi.path, 0, oi.env)
	if err := ro.openReadOnly(); err != nil {
		t.Fatal(err)
	}
	defer ro.close()
	if ro.count.Load() != 3 || ro.lookup(2).Position != 20 {
		t.Fatalf("reopened %d entries", ro.count.Load())
	}
}

func BenchmarkIndexLookup(b *testing.B) {
	dir := b.TempDir()
	env := &fileEnv{fs: vfs.Default, fallocate: osFallocate, logger: discardLogger()}
	oi := newOffsetIndex(filepath.Join(dir, "x.index"), 0, env)
	if err := oi.openWritable(10<<20, 0); err != nil {
		b.Fatal(err)
	}
	defer oi.close()
	n := oi.maxEntries()
	oi.reserve(n)
	for i := int64(0); i < n; i++ {
		oi.append(i*10+9, i*4096)
	}
	b.ReportAllocs()
	b.ResetTimer()
	var sink int64
	for i := 0; b.Loop(); i++ {
		sink += oi.lookup(int64(i*7919) % (n * 10)).Position
	}
	_ = sink
}

package storage

import (
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
)

// faultyFallocate injects errors at the fallocate seam.
type faultyFallocate struct {
	err   atomic.Pointer[error]
	calls atomic.Int64
}

func (f *faultyFallocate) fallocate(file *os.File, off, n int64) error {
	f.calls.Add(1)
	if p := f.err.Load(); p != nil {
		return *p
	}
	return osFallocate(file, off, n)
}

func (f *faultyFallocate) fail(err error) { f.err.Store(&err) }
func (f *faultyFallocate) heal()          { f.err.Store(nil) }

func TestDiskFullInjected(t *testing.T) {
	e := newTestEnv(t)
	ff := &faultyFallocate{}
	e.opts.Fallocate = ff.fallocate
	l := e.open(smallConfig(), LogState{})
	defer l.Close()
	appendN(t, l, 5, 2, 0)
	leo, size := l.LogEndOffset(), l.Size()

	ff.fail(syscall.ENOSPC)
	var sawRollFailure bool
	for i := 0; i < 100; i++ { // crosses chunk and segment boundaries
		segsBefore := l.NumSegments()
		_, err := l.AppendAsLeader(leaderBatches(t, spec(2, 0).build(t)), 0, AppendOptions{})
		if err == nil {
			continue // fitted in already allocated space
		}
		if !errors.Is(err, ErrDiskFull) || !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("append %d: %v", i, err)
		}
		sawRollFailure = sawRollFailure || l.NumSegments() == segsBefore
		break
	}
	if !sawRollFailure {
		t.Log("disk full surfaced without a failed roll")
	}
	// Nothing of the failed append is visible; the log still serves reads.
	full := l.LogEndOffset()
	checkContiguous(t, readAll(t, l, 0, math.MaxInt64), 0, full)
	if full < leo || l.Size() < size {
		t.Fatal("log went backwards")
	}
	if _, err := l.AppendAsLeader(leaderBatches(t, spec(2, 0).build(t)), 0, AppendOptions{}); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("still full: %v", err)
	}
	if l.LogEndOffset() != full {
		t.Fatal("failed append moved LEO")
	}
	// Space comes back: appends succeed again, across rolls.
	ff.heal()
	appendN(t, l, 100, 2, 0)
	checkContiguous(t, readAll(t, l, 0, math.MaxInt64), 0, full+200)
}

func TestDiskFullWhileRolling(t *testing.T) {
	e := newTestEnv(t)
	ff := &faultyFallocate{}
	e.opts.Fallocate = ff.fallocate
	cfg := smallConfig()
	cfg.PreallocateChunkBytes = cfg.SegmentBytes // one fallocate per segment: the next one is at roll
	l := e.open(cfg, LogState{})
	defer l.Close()
	for l.NumSegments() == 1 {
		appendN(t, l, 1, 2, 0)
	}
	for l.NumSegments() == 2 {
		appendN(t, l, 1, 2, 0)
	}
	// Fill the third segment to just before its roll.
	var err error
	ff.fail(syscall.ENOSPC)
	for err == nil {
		_, err = l.AppendAsLeader(leaderBatches(t, spec(2, 0).build(t)), 0, AppendOptions{})
	}
	if !errors.Is(err, ErrDiskFull) || l.NumSegments() != 3 {
		t.Fatalf("%v with %d segments", err, l.NumSegments())
	}
	ents, _ := filepath.Glob(filepath.Join(e.dir, "*.log"))
	if len(ents) != 3 {
		t.Fatalf("failed roll left files: %v", ents)
	}
	ff.heal()
	appendN(t, l, 1, 2, 0)
	if l.NumSegments() != 4 {
		t.Fatalf("segments %d", l.NumSegments())
	}
}

func TestFallocateUnsupportedFallsBack(t *testing.T) {
	e := newTestEnv(t)
	ff := &faultyFallocate{}
	ff.fail(syscall.EOPNOTSUPP)
	e.opts.Fallocate = ff.fallocate
	l := e.open(smallConfig(), LogState{})
	defer l.Close()
	appendN(t, l, 100, 2, 0)
	checkContiguous(t, readAll(t, l, 0, math.MaxInt64), 0, 200)
	if ff.calls.Load() != 1 {
		t.Fatalf("fallocate retried %d times after EOPNOTSUPP", ff.calls.Load())
	}
	if !strings.Contains(e.logs.String(), "fallocate not supported") {
		t.Fatal("fallback not logged")
	}
}

// On a real small filesystem disk full must be an error, never a SIGBUS,
// and appends must work again once space is freed.
func TestDiskFullTmpfs(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a tmpfs")
	}
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot mount tmpfs: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", mnt).Run() })
	ballast := filepath.Join(mnt, "ballast")
	if err := os.WriteFile(ballast, make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	e := newTestEnv(t)
	e.dir = filepath.Join(mnt, "topic-0")
	cfg := smallConfig()
	cfg.SegmentBytes, cfg.PreallocateChunkBytes, cfg.MaxIndexBytes = 256<<10, 64<<10, 4096
	l := e.open(cfg, LogState{})
	defer l.Close()
	var err error
	n := 0
	for ; n < 100000 && err == nil; n++ {
		_, err = l.AppendAsLeader(leaderBatches(t, spec(8, 0).build(t)), 0, AppendOptions{})
	}
	if !errors.Is(err, ErrDiskFull) {
		t.Fatalf("after %d appends: %v", n, err)
	}
	leo := l.LogEndOffset()
	checkContiguous(t, readAll(t, l, 0, math.MaxInt64), 0, leo)
	os.Remove(ballast)
	appendN(t, l, 200, 8, 0)
	checkContiguous(t, readAll(t, l, 0, math.MaxInt64), 0, leo+1600)
}

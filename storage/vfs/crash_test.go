package vfs

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func newCrash(t *testing.T) *CrashFS {
	t.Helper()
	c, err := NewCrashFS(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func write(t *testing.T, c *CrashFS, name, data string, sync bool) File {
	t.Helper()
	f, err := c.OpenFile(filepath.Join(c.Root(), name), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte(data), 0); err != nil {
		t.Fatal(err)
	}
	if sync {
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// A file is on disk only when both its data and its directory entry were
// synced; a rename only once the directory was synced again.
func TestCrashKeepsOnlySynced(t *testing.T) {
	c := newCrash(t)
	write(t, c, "a", "synced", true).Close()
	write(t, c, "b", "unsynced", false).Close()
	if err := c.SyncDir(c.Root()); err != nil {
		t.Fatal(err)
	}
	write(t, c, "c", "no dir sync", true).Close()
	if err := c.Rename(filepath.Join(c.Root(), "a"), filepath.Join(c.Root(), "a2")); err != nil {
		t.Fatal(err)
	}
	img := c.Cut(nil)
	if got := string(img.Files["a"]); got != "synced" {
		t.Fatalf("a = %q, want the synced content under the old name", got)
	}
	if got, ok := img.Files["b"]; !ok || len(got) != 0 {
		t.Fatalf("b = %q, %v: want an empty file (entry synced, data not)", got, ok)
	}
	if _, ok := img.Files["c"]; ok {
		t.Fatal("c survived without a directory sync")
	}
	if _, ok := img.Files["a2"]; ok {
		t.Fatal("rename survived without a directory sync")
	}
	if _, err := c.Stat(filepath.Join(c.Root(), "a2")); !errors.Is(err, ErrPowerCut) || !errors.Is(err, syscall.EIO) {
		t.Fatalf("call after the cut: %v, want EIO (power cut)", err)
	}
	if err := c.Restore(img); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(c.Root(), "a")); string(b) != "synced" {
		t.Fatalf("restored a = %q", b)
	}
}

// msync persists the synced range of a mapping (and the file size), not
// the rest of what was written through it.
func TestCrashMsyncRange(t *testing.T) {
	c := newCrash(t)
	f := write(t, c, "m", "", false)
	if err := f.Truncate(3 * PageSize); err != nil {
		t.Fatal(err)
	}
	c.SyncDir(c.Root())
	m, err := f.Mmap(3*PageSize, true)
	if err != nil {
		t.Fatal(err)
	}
	defer Munmap(m)
	copy(m, bytes.Repeat([]byte{1}, int(3*PageSize)))
	if err := c.Msync(f.Name(), m, 0, PageSize); err != nil {
		t.Fatal(err)
	}
	img := c.Cut(nil)
	got := img.Files["m"]
	if int64(len(got)) != 3*PageSize {
		t.Fatalf("size %d, want %d", len(got), 3*PageSize)
	}
	if got[0] != 1 || got[PageSize-1] != 1 || got[PageSize] != 0 || got[3*PageSize-1] != 0 {
		t.Fatal("msync of the first page persisted the wrong bytes")
	}
}

// A failed fsync loses the dirty data for good (Linux drops the pages): a
// retry that succeeds must not make it durable.
func TestCrashFailedSyncLosesData(t *testing.T) {
	c := newCrash(t)
	f := write(t, c, "x", "old", true)
	c.SyncDir(c.Root())
	f.WriteAt([]byte("new"), 0)
	c.SetInjector(func(op Op, path string) error {
		if op == OpSync {
			return syscall.EIO
		}
		return nil
	})
	if err := f.Sync(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("sync: %v, want EIO", err)
	}
	c.SetInjector(nil)
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if got := string(c.Cut(nil).Files["x"]); got != "old" {
		t.Fatalf("x = %q after a failed then retried fsync, want old", got)
	}
}

// With an rng the cut keeps a random part of the unsynced writes, never
// less than what was synced.
func TestCrashRandomWriteback(t *testing.T) {
	seen := map[string]bool{}
	for seed := uint64(0); seed < 64; seed++ {
		c := newCrash(t)
		f := write(t, c, "w", string(bytes.Repeat([]byte{'s'}, 1024)), true)
		c.SyncDir(c.Root())
		f.WriteAt(bytes.Repeat([]byte{'u'}, 2048), 1024)
		got := c.Cut(rand.New(rand.NewPCG(seed, 1))).Files["w"]
		if len(got) < 1024 || !bytes.Equal(got[:1024], bytes.Repeat([]byte{'s'}, 1024)) {
			t.Fatalf("seed %d: synced prefix lost: %d bytes", seed, len(got))
		}
		seen[string(rune('0'+len(got)/512))] = true
		f.Close()
	}
	if len(seen) < 3 {
		t.Fatalf("writeback is not random: sizes seen %v", seen)
	}
}

// CutAfter cuts at a counted call: that call fails.
func TestCrashCutAfter(t *testing.T) {
	c := newCrash(t)
	c.CutAfter(2, nil)
	f, err := c.OpenFile(filepath.Join(c.Root(), "y"), os.O_RDWR|os.O_CREATE, 0o644) // call 1
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("z"), 0); !errors.Is(err, ErrPowerCut) {
		t.Fatalf("second call: %v, want the cut", err)
	}
	if !c.IsCut() {
		t.Fatal("not cut")
	}
}

// SyncFS of a dir makes everything under it durable: new subdirectories,
// their entries and the files' data; later writes are not.
func TestCrashSyncFS(t *testing.T) {
	c := newCrash(t)
	if err := c.MkdirAll(filepath.Join(c.Root(), "d", "e"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, c, "d/e/x", "data", false).Close()
	write(t, c, "top", "top data", false).Close()
	if err := c.SyncFS(c.Root()); err != nil {
		t.Fatal(err)
	}
	write(t, c, "d/later", "after", false).Close()
	img := c.Cut(nil)
	if got := string(img.Files["d/e/x"]); got != "data" {
		t.Fatalf("d/e/x = %q, want its data synced by the syncfs", got)
	}
	if got := string(img.Files["top"]); got != "top data" {
		t.Fatalf("top = %q, want its data synced by the syncfs", got)
	}
	if _, ok := img.Files["d/later"]; ok {
		t.Fatal("a file created after the syncfs survived")
	}
}

package powercut

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/kbroker/kbroker/storage/vfs"
)

type fixture struct {
	t       *testing.T
	root    string
	journal string
	r       *Recorder
}

// newFixture records a root that already holds old.txt ("old data").
func newFixture(t *testing.T) *fixture {
	t.Helper()
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "old.txt"), []byte("old data"), 0o644); err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, root: root, journal: filepath.Join(dir, "journal")}
	r, err := NewRecorder(vfs.Default, f.journal, []string{root})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	f.r = r
	return f
}

func (f *fixture) path(name string) string { return filepath.Join(f.root, name) }

func (f *fixture) must(err error) {
	f.t.Helper()
	if err != nil {
		f.t.Fatal(err)
	}
}

// write creates or opens name and writes data at off, syncing if asked.
func (f *fixture) write(name string, off int64, data string, sync bool) {
	f.t.Helper()
	fl, err := f.r.OpenFile(f.path(name), os.O_RDWR|os.O_CREATE, 0o644)
	f.must(err)
	_, err = fl.WriteAt([]byte(data), off)
	f.must(err)
	if sync {
		f.must(fl.Sync())
	}
	f.must(fl.Close())
}

func (f *fixture) cut() {
	f.t.Helper()
	if _, err := Apply(f.journal); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) content(name string) (string, bool) {
	b, err := os.ReadFile(f.path(name))
	if errors.Is(err, os.ErrNotExist) {
		return "", false
	}
	f.must(err)
	return string(b), true
}

func (f *fixture) want(name, content string) {
	f.t.Helper()
	got, ok := f.content(name)
	if !ok || got != content {
		f.t.Fatalf("%s = %q (exists %v), want %q", name, got, ok, content)
	}
}

func (f *fixture) gone(name string) {
	f.t.Helper()
	if got, ok := f.content(name); ok {
		f.t.Fatalf("%s survived the power cut with %q", name, got)
	}
}

func TestUnsyncedCreationIsLost(t *testing.T) {
	f := newFixture(t)
	f.write("a", 0, "synced, but its name never was", true)
	f.cut()
	f.gone("a")
}

func TestSyncedFileInSyncedDirSurvives(t *testing.T) {
	f := newFixture(t)
	f.write("a", 0, "hello", true)
	f.must(f.r.SyncDir(f.root))
	f.write("a", 5, " world", false) // unsynced tail
	f.cut()
	f.want("a", "hello")
}

func TestDurableNameWithoutDataIsEmpty(t *testing.T) {
	f := newFixture(t)
	f.write("a", 0, "never synced", false)
	f.must(f.r.SyncDir(f.root))
	f.cut()
	f.want("a", "")
}

func TestExistingFileLosesUnsyncedAppend(t *testing.T) {
	f := newFixture(t)
	f.write("old.txt", 8, " and new", false)
	f.cut()
	f.want("old.txt", "old data")
}

func TestUntouchedFileStaysAsItIs(t *testing.T) {
	f := newFixture(t)
	f.write("a", 0, "x", true)
	f.cut()
	f.want("old.txt", "old data")
}

// msync ranges grow the synced prefix when contiguous; the rest of the
// synced size reads as zeros.
func TestMsyncPrefixAndZeros(t *testing.T) {
	f := newFixture(t)
	fl, err := f.r.OpenFile(f.path("m"), os.O_RDWR|os.O_CREATE, 0o644)
	f.must(err)
	f.must(fl.Truncate(16))
	_, err = fl.WriteAt([]byte("aaaabbbbccccdddd"), 0)
	f.must(err)
	f.must(fl.Close())
	f.must(f.r.SyncDir(f.root))
	f.must(f.r.Msync(f.path("m"), nil, 0, 4))
	f.must(f.r.Msync(f.path("m"), nil, 4, 8))
	f.must(f.r.Msync(f.path("m"), nil, 12, 16)) // not contiguous: not counted
	f.cut()
	f.want("m", "aaaabbbb\x00\x00\x00\x00\x00\x00\x00\x00")
}

// The atomic replace of checkpoints: a synced temporary renamed over a
// durable name survives even before the directory sync (the rename may
// have reached the disk), whole.
func TestRenameOverDurableName(t *testing.T) {
	f := newFixture(t)
	f.write("old.txt.tmp", 0, "new data", true)
	f.must(f.r.Rename(f.path("old.txt.tmp"), f.path("old.txt")))
	f.cut()
	f.want("old.txt", "new data")
	f.gone("old.txt.tmp")
}

func TestUnsyncedDirectoryIsLostWithItsFiles(t *testing.T) {
	f := newFixture(t)
	f.must(f.r.MkdirAll(f.path("d/e"), 0o755))
	f.write("d/e/x", 0, "data", true)
	f.must(f.r.SyncDir(f.path("d/e")))
	f.cut()
	if _, err := os.Stat(f.path("d")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("unsynced directory survived: %v", err)
	}
	f.want("old.txt", "old data")
}

func TestTruncationThenRegrowth(t *testing.T) {
	f := newFixture(t)
	f.write("a", 0, "0123456789", true)
	f.must(f.r.SyncDir(f.root))
	fl, err := f.r.OpenFile(f.path("a"), os.O_RDWR, 0)
	f.must(err)
	f.must(fl.Truncate(4))
	_, err = fl.WriteAt([]byte("XYZ"), 4)
	f.must(err)
	f.must(fl.Close())
	f.cut()
	// The synced size stays (the truncation was not synced) and what was
	// rewritten past the cut reads as never written.
	f.want("a", "0123\x00\x00\x00")
}

func TestFailSyncsWhileTriggerExists(t *testing.T) {
	f := newFixture(t)
	trigger := filepath.Join(t.TempDir(), "fail")
	f.r.FailSyncsWhileExists(trigger)
	f.write("a", 0, "x", true)
	f.must(os.WriteFile(trigger, nil, 0o644))
	fl, err := f.r.OpenFile(f.path("a"), os.O_RDWR, 0)
	f.must(err)
	defer fl.Close()
	if err := fl.Sync(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("fsync with the trigger: %v, want EIO", err)
	}
	if err := f.r.SyncDir(f.root); !errors.Is(err, syscall.EIO) {
		t.Fatalf("directory sync with the trigger: %v, want EIO", err)
	}
	if err := f.r.Msync(f.path("a"), nil, 0, 1); !errors.Is(err, syscall.EIO) {
		t.Fatalf("msync with the trigger: %v, want EIO", err)
	}
	f.must(os.Remove(trigger))
	f.must(fl.Sync())
}

func TestJournalIsReadable(t *testing.T) {
	f := newFixture(t)
	f.write("a", 0, "x", true)
	f.must(f.r.SyncDir(f.root))
	f.must(f.r.Rename(f.path("a"), f.path("b")))
	f.must(f.r.Remove(f.path("b")))
	b, err := os.ReadFile(f.journal)
	f.must(err)
	for _, want := range []string{"create\t", "sync\t", "syncdir\t", "rename\t", "remove\t"} {
		if !bytes.Contains(b, []byte(want)) {
			t.Fatalf("journal lacks %q:\n%s", want, b)
		}
	}
	if _, err := Replay(f.journal); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f.journal, []byte("bogus\tline\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Replay(f.journal); err == nil {
		t.Fatal("a bad journal replayed")
	}
}

// A syncfs of the root is a sync of every file and directory under it:
// new directories, their files and unsynced tails all survive; what is
// written after it does not.
func TestSyncFSSyncsEverythingUnderTheDir(t *testing.T) {
	f := newFixture(t)
	f.must(f.r.MkdirAll(f.path("d/e"), 0o755))
	f.write("d/e/x", 0, "data", false)
	f.write("old.txt", 8, " more", false)
	f.must(f.r.SyncFS(f.root))
	f.write("d/e/x", 4, " later", false)
	f.write("d/y", 0, "after", false)
	f.cut()
	f.want("d/e/x", "data")
	f.want("old.txt", "old data more")
	f.gone("d/y")
}

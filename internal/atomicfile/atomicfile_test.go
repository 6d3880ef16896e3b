package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

func TestWriteFileReplacesWithPermissions(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "creds.json")
	if err := WriteFile(path, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path+".tmp", []byte("stray from a crash"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(path, []byte("new"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil || string(got) != "new" {
		t.Fatalf("content %q, %v", got, err)
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, %v", st.Mode(), err)
	}
	if _, err := os.Stat(path + ".tmp"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the temporary file is left: %v", err)
	}
}

// A write that cannot complete leaves the old content in place and no
// temporary file.
func TestWriteFileFailureKeepsTheOldContent(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	if err := WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A directory where the file should be: the rename fails.
	if err := WriteFile(dir, []byte("x"), 0o644); err == nil {
		t.Fatal("replacing a directory succeeded")
	}
	if _, err := os.Stat(dir + ".tmp"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the temporary file is left: %v", err)
	}
	if err := WriteFile(filepath.Join(dir, "missing", "f"), []byte("x"), 0o644); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a file in a missing directory: %v, want ErrNotExist wrapped", err)
	}
	if got, _ := os.ReadFile(path); string(got) != "old" {
		t.Fatalf("content %q", got)
	}
}

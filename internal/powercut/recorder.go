package powercut

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/kbroker/kbroker/storage/vfs"
)

// Recorder is a vfs.FS over another (the operating system's) that journals
// what changes the durable state of the files under its roots (see the
// package doc). Paths outside the roots pass through unrecorded. Safe for
// concurrent use.
type Recorder struct {
	inner vfs.FS
	roots []string
	// failIf, when not empty, names a file whose existence makes every sync
	// under the roots fail with EIO.
	failIf string

	mu      sync.Mutex // guards the following and orders journal lines
	journal *os.File
	// known are the paths the journal already names (created, or opened
	// once): a first open of any other file records its size.
	known map[string]bool
	err   error // the first journal write error; every later call fails
}

// NewRecorder journals to the file journal (created or truncated) the
// durable state of the files under roots, reached through inner.
func NewRecorder(inner vfs.FS, journal string, roots []string) (*Recorder, error) {
	f, err := os.OpenFile(journal, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("powercut: %w", err)
	}
	r := &Recorder{inner: inner, journal: f, known: map[string]bool{}}
	for _, root := range roots {
		abs, err := filepath.Abs(root)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("powercut: %w", err)
		}
		r.roots = append(r.roots, filepath.Clean(abs))
	}
	return r, nil
}

// FailSyncsWhileExists makes every sync under the roots fail with EIO
// while the file trigger exists.
func (r *Recorder) FailSyncsWhileExists(trigger string) { r.failIf = trigger }

// Close closes the journal.
func (r *Recorder) Close() error { return r.journal.Close() }

func abs(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// tracked reports whether p is under a root.
func (r *Recorder) tracked(p string) bool {
	for _, root := range r.roots {
		if p == root || strings.HasPrefix(p, root+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

// recordLocked appends one event. Must be called with mu held.
func (r *Recorder) recordLocked(fields ...string) error {
	if r.err != nil {
		return r.err
	}
	if _, err := r.journal.WriteString(strings.Join(fields, "\t") + "\n"); err != nil {
		r.err = fmt.Errorf("powercut: journal: %w", err)
	}
	return r.err
}

func (r *Recorder) record(fields ...string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.recordLocked(fields...)
}

func itoa(n int64) string { return fmt.Sprint(n) }

// syncFails reports whether syncs fail now (FailSyncsWhileExists).
func (r *Recorder) syncFails() bool {
	if r.failIf == "" {
		return false
	}
	_, err := os.Stat(r.failIf)
	return err == nil
}

func eio(op, path string) error { return &os.PathError{Op: op, Path: path, Err: syscall.EIO} }

// OpenFile opens name, recording a creation, a truncation, or the size of a
// file the journal does not know yet.
func (r *Recorder) OpenFile(name string, flag int, perm os.FileMode) (vfs.File, error) {
	name = abs(name)
	if !r.tracked(name) {
		return r.inner.OpenFile(name, flag, perm)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	st, statErr := os.Stat(name)
	exists := statErr == nil
	f, err := r.inner.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	var jerr error
	switch {
	case !exists:
		jerr = r.recordLocked("create", name)
	case !r.known[name]:
		jerr = r.recordLocked("exist", name, itoa(st.Size()))
	}
	if jerr == nil && exists && flag&os.O_TRUNC != 0 {
		jerr = r.recordLocked("trunc", name, "0")
	}
	if jerr != nil {
		f.Close()
		return nil, jerr
	}
	r.known[name] = true
	return &file{File: f, r: r, name: name}, nil
}

// Remove removes a file or an empty directory.
func (r *Recorder) Remove(name string) error {
	name = abs(name)
	if err := r.inner.Remove(name); err != nil || !r.tracked(name) {
		return err
	}
	return r.forget(name)
}

// RemoveAll removes path and everything under it.
func (r *Recorder) RemoveAll(path string) error {
	path = abs(path)
	if err := r.inner.RemoveAll(path); err != nil || !r.tracked(path) {
		return err
	}
	return r.forget(path)
}

func (r *Recorder) forget(path string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for p := range r.known {
		if p == path || strings.HasPrefix(p, path+string(filepath.Separator)) {
			delete(r.known, p)
		}
	}
	return r.recordLocked("remove", path)
}

// Rename renames a file or directory.
func (r *Recorder) Rename(oldpath, newpath string) error {
	oldpath, newpath = abs(oldpath), abs(newpath)
	if !r.tracked(oldpath) && !r.tracked(newpath) {
		return r.inner.Rename(oldpath, newpath)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	_, statErr := os.Stat(newpath)
	replaced := "0"
	if statErr == nil {
		replaced = "1"
	}
	if err := r.inner.Rename(oldpath, newpath); err != nil {
		return err
	}
	moved := map[string]bool{}
	for p := range r.known {
		if p == oldpath || strings.HasPrefix(p, oldpath+string(filepath.Separator)) {
			moved[newpath+strings.TrimPrefix(p, oldpath)] = true
			delete(r.known, p)
		}
	}
	for p := range r.known {
		if p == newpath || strings.HasPrefix(p, newpath+string(filepath.Separator)) {
			delete(r.known, p) // replaced
		}
	}
	for p := range moved {
		r.known[p] = true
	}
	return r.recordLocked("rename", oldpath, newpath, replaced)
}

// MkdirAll creates path and its missing parents, recording each.
func (r *Recorder) MkdirAll(path string, perm os.FileMode) error {
	path = abs(path)
	if !r.tracked(path) {
		return r.inner.MkdirAll(path, perm)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var missing []string
	for p := path; r.tracked(p); p = filepath.Dir(p) {
		if _, err := os.Stat(p); err == nil {
			break
		}
		missing = append(missing, p)
	}
	if err := r.inner.MkdirAll(path, perm); err != nil {
		return err
	}
	for i := len(missing) - 1; i >= 0; i-- {
		if err := r.recordLocked("mkdir", missing[i]); err != nil {
			return err
		}
	}
	return nil
}

// ReadDir lists a directory.
func (r *Recorder) ReadDir(name string) ([]os.DirEntry, error) { return r.inner.ReadDir(name) }

// Stat stats a file.
func (r *Recorder) Stat(name string) (os.FileInfo, error) { return r.inner.Stat(name) }

// Truncate sets a file's size.
func (r *Recorder) Truncate(name string, size int64) error {
	name = abs(name)
	if !r.tracked(name) {
		return r.inner.Truncate(name, size)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.knowLocked(name); err != nil {
		return err
	}
	if err := r.inner.Truncate(name, size); err != nil {
		return err
	}
	return r.recordLocked("trunc", name, itoa(size))
}

// knowLocked records the size of a file the journal does not know yet.
// Must be called with mu held.
func (r *Recorder) knowLocked(name string) error {
	if r.known[name] {
		return nil
	}
	st, err := os.Stat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	r.known[name] = true
	return r.recordLocked("exist", name, itoa(st.Size()))
}

// Chtimes sets a file's times (not recorded: not part of the model).
func (r *Recorder) Chtimes(name string, atime, mtime time.Time) error {
	return r.inner.Chtimes(name, atime, mtime)
}

// SyncDir syncs a directory: its entries are on disk.
func (r *Recorder) SyncDir(dir string) error {
	dir = abs(dir)
	if !r.tracked(dir) {
		return r.inner.SyncDir(dir)
	}
	if r.syncFails() {
		return eio("syncdir", dir)
	}
	if err := r.inner.SyncDir(dir); err != nil {
		return err
	}
	return r.record("syncdir", dir)
}

// SyncFS is syncfs(2): every file and directory under dir is on disk. It
// is journaled as what it amounts to there: an fsync of every file and a
// sync of every directory under dir, so that replay needs no new event.
func (r *Recorder) SyncFS(dir string) error {
	dir = abs(dir)
	if !r.tracked(dir) {
		return r.inner.SyncFS(dir)
	}
	if r.syncFails() {
		return eio("syncfs", dir)
	}
	// Held across the walk and the syncfs: a file changed meanwhile would
	// be journaled with a size the syncfs may not have seen.
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.inner.SyncFS(dir); err != nil {
		return err
	}
	var dirs []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() {
			dirs = append(dirs, p)
			return nil
		}
		st, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := r.knowLocked(p); err != nil {
			return err
		}
		return r.recordLocked("sync", p, itoa(st.Size()))
	})
	if err != nil {
		return err
	}
	for _, d := range dirs {
		if err := r.recordLocked("syncdir", d); err != nil {
			return err
		}
	}
	return nil
}

// Msync writes back b[from:to] of a mapping of name: that range and the
// file's size are on disk.
func (r *Recorder) Msync(name string, b []byte, from, to int64) error {
	name = abs(name)
	if !r.tracked(name) {
		return r.inner.Msync(name, b, from, to)
	}
	if r.syncFails() {
		return eio("msync", name)
	}
	if err := r.inner.Msync(name, b, from, to); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.knowLocked(name); err != nil {
		return err
	}
	st, err := os.Stat(name)
	if err != nil {
		return err
	}
	return r.recordLocked("msync", name, itoa(from), itoa(to), itoa(st.Size()))
}

// file is a file of a Recorder.
type file struct {
	vfs.File
	r    *Recorder
	name string
}

func (f *file) Truncate(size int64) error {
	f.r.mu.Lock()
	defer f.r.mu.Unlock()
	if err := f.File.Truncate(size); err != nil {
		return err
	}
	return f.r.recordLocked("trunc", f.name, itoa(size))
}

// Sync is fsync: the whole file and its size are on disk.
func (f *file) Sync() error {
	if f.r.syncFails() {
		return eio("sync", f.name)
	}
	if err := f.File.Sync(); err != nil {
		return err
	}
	st, err := f.File.Stat()
	if err != nil {
		return err
	}
	return f.r.record("sync", f.name, itoa(st.Size()))
}

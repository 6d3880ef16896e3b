package vfs

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"time"
)

// File is an open file.
type File interface {
	io.ReaderAt
	io.WriterAt
	io.Writer
	io.Closer
	Name() string
	Stat() (os.FileInfo, error)
	Truncate(size int64) error
	// Sync is fsync(2): data and metadata of the file are durable.
	Sync() error
	// Allocate reserves disk blocks for [offset, offset+length)
	// (fallocate(2) mode 0: the size grows when the range passes the end).
	// Unsupported file systems return an error wrapping EOPNOTSUPP.
	Allocate(offset, length int64) error
	// Mmap maps the first length bytes of the file MAP_SHARED (length may
	// pass the end of the file). Release it with Munmap; the mapping
	// outlives the descriptor. Write it back with FS.Msync.
	Mmap(length int64, writable bool) ([]byte, error)
	// OS is the operating system's file, for sendfile(2); nil if none.
	OS() *os.File
}

// FS is a file system.
type FS interface {
	OpenFile(name string, flag int, perm os.FileMode) (File, error)
	Remove(name string) error
	RemoveAll(path string) error
	Rename(oldpath, newpath string) error
	MkdirAll(path string, perm os.FileMode) error
	ReadDir(name string) ([]os.DirEntry, error)
	Stat(name string) (os.FileInfo, error)
	Truncate(name string, size int64) error
	Chtimes(name string, atime, mtime time.Time) error
	// SyncDir fsyncs the directory: creations, renames and removals of its
	// entries are durable once it returns.
	SyncDir(dir string) error
	// SyncFS is syncfs(2) of the file system holding dir: every file's
	// data and size and every directory's entries on it are durable once
	// it returns. Crash models count it as a sync of everything under dir
	// (they know nothing of the rest of the file system).
	SyncFS(dir string) error
	// Msync writes back b[from:to] of a mapping of the file name (made by
	// File.Mmap) synchronously: msync(MS_SYNC). from is rounded down to a
	// page.
	Msync(name string, b []byte, from, to int64) error
}

// Default is the operating system's file system.
var Default FS = osFS{}

// Open opens name read-only.
func Open(fsys FS, name string) (File, error) { return fsys.OpenFile(name, os.O_RDONLY, 0) }

// ReadFile reads the whole file.
func ReadFile(fsys FS, name string) ([]byte, error) {
	f, err := Open(fsys, name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	b := make([]byte, st.Size())
	n, err := f.ReadAt(b, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return b[:n], nil
}

// WriteFile writes data to name, creating or truncating it (no sync).
func WriteFile(fsys FS, name string, data []byte, perm os.FileMode) error {
	f, err := fsys.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	return errors.Join(err, f.Close())
}

// Exists reports whether name exists (errors other than not-exist count as
// existing, so that callers do not act on a file they could not stat).
func Exists(fsys FS, name string) bool {
	_, err := fsys.Stat(name)
	return !errors.Is(err, fs.ErrNotExist)
}

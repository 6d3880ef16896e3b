//go:build unix

package vfs

import (
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// osFS is the operating system. It is the only place that maps, unmaps and
// msyncs memory.
type osFS struct{}

type osFile struct{ *os.File }

func (osFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

func (osFS) Remove(name string) error                     { return os.Remove(name) }
func (osFS) RemoveAll(path string) error                  { return os.RemoveAll(path) }
func (osFS) Rename(oldpath, newpath string) error         { return os.Rename(oldpath, newpath) }
func (osFS) MkdirAll(path string, perm os.FileMode) error { return os.MkdirAll(path, perm) }
func (osFS) ReadDir(name string) ([]os.DirEntry, error)   { return os.ReadDir(name) }
func (osFS) Stat(name string) (os.FileInfo, error)        { return os.Stat(name) }
func (osFS) Truncate(name string, size int64) error       { return os.Truncate(name, size) }
func (osFS) Chtimes(name string, atime, mtime time.Time) error {
	return os.Chtimes(name, atime, mtime)
}

func (osFS) SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

func (osFS) SyncFS(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	for {
		err = unix.Syncfs(int(d.Fd()))
		if err != unix.EINTR {
			break
		}
	}
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return &os.PathError{Op: "syncfs", Path: dir, Err: err}
	}
	return nil
}

func (osFS) Msync(_ string, b []byte, from, to int64) error {
	to = min(to, int64(len(b)))
	if to <= from {
		return nil
	}
	from = from / PageSize * PageSize
	if err := unix.Msync(b[from:to], unix.MS_SYNC); err != nil {
		return fmt.Errorf("msync: %w", err)
	}
	return nil
}

func (f osFile) OS() *os.File { return f.File }

func (f osFile) Allocate(offset, length int64) error {
	for {
		err := fallocate(f.File, offset, length)
		if err != unix.EINTR {
			return err
		}
	}
}

func (f osFile) Mmap(length int64, writable bool) ([]byte, error) {
	if length == 0 {
		return nil, nil
	}
	prot := unix.PROT_READ
	if writable {
		prot |= unix.PROT_WRITE
	}
	b, err := unix.Mmap(int(f.Fd()), 0, int(length), prot, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mmap %s (%d bytes): %w", f.Name(), length, err)
	}
	return b, nil
}

// PageSize is the system page size, used to round mapping lengths.
var PageSize = int64(os.Getpagesize())

// Munmap releases a mapping made by File.Mmap. nil is a no-op.
func Munmap(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	if err := unix.Munmap(b); err != nil {
		return fmt.Errorf("munmap: %w", err)
	}
	return nil
}

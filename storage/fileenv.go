package storage

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"

	"github.com/kbroker/kbroker/storage/vfs"
)

// fileEnv is what segments and indexes of one log share for disk work: the
// fallocate seam (replaced by tests to inject ENOSPC) and whether the
// filesystem turned out not to support fallocate.
type fileEnv struct {
	// fs is every file's file system (vfs.Default in production).
	fs vfs.FS
	// fallocate, when set by a test, replaces File.Allocate.
	fallocate   func(f *os.File, offset, length int64) error
	noFallocate atomic.Bool // fallocate returned EOPNOTSUPP once; use ftruncate
	logger      *slog.Logger
	// indexInterval is index.interval.bytes, for lazy index rebuilds.
	indexInterval atomic.Int64
	// syncsDeferred turns every sync of the log (fs is a gatedFS over it)
	// into a no-op: Manager.Close closes its logs so and then makes them
	// durable with one SyncFS per log dir before it writes the
	// checkpoints and the clean-shutdown marker.
	syncsDeferred atomic.Bool
}

// gatedFS is a file system whose syncs (fsync, msync, directory fsync) do
// nothing while *off is set; everything else passes through.
type gatedFS struct {
	vfs.FS
	off *atomic.Bool
}

func (g gatedFS) OpenFile(name string, flag int, perm os.FileMode) (vfs.File, error) {
	f, err := g.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return gatedFile{File: f, off: g.off}, nil
}

func (g gatedFS) SyncDir(dir string) error {
	if g.off.Load() {
		return nil
	}
	return g.FS.SyncDir(dir)
}

func (g gatedFS) Msync(name string, b []byte, from, to int64) error {
	if g.off.Load() {
		return nil
	}
	return g.FS.Msync(name, b, from, to)
}

type gatedFile struct {
	vfs.File
	off *atomic.Bool
}

func (f gatedFile) Sync() error {
	if f.off.Load() {
		return nil
	}
	return f.File.Sync()
}

// allocate reserves disk blocks for [offset, offset+length) of f. With
// extend the file size grows to cover the range (the .log file); without,
// the range is already inside the file (sparse index files) and the
// fallback when fallocate is unsupported is to do nothing, as Kafka does.
func (e *fileEnv) allocate(f vfs.File, offset, length int64, extend bool) error {
	if length <= 0 {
		return nil
	}
	if !e.noFallocate.Load() {
		var err error
		if e.fallocate != nil {
			err = e.fallocate(f.OS(), offset, length)
		} else {
			err = f.Allocate(offset, length)
		}
		if err == nil {
			return nil
		}
		if !errors.Is(err, syscall.EOPNOTSUPP) && !errors.Is(err, syscall.ENOSYS) {
			return diskError(fmt.Sprintf("fallocate %s [%d,+%d)", filepath.Base(f.Name()), offset, length), err)
		}
		e.noFallocate.Store(true)
		e.logger.Warn("storage: fallocate not supported, growing files with ftruncate (disk full may then fault)",
			"file", f.Name())
	}
	if !extend {
		return nil
	}
	if err := f.Truncate(offset + length); err != nil {
		return diskError("grow "+filepath.Base(f.Name()), err)
	}
	return nil
}

// syncDir fsyncs a directory so that creations, renames and deletions in it
// are durable.
func syncDir(fsys vfs.FS, dir string) error {
	if err := fsys.SyncDir(dir); err != nil {
		return fmt.Errorf("storage: sync dir %s: %w", dir, err)
	}
	return nil
}

// mkdirDurable creates dir (and missing parents) and, if it created it,
// fsyncs its parent: a directory is on disk only once the directory that
// names it is synced (the crash suite lost whole partitions without this).
func mkdirDurable(fsys vfs.FS, dir string) error {
	if vfs.Exists(fsys, dir) {
		return nil
	}
	if err := fsys.MkdirAll(dir, 0o755); err != nil {
		return diskError("create dir "+dir, err)
	}
	return syncDir(fsys, filepath.Dir(dir))
}

// writeFileAtomic replaces path with data: write path.tmp, fsync, rename,
// fsync the directory. A crash leaves either the old or the new content
// (and possibly a stray .tmp, which recovery deletes).
func writeFileAtomic(fsys vfs.FS, path string, data []byte) error {
	tmp := path + ".tmp"
	f, err := fsys.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return diskError("create "+tmp, err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		fsys.Remove(tmp)
		return diskError("write "+tmp, err)
	}
	if err := fsys.Rename(tmp, path); err != nil {
		fsys.Remove(tmp)
		return fmt.Errorf("storage: rename %s: %w", tmp, err)
	}
	return syncDir(fsys, filepath.Dir(path))
}

package storage

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"

	"github.com/kbroker/kbroker/internal/atomicfile"
)

// fileEnv is what segments and indexes of one log share for disk work: the
// fallocate seam (replaced by tests to inject ENOSPC) and whether the
// filesystem turned out not to support fallocate.
type fileEnv struct {
	fallocate   func(f *os.File, offset, length int64) error
	noFallocate atomic.Bool // fallocate returned EOPNOTSUPP once; use ftruncate
	logger      *slog.Logger
	// indexInterval is index.interval.bytes, for lazy index rebuilds.
	indexInterval atomic.Int64
}

// allocate reserves disk blocks for [offset, offset+length) of f. With
// extend the file size grows to cover the range (the .log file); without,
// the range is already inside the file (sparse index files) and the
// fallback when fallocate is unsupported is to do nothing, as Kafka does.
func (e *fileEnv) allocate(f *os.File, offset, length int64, extend bool) error {
	if length <= 0 {
		return nil
	}
	if !e.noFallocate.Load() {
		err := e.fallocate(f, offset, length)
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
func syncDir(dir string) error {
	return diskError("sync dir", atomicfile.SyncDir(dir))
}

// writeFileAtomic replaces path with data (atomicfile.WriteFile: write
// path.tmp, fsync, rename, fsync the directory). A crash leaves either the
// old or the new content (and possibly a stray .tmp, which recovery
// deletes).
func writeFileAtomic(path string, data []byte) error {
	return diskError("replace "+filepath.Base(path), atomicfile.WriteFile(path, data, 0o644))
}

//go:build unix

package storage

import (
	"fmt"

	"github.com/kbroker/kbroker/storage/vfs"
)

// Mappings are made through vfs (File.Mmap, FS.Msync, vfs.Munmap). A
// mapping is created once per segment state (active: read-write over the
// whole capacity; inactive: read-only over the file size) and never moves,
// so slices handed to readers stay valid until the segment's last reference
// is released (see segment.go).

// pageSize is the system page size, used to round mapping lengths.
var pageSize = vfs.PageSize

func roundUpToPage(n int64) int64 { return (n + pageSize - 1) / pageSize * pageSize }

// mmapFile maps length bytes of f. length may exceed the file size: pages
// past the end of the file must not be touched until the file is grown.
func mmapFile(f vfs.File, length int64, writable bool) ([]byte, error) {
	b, err := f.Mmap(length, writable)
	if err != nil {
		return nil, diskError(fmt.Sprintf("mmap %s", f.Name()), err)
	}
	return b, nil
}

// munmap releases a mapping made by mmapFile. nil is a no-op.
func munmap(b []byte) error {
	if err := vfs.Munmap(b); err != nil {
		return fmt.Errorf("storage: %w", err)
	}
	return nil
}

// msyncRange writes back b[from:to] of the mapping of the file name
// synchronously (through the file system, so that a crash model sees it).
func msyncRange(fsys vfs.FS, name string, b []byte, from, to int64) error {
	if to <= from {
		return nil
	}
	if err := fsys.Msync(name, b, from, to); err != nil {
		return fmt.Errorf("storage: %s: %w", name, err)
	}
	return nil
}

//go:build unix

package storage

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// This file is the only place that maps and unmaps memory. A mapping is
// created once per segment state (active: read-write over the whole
// capacity; inactive: read-only over the file size) and never moves, so
// slices handed to readers stay valid until the segment's last reference is
// released (see segment.go).

// pageSize is the system page size, used to round mapping lengths.
var pageSize = int64(os.Getpagesize())

func roundUpToPage(n int64) int64 { return (n + pageSize - 1) / pageSize * pageSize }

// mmapFile maps length bytes of f. length may exceed the file size: pages
// past the end of the file must not be touched until the file is grown.
func mmapFile(f *os.File, length int64, writable bool) ([]byte, error) {
	if length == 0 {
		return nil, nil
	}
	prot := unix.PROT_READ
	if writable {
		prot |= unix.PROT_WRITE
	}
	b, err := unix.Mmap(int(f.Fd()), 0, int(length), prot, unix.MAP_SHARED)
	if err != nil {
		return nil, diskError(fmt.Sprintf("mmap %s (%d bytes)", f.Name(), length), err)
	}
	return b, nil
}

// munmap releases a mapping made by mmapFile. nil is a no-op.
func munmap(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	if err := unix.Munmap(b); err != nil {
		return fmt.Errorf("storage: munmap: %w", err)
	}
	return nil
}

// msyncRange writes back b[from:to] synchronously. The start is rounded
// down to a page boundary as msync requires.
func msyncRange(b []byte, from, to int64) error {
	if to <= from {
		return nil
	}
	from = from / pageSize * pageSize
	if err := unix.Msync(b[from:to], unix.MS_SYNC); err != nil {
		return fmt.Errorf("storage: msync: %w", err)
	}
	return nil
}

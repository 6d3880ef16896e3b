//go:build unix && !linux

package vfs

import (
	"os"

	"golang.org/x/sys/unix"
)

// fallocate is not available here; storage grows files with ftruncate.
func fallocate(f *os.File, offset, length int64) error { return unix.EOPNOTSUPP }

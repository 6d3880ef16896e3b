//go:build unix && !linux

package storage

import (
	"os"

	"golang.org/x/sys/unix"
)

// osFallocate is not available here; segments grow with ftruncate instead.
func osFallocate(f *os.File, offset, length int64) error { return unix.EOPNOTSUPP }

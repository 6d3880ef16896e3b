package storage

import (
	"os"

	"golang.org/x/sys/unix"
)

// osFallocate is fallocate(2) mode 0, for tests that wrap the real call.
func osFallocate(f *os.File, offset, length int64) error {
	return unix.Fallocate(int(f.Fd()), 0, offset, length)
}

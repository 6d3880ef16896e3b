package vfs

import (
	"os"

	"golang.org/x/sys/unix"
)

// fallocate allocates [offset, offset+length) of f (mode 0: the file size
// grows when the range passes its end). Blocks are reserved now, so writes
// through a mapping can never hit ENOSPC (which would be a SIGBUS).
func fallocate(f *os.File, offset, length int64) error {
	return unix.Fallocate(int(f.Fd()), 0, offset, length)
}

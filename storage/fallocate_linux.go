package storage

import (
	"os"

	"golang.org/x/sys/unix"
)

// osFallocate allocates [offset, offset+length) of f (mode 0: the file size
// grows when the range passes its end). Blocks are reserved now, so writes
// through a mapping can never hit ENOSPC (which would be a SIGBUS).
func osFallocate(f *os.File, offset, length int64) error {
	for {
		err := unix.Fallocate(int(f.Fd()), 0, offset, length)
		if err != unix.EINTR {
			return err
		}
	}
}

//go:build unix

package protocol

import "syscall"

// syscallEMFILE is "too many open files": accept keeps going after a pause.
const syscallEMFILE = syscall.EMFILE

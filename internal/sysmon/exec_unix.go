//go:build unix

package sysmon

import (
	"os"
	"syscall"
)

// KeepAwake re-executes the process with Environ's GODEBUG, unless it
// needs no change. It returns only when it did not re-execute (no change,
// or the executable could not be found or run): the process then runs
// with the runtime as it is.
func KeepAwake() {
	env, changed := Environ(os.Environ())
	if !changed {
		return
	}
	exe, err := os.Executable()
	if err != nil {
		return
	}
	syscall.Exec(exe, os.Args, env)
}

//go:build unix

package storage

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// raiseOpenFileLimit sets the soft RLIMIT_NOFILE to the hard limit and
// returns both (and the soft limit before, if it changed).
func raiseOpenFileLimit() (soft, hard, raisedFrom uint64, err error) {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err != nil {
		return 0, 0, 0, fmt.Errorf("storage: getrlimit(RLIMIT_NOFILE): %w", err)
	}
	if rl.Cur >= rl.Max {
		return rl.Cur, rl.Max, 0, nil
	}
	before := rl.Cur
	rl.Cur = rl.Max
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &rl); err != nil {
		return before, rl.Max, 0, fmt.Errorf("storage: raise RLIMIT_NOFILE from %d to %d: %w", before, rl.Max, err)
	}
	return rl.Cur, rl.Max, before, nil
}

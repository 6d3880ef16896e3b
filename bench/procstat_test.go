package main

import (
	"os"
	"testing"
	"time"
)

// spin burns CPU for d of wall time on this goroutine.
func spin(d time.Duration) int {
	n := 0
	for end := time.Now().Add(d); time.Now().Before(end); n++ {
	}
	return n
}

// TestProcWatchRebaseDropsWarmUpCPU: CPU burnt before rebase (the warm-up)
// is not counted, CPU burnt after is.
func TestProcWatchRebaseDropsWarmUpCPU(t *testing.T) {
	w := watchProcs([]int{os.Getpid()})
	spin(300 * time.Millisecond)
	w.rebase()
	spin(100 * time.Millisecond)
	u := w.finish()
	if u.CPU >= 250*time.Millisecond {
		t.Fatalf("counted %v: the warm-up's 300 ms were not dropped", u.CPU)
	}
	if u.CPU <= 0 {
		t.Fatalf("counted %v: the measured spin is missing", u.CPU)
	}
}

package main

import (
	"os"
	"runtime"
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

// TestProcWatchCountsPageFaults: touching fresh memory shows as minor page
// faults (what kfake pays for every byte it keeps, and why its rate depends
// on how much fresh memory it must touch).
func TestProcWatchCountsPageFaults(t *testing.T) {
	w := watchProcs([]int{os.Getpid()})
	b := make([]byte, 64<<20)
	for i := 0; i < len(b); i += 4096 {
		b[i] = 1
	}
	u := w.finish()
	if u.Faults < 1000 {
		t.Fatalf("touching 64 MiB of fresh memory counted %d page faults", u.Faults)
	}
	runtime.KeepAlive(b)
}

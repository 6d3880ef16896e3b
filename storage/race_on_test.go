//go:build race

package storage

// raceEnabled: the race detector slows the crash suite about tenfold.
const raceEnabled = true

//go:build !race

package replication

// raceDetector reports whether the tests run under the race detector.
const raceDetector = false

//go:build !recordcount

package record

// countParse counts header parses under the recordcount build tag
// (parsecount_counting.go); in every other build it is nothing.
func countParse([]byte) {}

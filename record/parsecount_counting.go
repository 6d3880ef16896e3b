//go:build recordcount

package record

import (
	"sync"
	"unsafe"
)

// Under the recordcount build tag (tests only: go test -tags recordcount)
// every ParseBatchHeader is counted against the address of the buffer it
// parsed, so that a test can show that the produce path parses a batch's
// header once however many layers it crosses. Keyed by the first byte's
// pointer, which keeps counted buffers alive: fine for a test binary.
var parses struct {
	sync.Mutex
	n map[*byte]int
}

func countParse(b []byte) {
	parses.Lock()
	defer parses.Unlock()
	if parses.n == nil {
		parses.n = make(map[*byte]int)
	}
	parses.n[unsafe.SliceData(b)]++
}

// ParseCount is how many times a batch header starting at b[0] was parsed.
func ParseCount(b []byte) int {
	parses.Lock()
	defer parses.Unlock()
	return parses.n[unsafe.SliceData(b)]
}

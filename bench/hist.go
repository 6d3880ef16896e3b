package main

import (
	"math/bits"
	"sync/atomic"
	"time"
)

// hist is a lock-free log-linear latency histogram in microseconds: 64
// sub-buckets per power of two, so a quantile is within 1/64 (1.6%) of the
// true value. Safe for concurrent Record calls.
type hist struct {
	counts [64 * 64]atomic.Uint64
	total  atomic.Uint64
}

const histSub = 64

func histIndex(us uint64) int {
	if us < histSub {
		return int(us)
	}
	exp := bits.Len64(us) - 6 // us >> exp is in [32, 64)
	sub := us >> uint(exp)    // top 6 bits
	return exp*32 + int(sub)
}

// histValue is the upper bound of bucket i, in microseconds.
func histValue(i int) uint64 {
	if i < histSub {
		return uint64(i)
	}
	exp := (i - 32) / 32
	sub := uint64(i - exp*32)
	return (sub+1)<<uint(exp) - 1
}

func (h *hist) record(d time.Duration) {
	us := uint64(max(d.Microseconds(), 0))
	i := min(histIndex(us), len(h.counts)-1)
	h.counts[i].Add(1)
	h.total.Add(1)
}

// quantile returns the q-quantile (0 < q <= 1), or 0 for an empty histogram.
func (h *hist) quantile(q float64) time.Duration {
	n := h.total.Load()
	if n == 0 {
		return 0
	}
	rank := uint64(q*float64(n) + 0.5)
	rank = max(rank, 1)
	var seen uint64
	for i := range h.counts {
		seen += h.counts[i].Load()
		if seen >= rank {
			return time.Duration(histValue(i)) * time.Microsecond
		}
	}
	return time.Duration(histValue(len(h.counts)-1)) * time.Microsecond
}

func (h *hist) count() uint64 { return h.total.Load() }

package main

import (
	"testing"
	"time"
)

func TestHistIndexMonotonic(t *testing.T) {
	prev := -1
	for us := uint64(0); us < 1<<24; us += 1 + us/97 {
		i := histIndex(us)
		if i < prev {
			t.Fatalf("index of %d is %d < %d", us, i, prev)
		}
		if v := histValue(i); v < us || float64(v-us) > float64(us)/32+1 {
			t.Fatalf("bucket %d of %dus has bound %d", i, us, v)
		}
		prev = i
	}
}

func TestHistQuantiles(t *testing.T) {
	var h hist
	for i := 1; i <= 10000; i++ {
		h.record(time.Duration(i) * time.Microsecond)
	}
	for _, c := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 5000 * time.Microsecond}, {0.99, 9900 * time.Microsecond}, {0.999, 9990 * time.Microsecond}} {
		got := h.quantile(c.q)
		if got < c.want || got > c.want+c.want/30 {
			t.Errorf("q%.3f = %v, want about %v", c.q, got, c.want)
		}
	}
}

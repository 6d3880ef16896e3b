package chaos

import (
	"slices"
	"testing"
	"time"
)

func TestScheduleIsReplayable(t *testing.T) {
	kinds := []Kind{{"kill", time.Second, 3 * time.Second}, {"pause", 500 * time.Millisecond, 8 * time.Second}}
	a := Schedule(42, kinds, time.Minute, time.Second, 2*time.Second)
	b := Schedule(42, kinds, time.Minute, time.Second, 2*time.Second)
	c := Schedule(43, kinds, time.Minute, time.Second, 2*time.Second)
	if len(a) < 5 || !slices.Equal(a, b) {
		t.Fatalf("seed 42 gave %v then %v", a, b)
	}
	if slices.Equal(a, c) {
		t.Fatal("seeds 42 and 43 gave the same schedule")
	}
	seen := map[string]bool{}
	end := time.Duration(0)
	for _, s := range a {
		seen[s.Kind] = true
		if s.At < end+time.Second || s.At+s.Hold > time.Minute {
			t.Fatalf("step %+v overlaps the previous one (ended %v) or the end", s, end)
		}
		end = s.At + s.Hold
	}
	if !seen["kill"] || !seen["pause"] {
		t.Fatalf("kinds used: %v", seen)
	}
}

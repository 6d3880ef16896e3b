package sharepartition

import (
	"math/rand/v2"
	"testing"
)

// The ring window holds the same records at the same offsets as a plain
// slice would, through pushes, advances and drops that wrap it around and
// grow it.
func TestWindowRingMatchesSlice(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	var w window
	var model []inflight
	start := int64(0)
	for step := range 20000 {
		switch op := rng.IntN(10); {
		case op < 6: // push
			r := inflight{state: RecordState([]RecordState{Available, Acquired, Acknowledged, Archived}[rng.IntN(4)]), deliveryCount: int16(step)}
			w.push(r)
			model = append(model, r)
		case op < 9: // advance
			w.advance()
			k := 0
			for k < len(model) && model[k].state.terminal() && !model[k].pending {
				k++
			}
			model, start = model[k:], start+int64(k)
		default: // drop below
			off := start + int64(rng.IntN(len(model)+3))
			w.dropBelow(off)
			if off > start {
				if off-start >= int64(len(model)) {
					model = nil
				} else {
					model = model[off-start:]
				}
				start = off
			}
		}
		if w.start != start || w.size() != len(model) || w.end() != start+int64(len(model))-1 {
			t.Fatalf("step %d: window [%d, %d] of %d, want [%d, %d] of %d", step, w.start, w.end(), w.size(), start, start+int64(len(model))-1, len(model))
		}
		for i, r := range model {
			if *w.at(start + int64(i)) != r {
				t.Fatalf("step %d: offset %d is %+v, want %+v", step, start+int64(i), *w.at(start + int64(i)), r)
			}
		}
		want := start + int64(len(model))
		for i, r := range model {
			if r.state == Available && !r.pending {
				want = start + int64(i)
				break
			}
		}
		if got := w.nextFetchOffset(); got != want {
			t.Fatalf("step %d: next fetch offset %d, want %d", step, got, want)
		}
	}
}

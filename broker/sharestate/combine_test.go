package sharestate

import (
	"math/rand/v2"
	"reflect"
	"testing"
)

const (
	av = DeliveryAvailable
	ac = DeliveryAcknowledged
	ar = DeliveryArchived
)

// Cases in the manner of Kafka's PersisterStateBatchCombinerTest.
func TestCombineBatches(t *testing.T) {
	cases := []struct {
		name         string
		soFar, added []StateBatch
		start        int64
		want         []StateBatch
	}{
		{"nothing", nil, nil, -1, []StateBatch{}},
		{"one batch", nil, []StateBatch{sb(0, 9, av, 1)}, -1, []StateBatch{sb(0, 9, av, 1)}},
		{"contiguous same state coalesce", []StateBatch{sb(0, 4, ac, 1)}, []StateBatch{sb(5, 9, ac, 1)}, -1, []StateBatch{sb(0, 9, ac, 1)}},
		{"contiguous other state stay apart", []StateBatch{sb(0, 4, ac, 1)}, []StateBatch{sb(5, 9, ar, 1)}, -1, []StateBatch{sb(0, 4, ac, 1), sb(5, 9, ar, 1)}},
		{"same range higher state wins", []StateBatch{sb(0, 9, av, 1)}, []StateBatch{sb(0, 9, ac, 1)}, -1, []StateBatch{sb(0, 9, ac, 1)}},
		{"same range lower state loses", []StateBatch{sb(0, 9, ac, 1)}, []StateBatch{sb(0, 9, av, 1)}, -1, []StateBatch{sb(0, 9, ac, 1)}},
		{"higher count wins over state", []StateBatch{sb(0, 9, ac, 1)}, []StateBatch{sb(0, 9, av, 2)}, -1, []StateBatch{sb(0, 9, av, 2)}},
		{"inner ack splits an available batch", []StateBatch{sb(0, 9, av, 1)}, []StateBatch{sb(3, 5, ac, 1)}, -1,
			[]StateBatch{sb(0, 2, av, 1), sb(3, 5, ac, 1), sb(6, 9, av, 1)}},
		{"inner weaker batch is swallowed", []StateBatch{sb(0, 9, ar, 3)}, []StateBatch{sb(3, 5, av, 1)}, -1, []StateBatch{sb(0, 9, ar, 3)}},
		{"overlapping tail", []StateBatch{sb(0, 9, av, 1)}, []StateBatch{sb(5, 14, ac, 1)}, -1, []StateBatch{sb(0, 4, av, 1), sb(5, 14, ac, 1)}},
		{"weaker overlapping tail keeps its rest", []StateBatch{sb(0, 9, ac, 1)}, []StateBatch{sb(5, 14, av, 1)}, -1, []StateBatch{sb(0, 9, ac, 1), sb(10, 14, av, 1)}},
		{"gap stays a gap", []StateBatch{sb(0, 4, ac, 1)}, []StateBatch{sb(10, 14, ac, 1)}, -1, []StateBatch{sb(0, 4, ac, 1), sb(10, 14, ac, 1)}},
		{"start offset drops and trims", []StateBatch{sb(0, 4, ac, 1), sb(5, 9, av, 1)}, []StateBatch{sb(10, 12, ar, 1)}, 7,
			[]StateBatch{sb(7, 9, av, 1), sb(10, 12, ar, 1)}},
		{"start offset past all", []StateBatch{sb(0, 4, ac, 1)}, nil, 5, []StateBatch{}},
		{"inverted batch ignored", nil, []StateBatch{sb(5, 4, ac, 1), sb(0, 0, av, 1)}, -1, []StateBatch{sb(0, 0, av, 1)}},
		{"many overlaps", []StateBatch{sb(0, 100, av, 1)}, []StateBatch{sb(10, 20, ac, 1), sb(15, 30, av, 2), sb(25, 40, ar, 2)}, -1,
			[]StateBatch{sb(0, 9, av, 1), sb(10, 14, ac, 1), sb(15, 24, av, 2), sb(25, 40, ar, 2), sb(41, 100, av, 1)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := combineBatches(c.soFar, c.added, c.start)
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("combine = %v, want %v", got, c.want)
			}
			if !reflect.DeepEqual(got, combineOracle(c.soFar, c.added, c.start)) {
				t.Fatalf("oracle disagrees")
			}
		})
	}
}

// combineOracle computes the merge offset by offset: the strongest batch
// covering each offset, then runs.
func combineOracle(soFar, added []StateBatch, start int64) []StateBatch {
	best := map[int64]StateBatch{}
	lo, hi := int64(1)<<62, int64(-1)
	for _, list := range [][]StateBatch{soFar, added} {
		for _, b := range list {
			for o := b.FirstOffset; o <= b.LastOffset; o++ {
				if start != -1 && o < start {
					continue
				}
				if cur, ok := best[o]; !ok || higher(b, cur) {
					best[o] = b
				}
				lo, hi = min(lo, o), max(hi, o)
			}
		}
	}
	out := []StateBatch{}
	for o := lo; o <= hi; o++ {
		b, ok := best[o]
		if !ok {
			continue
		}
		if n := len(out); n > 0 && out[n-1].LastOffset+1 == o && out[n-1].DeliveryState == b.DeliveryState && out[n-1].DeliveryCount == b.DeliveryCount {
			out[n-1].LastOffset = o
			continue
		}
		out = append(out, sb(o, o, b.DeliveryState, b.DeliveryCount))
	}
	return out
}

func randomBatches(r *rand.Rand, n int) []StateBatch {
	states := []int8{av, ac, ar}
	var out []StateBatch
	for range n {
		f := r.Int64N(60)
		out = append(out, sb(f, f+r.Int64N(15), states[r.IntN(3)], int16(1+r.IntN(3))))
	}
	return out
}

func TestCombineBatchesRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 3000 {
		a, b := randomBatches(r, r.IntN(6)), randomBatches(r, r.IntN(6))
		start := int64(-1)
		if i%3 == 0 {
			start = r.Int64N(50)
		}
		if got, want := combineBatches(a, b, start), combineOracle(a, b, start); !reflect.DeepEqual(got, want) {
			t.Fatalf("combine(%v, %v, %d)\n = %v\nwant %v", a, b, start, got, want)
		}
	}
}

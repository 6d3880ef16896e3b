package replication

import (
	"testing"
	"time"
)

func TestHighWatermark(t *testing.T) {
	for _, tc := range []struct {
		name               string
		current            int64
		committed, maximal []int32
		leos               map[int32]int64
		minISR             int32
		want               int64
	}{
		{"single replica follows its LEO", 0, []int32{1}, []int32{1}, map[int32]int64{1: 10}, 1, 10},
		{"min over the ISR", 0, []int32{1, 2, 3}, []int32{1, 2, 3}, map[int32]int64{1: 10, 2: 7, 3: 9}, 1, 7},
		{"never backwards", 8, []int32{1, 2}, []int32{1, 2}, map[int32]int64{1: 10, 2: 5}, 1, 8},
		{"held while ISR < min.insync.replicas", 3, []int32{1}, []int32{1}, map[int32]int64{1: 10}, 2, 3},
		{"unknown follower LEO holds it", 3, []int32{1, 2}, []int32{1, 2}, map[int32]int64{1: 10}, 1, 3},
		{"replicas outside the ISR do not count", 0, []int32{1, 2}, []int32{1, 2}, map[int32]int64{1: 10, 2: 10, 3: 0}, 2, 10},
		// KIP-966: an expansion the controller has not committed does not
		// lift the ISR to min.insync.replicas.
		{"held while only an expansion in flight reaches min.insync.replicas", 3,
			[]int32{1}, []int32{1, 2}, map[int32]int64{1: 10, 2: 10}, 2, 3},
		// ...but it does count for the minimum once the ISR is large enough.
		{"an expansion in flight holds the HW at its LEO", 0,
			[]int32{1, 2}, []int32{1, 2, 3}, map[int32]int64{1: 10, 2: 10, 3: 4}, 2, 4},
		// A shrink in flight: the committed ISR (the larger one) counts.
		{"a shrink in flight counts the member still committed", 0,
			[]int32{1, 2}, []int32{1, 2}, map[int32]int64{1: 10, 2: 6}, 2, 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := HighWatermark(tc.current, tc.committed, tc.maximal, tc.leos, tc.minISR); got != tc.want {
				t.Fatalf("HighWatermark = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestEffectiveMinISR(t *testing.T) {
	for _, tc := range []struct {
		minISR   int32
		replicas int
		want     int32
	}{{2, 3, 2}, {3, 3, 3}, {3, 1, 1}, {2, 2, 2}, {0, 3, 1}, {5, 0, 1}} {
		if got := EffectiveMinISR(tc.minISR, tc.replicas); got != tc.want {
			t.Errorf("EffectiveMinISR(%d, %d) = %d, want %d", tc.minISR, tc.replicas, got, tc.want)
		}
	}
}

// Kafka's Replica.updateFetchState: caught up now if the fetch reaches the
// leader's LEO; caught up as of the previous fetch if it reaches the LEO the
// leader had then.
func TestObserveFetchLastCaughtUp(t *testing.T) {
	t0 := time.Unix(1000, 0)
	f := &FollowerProgress{ID: 2}
	f.observeFetch(5, 10, t0) // behind
	if !f.LastCaughtUp.IsZero() {
		t.Fatalf("behind follower marked caught up at %v", f.LastCaughtUp)
	}
	f.observeFetch(10, 20, t0.Add(time.Second)) // reached the LEO of the previous fetch
	if !f.LastCaughtUp.Equal(t0) {
		t.Fatalf("LastCaughtUp = %v, want %v", f.LastCaughtUp, t0)
	}
	f.observeFetch(20, 20, t0.Add(2*time.Second)) // fully caught up
	if !f.LastCaughtUp.Equal(t0.Add(2 * time.Second)) {
		t.Fatalf("LastCaughtUp = %v", f.LastCaughtUp)
	}
}

func TestShrinkCandidates(t *testing.T) {
	now := time.Unix(1000, 0)
	followers := map[int32]*FollowerProgress{
		2: {ID: 2, LastCaughtUp: now.Add(-time.Second)},
		3: {ID: 3, LastCaughtUp: now.Add(-time.Minute)},
	}
	got := ShrinkCandidates(1, []int32{1, 2, 3, 4}, followers, now, 30*time.Second)
	if len(got) != 2 || got[0] != 3 || got[1] != 4 {
		t.Fatalf("ShrinkCandidates = %v, want [3 4] (3 lagging, 4 never fetched)", got)
	}
}

func TestCanJoinISR(t *testing.T) {
	f := &FollowerProgress{LEO: 10}
	if !CanJoinISR(f, 10, 5) {
		t.Fatal("follower at HW should join")
	}
	if CanJoinISR(f, 11, 5) {
		t.Fatal("follower below HW must not join")
	}
	if CanJoinISR(f, 8, 12) {
		t.Fatal("follower below the epoch start offset must not join")
	}
}

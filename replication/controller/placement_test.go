package controller

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// The fixed-start cases are AdminUtils' rack-unaware assignment (Kafka's
// AdminRackAwareTest / ReplicaAssignmentTest "testReplicaAssignment" shape):
// 5 brokers, 10 partitions, RF 3, start index 0, shift 0.
func TestPlaceRoundRobinMatchesKafka(t *testing.T) {
	brokers := []int32{0, 1, 2, 3, 4}
	got := placeRoundRobin(brokers, 10, 3, 0, 0, 0)
	want := [][]int32{
		{0, 1, 2}, {1, 2, 3}, {2, 3, 4}, {3, 4, 0}, {4, 0, 1},
		{0, 2, 3}, {1, 3, 4}, {2, 4, 0}, {3, 0, 1}, {4, 1, 2},
	}
	for i := range want {
		if !slices.Equal(got[i], want[i]) {
			t.Fatalf("partition %d: got %v want %v (all %v)", i, got[i], want[i], got)
		}
	}
}

func TestPlaceShiftingStartAndFirstPartition(t *testing.T) {
	brokers := []int32{10, 20, 30}
	// start index 1: partition 0's first replica is the second broker.
	got := placeRoundRobin(brokers, 3, 2, 0, 1, 0)
	if got[0][0] != 20 || got[1][0] != 30 || got[2][0] != 10 {
		t.Fatalf("leaders %v", got)
	}
	// Adding partitions continues the pattern from the first new partition id.
	all := placeRoundRobin(brokers, 6, 2, 0, 1, 2)
	tail := placeRoundRobin(brokers, 3, 2, 3, 1, 2)
	for i := range tail {
		if !slices.Equal(all[3+i], tail[i]) {
			t.Fatalf("partition %d: from scratch %v, appended %v", 3+i, all[3+i], tail[i])
		}
	}
}

func TestPlaceDistribution(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	brokers := []int32{1, 2, 3, 4}
	got, err := placeReplicas(brokers, nil, 40, 3, 0, rnd)
	if err != nil {
		t.Fatal(err)
	}
	leaders := map[int32]int{}
	replicas := map[int32]int{}
	for p, rs := range got {
		if len(rs) != 3 {
			t.Fatalf("partition %d: %v", p, rs)
		}
		seen := map[int32]bool{}
		for _, r := range rs {
			if seen[r] {
				t.Fatalf("partition %d repeats broker %d: %v", p, r, rs)
			}
			seen[r] = true
			replicas[r]++
		}
		leaders[rs[0]]++
	}
	for _, b := range brokers {
		if leaders[b] != 10 || replicas[b] != 30 {
			t.Fatalf("broker %d leads %d (want 10) and holds %d (want 30): %v", b, leaders[b], replicas[b], got)
		}
	}
}

func TestPlaceStartIsRandom(t *testing.T) {
	rnd := rand.New(rand.NewPCG(7, 7))
	firsts := map[int32]bool{}
	for range 50 {
		got, err := placeReplicas([]int32{1, 2, 3}, nil, 1, 1, 0, rnd)
		if err != nil {
			t.Fatal(err)
		}
		firsts[got[0][0]] = true
	}
	if len(firsts) != 3 {
		t.Fatalf("first replica of partition 0 took only %v over 50 topics", firsts)
	}
}

func TestPlaceReplicationFactorTooLarge(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 1))
	if _, err := placeReplicas([]int32{1, 2}, nil, 1, 3, 0, rnd); err == nil {
		t.Fatal("RF 3 over 2 brokers: no error")
	}
	if _, err := placeReplicas(nil, nil, 1, 1, 0, rnd); err == nil {
		t.Fatal("no brokers: no error")
	}
	if _, err := placeReplicas([]int32{1}, nil, 1, 0, 0, rnd); err == nil {
		t.Fatal("RF 0: no error")
	}
	got, err := placeReplicas([]int32{5}, nil, 3, 1, 0, rnd)
	if err != nil || len(got) != 3 || got[2][0] != 5 {
		t.Fatalf("single broker: %v %v", got, err)
	}
}

package controller

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// Kafka's AdminRackAwareTest.testGetRackAlternatedBrokerListAndAssignReplicasToBrokers.
func TestPlaceRackAwareMatchesKafka(t *testing.T) {
	racks := map[int32]string{0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}
	brokers := []int32{0, 1, 2, 3, 4, 5}
	if got, want := rackAlternated(brokers, racks), []int32{0, 3, 1, 5, 4, 2}; !slices.Equal(got, want) {
		t.Fatalf("rack-alternated list %v, want %v", got, want)
	}
	got := placeRackAware(brokers, racks, 7, 3, 0, 0, 0)
	want := [][]int32{{0, 3, 1}, {3, 1, 5}, {1, 5, 4}, {5, 4, 2}, {4, 2, 0}, {2, 0, 3}, {0, 4, 2}}
	for p := range want {
		if !slices.Equal(got[p], want[p]) {
			t.Errorf("partition %d: %v, want %v", p, got[p], want[p])
		}
	}
}

// RF=3 over 3 racks: one copy per rack for every partition, whatever the
// random start; leaders spread over every broker.
func TestPlaceReplicasOneCopyPerRack(t *testing.T) {
	racks := map[int32]string{1: "a", 2: "b", 3: "c", 4: "a", 5: "b", 6: "c"}
	for _, brokers := range [][]int32{{1, 2, 3}, {1, 2, 3, 4, 5, 6}} {
		for seed := range uint64(20) {
			got, err := placeReplicas(brokers, racks, 30, 3, 0, rand.New(rand.NewPCG(seed, 1)))
			if err != nil {
				t.Fatal(err)
			}
			leaders := map[int32]int{}
			for p, replicas := range got {
				seen := map[string]bool{}
				for _, id := range replicas {
					seen[racks[id]] = true
				}
				if len(seen) != 3 {
					t.Fatalf("brokers %v seed %d partition %d: replicas %v span racks %v", brokers, seed, p, replicas, seen)
				}
				leaders[replicas[0]]++
			}
			if len(leaders) != len(brokers) {
				t.Fatalf("brokers %v seed %d: leaders only on %v", brokers, seed, leaders)
			}
		}
	}
}

// A broker without a rack makes the placement rack-unaware (Kafka's
// RackAwareMode.Safe), not an error.
func TestPlaceReplicasMixedRacksIsUnaware(t *testing.T) {
	racks := map[int32]string{1: "a", 2: "a", 3: ""}
	got, err := placeReplicas([]int32{1, 2, 3}, racks, 3, 2, 0, rand.New(rand.NewPCG(1, 1)))
	if err != nil || len(got) != 3 {
		t.Fatalf("%v %v", got, err)
	}
}

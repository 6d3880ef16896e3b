package controller

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
)

// placeReplicas assigns replicas for nPartitions new partitions numbered from
// firstPartition, over brokers (live broker ids sorted ascending) whose
// racks (broker.rack) are in racks. When every broker has a rack it is
// Kafka's rack-aware assignment (AdminUtils.assignReplicasToBrokersRackAware,
// placeRackAware); otherwise the rack-unaware one
// (AdminUtils.assignReplicasToBrokersRackUnaware), as Kafka's
// RackAwareMode.Safe: partition p's first replica is
// brokers[(p+startIndex) % n], the others follow at a shift that grows by
// one every n partitions, so that leaders and followers both spread evenly.
// startIndex and the initial shift are random.
func placeReplicas(brokers []int32, racks map[int32]string, nPartitions int, rf int, firstPartition int, rnd *rand.Rand) ([][]int32, error) {
	if err := checkReplicationFactor(len(brokers), rf); err != nil {
		return nil, err
	}
	start, shift := rnd.IntN(len(brokers)), rnd.IntN(len(brokers))
	if allRacked(brokers, racks) {
		return placeRackAware(brokers, racks, nPartitions, rf, firstPartition, start, shift), nil
	}
	return placeRoundRobin(brokers, nPartitions, rf, firstPartition, start, shift), nil
}

// allRacked reports whether every broker has a rack.
func allRacked(brokers []int32, racks map[int32]string) bool {
	for _, id := range brokers {
		if racks[id] == "" {
			return false
		}
	}
	return len(brokers) > 0
}

// checkReplicationFactor returns the INVALID_REPLICATION_FACTOR message, if any.
func checkReplicationFactor(liveBrokers, rf int) error {
	if rf <= 0 {
		return errors.New("Replication factor must be larger than 0, or -1 to use the default value.")
	}
	if rf > liveBrokers {
		return fmt.Errorf("Unable to replicate the partition %d time(s): The target replication factor "+
			"of %d cannot be reached because only %d broker(s) are registered.", rf, rf, liveBrokers)
	}
	return nil
}

// placeRoundRobin is the deterministic core of placeReplicas.
func placeRoundRobin(brokers []int32, nPartitions, rf, firstPartition, startIndex, shift int) [][]int32 {
	n := len(brokers)
	return walkPartitions(n, nPartitions, firstPartition, startIndex, shift, func(first, shift int) []int32 {
		replicas := make([]int32, 0, rf)
		replicas = append(replicas, brokers[first])
		for j := range rf - 1 {
			replicas = append(replicas, brokers[(first+1+(shift+j)%(n-1))%n])
		}
		return replicas
	})
}

// walkPartitions is the loop of Kafka's assignments (AdminUtils): new
// partition p's first replica is at (p+startIndex) % n in a list of n
// brokers, and the shift of its other replicas grows by one every n
// partitions. place returns the replicas of one partition.
func walkPartitions(n, nPartitions, firstPartition, startIndex, shift int, place func(first, shift int) []int32) [][]int32 {
	out := make([][]int32, 0, nPartitions)
	p := max(0, firstPartition)
	for range nPartitions {
		if p > 0 && p%n == 0 {
			shift++
		}
		out = append(out, place((p+startIndex)%n, shift))
		p++
	}
	return out
}

// placeRackAware is the deterministic core of Kafka's rack-aware
// assignment. Brokers are listed alternating racks (rackAlternated); each
// partition's first replica walks that list as placeRoundRobin walks the
// brokers, and each further replica is the next broker along the shifted
// walk whose rack holds no replica of the partition yet (while some rack
// holds none) and which holds none itself (while some broker holds none).
// So RF copies land in min(RF, racks) racks, one per rack first.
func placeRackAware(brokers []int32, racks map[int32]string, nPartitions, rf, firstPartition, startIndex, shift int) [][]int32 {
	arranged := rackAlternated(brokers, racks)
	n := len(arranged)
	numRacks := len(distinctRacks(brokers, racks))
	return walkPartitions(n, nPartitions, firstPartition, startIndex, shift, func(first, shift int) []int32 {
		leader := arranged[first]
		replicas := append(make([]int32, 0, rf), leader)
		racksUsed := map[string]bool{racks[leader]: true}
		brokersUsed := map[int32]bool{leader: true}
		k := 0
		for range rf - 1 {
			for {
				b := arranged[(first+1+(shift*numRacks+k)%(n-1))%n]
				k++
				rack := racks[b]
				if (!racksUsed[rack] || len(racksUsed) == numRacks) && (!brokersUsed[b] || len(brokersUsed) == n) {
					replicas = append(replicas, b)
					racksUsed[rack], brokersUsed[b] = true, true
					break
				}
			}
		}
		return replicas
	})
}

// rackAlternated lists the brokers taking one from each rack in turn,
// racks in name order and each rack's brokers ascending (Kafka's
// getRackAlternatedBrokerList): racks a={1,2}, b={3}, c={4} give 1 3 4 2.
func rackAlternated(brokers []int32, racks map[int32]string) []int32 {
	byRack := map[string][]int32{}
	for _, id := range brokers {
		byRack[racks[id]] = append(byRack[racks[id]], id)
	}
	names := distinctRacks(brokers, racks)
	for _, r := range names {
		slices.Sort(byRack[r])
	}
	out := make([]int32, 0, len(brokers))
	for i := 0; len(out) < len(brokers); i++ {
		for _, r := range names {
			if i < len(byRack[r]) {
				out = append(out, byRack[r][i])
			}
		}
	}
	return out
}

// distinctRacks returns the brokers' racks, sorted.
func distinctRacks(brokers []int32, racks map[int32]string) []string {
	var names []string
	for _, id := range brokers {
		if !slices.Contains(names, racks[id]) {
			names = append(names, racks[id])
		}
	}
	slices.Sort(names)
	return names
}

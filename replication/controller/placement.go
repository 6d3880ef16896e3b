package controller

import (
	"errors"
	"fmt"
	"math/rand/v2"
)

// placeReplicas assigns replicas for nPartitions new partitions numbered from
// firstPartition, over brokers (live broker ids sorted ascending). It is
// Kafka's rack-unaware assignment (AdminUtils.assignReplicasToBrokersRackUnaware):
// partition p's first replica is brokers[(p+startIndex) % n], the others
// follow at a shift that grows by one every n partitions, so that leaders and
// followers both spread evenly. startIndex and the initial shift are random.
func placeReplicas(brokers []int32, nPartitions int, rf int, firstPartition int, rnd *rand.Rand) ([][]int32, error) {
	if err := checkReplicationFactor(len(brokers), rf); err != nil {
		return nil, err
	}
	return placeRoundRobin(brokers, nPartitions, rf, firstPartition, rnd.IntN(len(brokers)), rnd.IntN(len(brokers))), nil
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
	out := make([][]int32, 0, nPartitions)
	p := max(0, firstPartition)
	for range nPartitions {
		if p > 0 && p%n == 0 {
			shift++
		}
		first := (p + startIndex) % n
		replicas := make([]int32, 0, rf)
		replicas = append(replicas, brokers[first])
		for j := range rf - 1 {
			replicas = append(replicas, brokers[(first+1+(shift+j)%(n-1))%n])
		}
		out = append(out, replicas)
		p++
	}
	return out
}

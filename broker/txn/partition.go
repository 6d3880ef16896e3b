package txn

import "github.com/kbroker/kbroker/broker/group"

// PartitionFor is abs(javaHashCode(id)) % numPartitions, with Java's
// String.hashCode over UTF-16 code units and Kafka's Utils.abs, which maps
// Integer.MIN_VALUE to 0. It is the group coordinator's function: both
// topics place keys alike.
func PartitionFor(transactionalID string, numPartitions int32) int32 {
	return group.PartitionFor(transactionalID, numPartitions)
}

package sharestate

import (
	"context"
	"log/slog"
	"strconv"
	"time"

	"github.com/kbroker/kbroker/broker/group"
	"github.com/kbroker/kbroker/broker/txn"
	"github.com/kbroker/kbroker/internal/coordkit"
)

// StateLog is one __share_group_state partition as the coordinator sees it.
type StateLog interface {
	// Append writes records as one batch and returns the offset of the
	// first once they are committed (acks=all: the high watermark passed
	// them). It fails when the broker is not leader any more,
	// NOT_ENOUGH_REPLICAS, or on a timeout (a *kerr.Error where there is
	// one) and must return soon after ctx is cancelled.
	Append(ctx context.Context, records []Record) (baseOffset int64, err error)
	// DeleteRecordsBefore moves the partition's log start offset up to
	// offset (DeleteRecords): the records below it are redundant. The topic
	// is not compacted (cleanup.policy=delete, retention.ms=-1); this is
	// how it stays small.
	DeleteRecordsBefore(ctx context.Context, offset int64) error
}

// LoggedRecord is a record read back from the partition, with its offset.
type LoggedRecord struct {
	Offset int64
	Record
}

// Options configure a Coordinator. Zero fields get Kafka's defaults.
type Options struct {
	NumPartitions     int32 // share.coordinator.state.topic.num.partitions (50)
	ReplicationFactor int16 // share.coordinator.state.topic.replication.factor (3)
	MinISR            int32 // share.coordinator.state.topic.min.isr (2)
	SegmentBytes      int32 // share.coordinator.state.topic.segment.bytes (100 MiB)

	// UpdatesPerSnapshot: after this many ShareUpdate records of a key the
	// next write is a ShareSnapshot (share.coordinator.snapshot.update.records.per.snapshot, 500).
	UpdatesPerSnapshot int
	// WriteTimeout bounds one append (share.coordinator.write.timeout.ms, 5s).
	WriteTimeout time.Duration
	// PruneInterval is how often redundant records are deleted
	// (share.coordinator.state.topic.prune.interval.ms, 5 min).
	PruneInterval time.Duration
	// ColdSnapshotInterval: a key not written for this long is snapshotted
	// again so that its old records can be pruned
	// (share.coordinator.cold.partition.snapshot.interval.ms, 5 min).
	ColdSnapshotInterval time.Duration
	// MaxBatchOps bounds how many queued requests of one partition share an
	// append (group commit).
	MaxBatchOps int

	// PartitionExists reports whether a topic id and partition exist in the
	// cluster metadata; writes and reads for others get
	// UNKNOWN_TOPIC_OR_PARTITION. Nil: every partition exists.
	PartitionExists func(topicID [16]byte, partition int32) bool

	// Clock is the injected time (real time when unset).
	coordkit.Clock

	Logger *slog.Logger
}

func (o Options) withDefaults() Options {
	positive32(&o.NumPartitions, 50)
	positive32(&o.MinISR, 2)
	positive32(&o.SegmentBytes, 100<<20)
	if o.ReplicationFactor <= 0 {
		o.ReplicationFactor = 3
	}
	for _, d := range []struct {
		v   *time.Duration
		def time.Duration
	}{{&o.WriteTimeout, 5 * time.Second}, {&o.PruneInterval, 5 * time.Minute}, {&o.ColdSnapshotInterval, 5 * time.Minute}} {
		if *d.v <= 0 {
			*d.v = d.def
		}
	}
	if o.UpdatesPerSnapshot <= 0 {
		o.UpdatesPerSnapshot = defaultSnapshotsPerUpdates
	}
	if o.MaxBatchOps <= 0 {
		o.MaxBatchOps = 256
	}
	if o.PartitionExists == nil {
		o.PartitionExists = func([16]byte, int32) bool { return true }
	}
	o.Clock = o.Clock.OrDefault()
	o.Logger = coordkit.LoggerOrDiscard(o.Logger)
	return o
}

func positive32(v *int32, def int32) {
	if *v <= 0 {
		*v = def
	}
}

// StateTopicName is the internal topic of the share coordinator.
const StateTopicName = "__share_group_state"

// TopicSpec is how the broker creates __share_group_state (txn's type:
// the broker creates both internal topics the same way).
type TopicSpec = txn.TopicSpec

// StateTopic returns the spec of __share_group_state for a cluster of
// brokers live brokers, with the configs of Kafka's
// ShareCoordinatorService.shareGroupStateTopicConfigs. As for
// __transaction_state (issue 14), the replication factor is lowered to the
// cluster size, and min.insync.replicas with it.
func (o Options) StateTopic(brokers int) TopicSpec {
	o = o.withDefaults()
	rf := o.ReplicationFactor
	if brokers > 0 {
		rf = min(rf, int16(min(brokers, 1<<15-1)))
	}
	return TopicSpec{
		Partitions:        o.NumPartitions,
		ReplicationFactor: rf,
		Configs: map[string]string{
			"cleanup.policy":      "delete", // KIP-932: pruned by DeleteRecords, never compacted
			"compression.type":    "producer",
			"segment.bytes":       strconv.Itoa(int(o.SegmentBytes)),
			"min.insync.replicas": strconv.Itoa(int(min(o.MinISR, int32(rf)))),
			"retention.ms":        "-1",
		},
	}
}

// PartitionFor returns the __share_group_state partition of a key:
// abs(javaHashCode("group:topicId:partition")) % numPartitions, the topic
// id in Kafka's base64 form (Kafka's SharePartitionKey.asCoordinatorKey).
func PartitionFor(k Key, numPartitions int32) int32 {
	return group.PartitionFor(k.String(), numPartitions)
}

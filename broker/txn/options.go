package txn

import (
	"context"
	"log/slog"
	"strconv"
	"time"

	"github.com/kbroker/kbroker/broker/group"
)

// StateLog is one __transaction_state partition as the coordinator sees it.
type StateLog interface {
	// Append writes records (one batch) and returns once they are
	// committed: acks=all, the high watermark passed them. It fails when
	// the broker is not leader any more, NOT_ENOUGH_REPLICAS, or on a
	// timeout (a *kerr.Error where there is one). It is called
	// concurrently for different ids of the same partition and must return
	// soon after ctx is cancelled.
	Append(ctx context.Context, records []Record) error
}

// Marker is one transaction's COMMIT or ABORT marker for its partitions:
// one WriteTxnMarkers entry.
type Marker struct {
	ProducerID         int64
	ProducerEpoch      int16
	CoordinatorEpoch   int32 // the __transaction_state partition's leader epoch
	Commit             bool
	TransactionVersion TransactionVersion // WriteTxnMarkers v2's field
	Partitions         []TopicPartition
}

// MarkerWriter writes markers to partition leaders (WriteTxnMarkers, or a
// local append when this broker leads the partition).
type MarkerWriter interface {
	// WriteMarkers writes m's control batch to each of its partitions and
	// returns an error code per partition, 0 once the marker is committed
	// there (Kafka's WriteTxnMarkers answers after acks=all). Codes are
	// those of WriteTxnMarkers: NOT_LEADER_OR_FOLLOWER,
	// UNKNOWN_TOPIC_OR_PARTITION (leader unknown), NOT_ENOUGH_REPLICAS*,
	// REQUEST_TIMED_OUT and KAFKA_STORAGE_ERROR are retried;
	// INVALID_PRODUCER_EPOCH and TRANSACTION_COORDINATOR_FENCED stop the
	// completion (a newer producer or coordinator took over). A partition
	// missing from the result is retried. A partition whose topic was
	// deleted is answered 0 (Kafka drops it: there is nothing to mark). It
	// is called concurrently and must return soon after ctx is cancelled.
	WriteMarkers(ctx context.Context, m Marker) map[TopicPartition]int16
}

// ProducerIDAllocator hands out producer ids that are unique in the
// cluster (the controller's blocks, KIP-730).
type ProducerIDAllocator interface {
	AllocateProducerID(ctx context.Context) (int64, error)
}

// ProducerIDFunc adapts a function to ProducerIDAllocator.
type ProducerIDFunc func(ctx context.Context) (int64, error)

// AllocateProducerID calls f.
func (f ProducerIDFunc) AllocateProducerID(ctx context.Context) (int64, error) { return f(ctx) }

// Options configure a Coordinator. Zero fields get Kafka's defaults.
type Options struct {
	NumPartitions     int32 // transaction.state.log.num.partitions (50)
	ReplicationFactor int16 // transaction.state.log.replication.factor (3)
	MinISR            int32 // transaction.state.log.min.isr (2)
	SegmentBytes      int32 // transaction.state.log.segment.bytes (100 MiB)

	MaxTimeout            time.Duration // transaction.max.timeout.ms (15m)
	IDExpiration          time.Duration // transactional.id.expiration.ms (7d)
	AbortTimedOutInterval time.Duration // transaction.abort.timed.out.transaction.cleanup.interval.ms (10s)
	RemoveExpiredInterval time.Duration // transaction.remove.expired.transaction.cleanup.interval.ms (1h)
	MarkerRetryBackoff    time.Duration // between marker and completion retries (retry.backoff.ms, 100ms)
	// ConcurrentWait is how long a request that meets a pending
	// transition of its id (a state write in flight, the previous
	// transaction's markers: it would get CONCURRENT_TRANSACTIONS) waits
	// for it to end before it is answered; zero does not wait (Kafka).
	// The broker sets transaction.concurrent.wait.ms: under transaction
	// version 2 the leaders of a transaction's partitions add them at once
	// (all but the first meet its write) and a producer's first produce
	// of its next transaction meets the previous one's markers, and the
	// client's backoff after the error costs more than the wait.
	ConcurrentWait time.Duration

	// TransactionVersion gives the cluster's finalized transaction.version
	// (nil: 2), read at every write: at level 0 the coordinator writes
	// TransactionLogValue v0, as Kafka does; otherwise v1 (flexible, with
	// the KIP-890 tagged fields), Kafka's choice at levels 1 and 2. What a
	// transaction does (epoch bump per EndTxn, partitions added by
	// Produce) follows the versions of the client's requests, as in
	// Kafka; clients choose them from the finalized level.
	TransactionVersion func() int16

	// OffsetsPartitionFor gives the __consumer_offsets partition of a
	// group (AddOffsetsToTxn); default: Kafka's hash over 50 partitions.
	OffsetsPartitionFor func(groupID string) int32
	// TopicPartitions gives a topic's partition count; ok=false if it does
	// not exist. Nil: every partition is taken to exist.
	TopicPartitions func(topic string) (int32, bool)

	// Now is the clock (time.Now). AfterFunc schedules f after d and returns
	// a function that cancels it (time.AfterFunc). Tests replace both. f may
	// be called on any goroutine; it must not be called by AfterFunc itself.
	Now       func() time.Time
	AfterFunc func(d time.Duration, f func()) (stop func() bool)

	Logger *slog.Logger
}

func (o Options) withDefaults() Options {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	if o.NumPartitions <= 0 {
		o.NumPartitions = 50
	}
	if o.ReplicationFactor <= 0 {
		o.ReplicationFactor = 3
	}
	if o.MinISR <= 0 {
		o.MinISR = 2
	}
	if o.SegmentBytes <= 0 {
		o.SegmentBytes = 100 << 20
	}
	def(&o.MaxTimeout, 15*time.Minute)
	def(&o.IDExpiration, 7*24*time.Hour)
	def(&o.AbortTimedOutInterval, 10*time.Second)
	def(&o.RemoveExpiredInterval, time.Hour)
	def(&o.MarkerRetryBackoff, 100*time.Millisecond)
	if o.OffsetsPartitionFor == nil {
		o.OffsetsPartitionFor = func(g string) int32 { return group.PartitionFor(g, 50) }
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.AfterFunc == nil {
		o.AfterFunc = func(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// StateTopicName is the internal topic that holds the coordinator's state.
const StateTopicName = "__transaction_state"

// TopicSpec is how the broker creates __transaction_state.
type TopicSpec struct {
	Partitions        int32
	ReplicationFactor int16
	Configs           map[string]string
}

// StateTopic returns the spec of __transaction_state for a cluster of
// brokers live brokers. Kafka refuses to create it with fewer brokers than
// transaction.state.log.replication.factor; kbroker's rule (issue 14) is to
// lower the replication factor to the cluster size and min.insync.replicas
// with it, so that a single broker or a two-broker cluster can run
// transactions. That is the broker's choice to make when it creates the
// topic (it knows the live brokers); this function only states the rule.
func (o Options) StateTopic(brokers int) TopicSpec {
	o = o.withDefaults()
	rf := o.ReplicationFactor
	if brokers > 0 && int(rf) > brokers {
		rf = int16(brokers)
	}
	minISR := min(o.MinISR, int32(rf))
	return TopicSpec{
		Partitions:        o.NumPartitions,
		ReplicationFactor: rf,
		// Kafka's TransactionLog topic configs, and durable appends
		// (flush.messages=1, issue 19): a state change is answered once
		// every ISR member has it on disk. The coordinator's state must be
		// at least as durable as the data it governs: with a durable data
		// topic, a power loss of every broker kept the data of an open
		// transaction but lost the Ongoing record that listed its
		// partition, so no marker was ever written and read_committed
		// stopped at its first offset for good (a hanging transaction).
		// It costs a group-committed fsync per state change, a few per
		// transaction.
		Configs: map[string]string{
			"cleanup.policy":                 "compact",
			"compression.type":               "uncompressed",
			"flush.messages":                 "1",
			"min.insync.replicas":            strconv.Itoa(int(minISR)),
			"segment.bytes":                  strconv.Itoa(int(o.SegmentBytes)),
			"unclean.leader.election.enable": "false",
		},
	}
}

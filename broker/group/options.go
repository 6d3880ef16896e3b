package group

import (
	"context"
	"crypto/sha256"
	"log/slog"
	"time"
	"unicode/utf16"
)

// Store is one __consumer_offsets partition as the coordinator sees it.
type Store interface {
	// Append writes records (key/value pairs in Kafka's __consumer_offsets
	// formats; a nil value is a tombstone) and returns once they are
	// committed (HW passed) or fails (not leader any more,
	// NOT_ENOUGH_REPLICAS, timeout). The records of one call are atomic (one
	// batch). Append is called concurrently for different groups of the same
	// partition; it must return soon after ctx is cancelled.
	Append(ctx context.Context, records []Record) error
}

// Record is one __consumer_offsets record. A nil Value is a tombstone.
//
// A replay (BecomeLeader's records) also says where each record comes
// from: its offset, and for a record of a transactional batch (a
// TxnOffsetCommit) the producer id; a transaction marker is a Record with
// Marker set and no key. Writers leave them zero.
type Record struct {
	Key, Value []byte

	Offset        int64
	Transactional bool
	ProducerID    int64
	Marker        Marker
}

// Marker says whether a replayed record is a transaction marker.
type Marker int8

const (
	NoMarker     Marker = iota
	CommitMarker        // a COMMIT control record: the producer's pending offsets apply
	AbortMarker         // an ABORT control record: they are dropped
)

// TxnStore is a Store that also writes transactional offset commits: one
// transactional batch of the producer (its id and epoch; no sequence, as
// Kafka's coordinator writes them), carrying the verification the broker
// made with the transaction coordinator (the partition log's
// storage.VerificationGuard). Committed when Append would be.
type TxnStore interface {
	Store
	AppendTxn(ctx context.Context, p TxnProducer, records []Record) error
}

// TxnProducer is the transaction a TxnOffsetCommit writes for.
type TxnProducer struct {
	ID           int64
	Epoch        int16
	Verification uint64
}

// Client describes the connection a request came from: Kafka stores both
// with every member.
type Client struct {
	ID   string // client.id of the request header
	Host string // the client's address as Kafka shows it, e.g. "/10.0.0.7"
}

// Options configure a Coordinator. Zero fields get Kafka's defaults, except
// InitialRebalanceDelay (zero means no delay) and the topic callbacks.
type Options struct {
	NumPartitions int32 // offsets.topic.num.partitions (50)

	MinSessionTimeout     time.Duration // group.min.session.timeout.ms (6s)
	MaxSessionTimeout     time.Duration // group.max.session.timeout.ms (30m)
	InitialRebalanceDelay time.Duration // group.initial.rebalance.delay.ms (broker default 3s)
	MaxGroupSize          int32         // group.max.size (MaxInt32)

	OffsetsRetention              time.Duration // offsets.retention.minutes (7d)
	OffsetsRetentionCheckInterval time.Duration // offsets.retention.check.interval.ms (10m)
	OffsetMetadataMaxBytes        int32         // offset.metadata.max.bytes (4096)

	// KIP-848 consumer groups.
	ConsumerHeartbeatInterval    time.Duration // group.consumer.heartbeat.interval.ms (5s)
	ConsumerMinHeartbeatInterval time.Duration // group.consumer.min.heartbeat.interval.ms (5s)
	ConsumerMaxHeartbeatInterval time.Duration // group.consumer.max.heartbeat.interval.ms (15s)
	ConsumerSessionTimeout       time.Duration // group.consumer.session.timeout.ms (45s)
	ConsumerMinSessionTimeout    time.Duration // group.consumer.min.session.timeout.ms (45s)
	ConsumerMaxSessionTimeout    time.Duration // group.consumer.max.session.timeout.ms (60s)
	ConsumerMaxGroupSize         int32         // group.consumer.max.size (MaxInt32)
	ConsumerAssignors            []string      // group.consumer.assignors: "uniform", "range"; the first is the default

	// Now is the clock (time.Now). AfterFunc schedules f after d and returns
	// a function that cancels it (time.AfterFunc). Tests replace both. f may
	// be called on any goroutine; it must not be called by AfterFunc itself.
	Now       func() time.Time
	AfterFunc func(d time.Duration, f func()) (stop func() bool)

	Logger *slog.Logger

	// TopicPartitions gives the current partition count of a topic; ok=false
	// if it does not exist. TopicID gives its topic id. AllTopics lists every
	// topic (for subscriptions by regular expression). When TopicPartitions
	// is nil every topic is taken to exist (offset commits are not checked)
	// and KIP-848 groups get no partitions; when TopicID is nil, ids are
	// derived from the topic name.
	TopicPartitions func(topic string) (int32, bool)
	TopicID         func(topic string) ([16]byte, bool)
	AllTopics       func() []string

	// OtherGroupType names the type of a group id another coordinator
	// serves ("share" for broker/share's share groups), "" for none: a
	// group id is of one type only, so a request that would create a
	// classic or consumer group under it gets GROUP_ID_NOT_FOUND, as
	// Kafka's getOrMaybeCreateClassicGroup and
	// getOrMaybeCreateConsumerGroup answer. Nil: no other types.
	OtherGroupType func(groupID string) string
}

// Kafka's group.classic.new.member.join.timeout: a new member waiting in a
// JoinGroup is dropped after this long (it cannot heartbeat yet).
const newMemberJoinTimeout = 5 * time.Minute

func (o Options) withDefaults() Options {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	if o.NumPartitions <= 0 {
		o.NumPartitions = 50
	}
	def(&o.MinSessionTimeout, 6*time.Second)
	def(&o.MaxSessionTimeout, 30*time.Minute)
	if o.InitialRebalanceDelay < 0 {
		o.InitialRebalanceDelay = 0
	}
	if o.MaxGroupSize <= 0 {
		o.MaxGroupSize = 1<<31 - 1
	}
	def(&o.OffsetsRetention, 7*24*time.Hour)
	def(&o.OffsetsRetentionCheckInterval, 10*time.Minute)
	if o.OffsetMetadataMaxBytes <= 0 {
		o.OffsetMetadataMaxBytes = 4096
	}
	def(&o.ConsumerHeartbeatInterval, 5*time.Second)
	def(&o.ConsumerMinHeartbeatInterval, 5*time.Second)
	def(&o.ConsumerMaxHeartbeatInterval, 15*time.Second)
	def(&o.ConsumerSessionTimeout, 45*time.Second)
	def(&o.ConsumerMinSessionTimeout, 45*time.Second)
	def(&o.ConsumerMaxSessionTimeout, 60*time.Second)
	o.ConsumerHeartbeatInterval = clampDuration(o.ConsumerHeartbeatInterval, o.ConsumerMinHeartbeatInterval, o.ConsumerMaxHeartbeatInterval)
	o.ConsumerSessionTimeout = clampDuration(o.ConsumerSessionTimeout, o.ConsumerMinSessionTimeout, o.ConsumerMaxSessionTimeout)
	if o.ConsumerMaxGroupSize <= 0 {
		o.ConsumerMaxGroupSize = 1<<31 - 1
	}
	var assignors []string
	for _, a := range o.ConsumerAssignors {
		if _, ok := assignorsByName[a]; ok {
			assignors = append(assignors, a)
		}
	}
	if len(assignors) == 0 {
		assignors = []string{assignorUniform, assignorRange}
	}
	o.ConsumerAssignors = assignors
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.AfterFunc == nil {
		o.AfterFunc = func(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.TopicID == nil {
		o.TopicID = func(topic string) ([16]byte, bool) { return nameTopicID(topic), true }
	}
	if o.AllTopics == nil {
		o.AllTopics = func() []string { return nil }
	}
	if o.OtherGroupType == nil {
		o.OtherGroupType = func(string) string { return "" }
	}
	return o
}

func clampDuration(d, lo, hi time.Duration) time.Duration {
	if lo > hi {
		return d
	}
	return min(max(d, lo), hi)
}

// nameTopicID derives a stable topic id from a topic name, for brokers that
// do not pass TopicID.
func nameTopicID(topic string) [16]byte {
	sum := sha256.Sum256([]byte(topic))
	var id [16]byte
	copy(id[:], sum[:16])
	return id
}

// PartitionFor returns the __consumer_offsets partition of a group:
// Utils.abs(groupId.hashCode()) % offsets.topic.num.partitions, with Java's
// String.hashCode over UTF-16 code units and Kafka's abs (MinInt32 -> 0).
func PartitionFor(groupID string, numPartitions int32) int32 {
	var h int32
	for _, u := range utf16.Encode([]rune(groupID)) {
		h = 31*h + int32(u)
	}
	switch {
	case h == -1<<31:
		h = 0
	case h < 0:
		h = -h
	}
	return h % numPartitions
}

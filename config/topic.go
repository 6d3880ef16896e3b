package config

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// TopicConfig is the effective configuration of one topic: its overrides
// over the broker's defaults (ResolveTopicConfig). Times are in
// milliseconds as Kafka sends them (math.MaxInt64 = never; -1 retention =
// unlimited).
type TopicConfig struct {
	CleanupPolicy                        []string // cleanup.policy: delete, compact
	CompressionType                      string   // compression.type
	CompressionGzipLevel                 int32    // compression.gzip.level
	CompressionLz4Level                  int32    // compression.lz4.level
	CompressionZstdLevel                 int32    // compression.zstd.level
	DeleteRetentionMs                    int64    // delete.retention.ms
	FileDeleteDelayMs                    int64    // file.delete.delay.ms
	FlushMessages                        int64    // flush.messages
	FlushMs                              int64    // flush.ms
	FollowerReplicationThrottledReplicas []string // follower.replication.throttled.replicas
	IndexIntervalBytes                   int32    // index.interval.bytes
	LeaderReplicationThrottledReplicas   []string // leader.replication.throttled.replicas
	LocalRetentionBytes                  int64    // local.retention.bytes (no tiered storage)
	LocalRetentionMs                     int64    // local.retention.ms (no tiered storage)
	MaxCompactionLagMs                   int64    // max.compaction.lag.ms
	MaxMessageBytes                      int32    // max.message.bytes
	MessageDownconversionEnable          bool     // message.downconversion.enable (no effect)
	MessageTimestampType                 string   // message.timestamp.type: CreateTime, LogAppendTime
	MessageTimestampBeforeMaxMs          int64    // message.timestamp.before.max.ms
	MessageTimestampAfterMaxMs           int64    // message.timestamp.after.max.ms
	MinCleanableDirtyRatio               float64  // min.cleanable.dirty.ratio
	MinCompactionLagMs                   int64    // min.compaction.lag.ms
	MinInsyncReplicas                    int32    // min.insync.replicas
	Preallocate                          bool     // preallocate
	RemoteStorageEnable                  bool     // remote.storage.enable (only false)
	RetentionBytes                       int64    // retention.bytes; -1 = unlimited
	RetentionMs                          int64    // retention.ms; -1 = unlimited
	SegmentBytes                         int64    // segment.bytes
	SegmentIndexBytes                    int32    // segment.index.bytes
	SegmentJitterMs                      int64    // segment.jitter.ms
	SegmentMs                            int64    // segment.ms
	UncleanLeaderElectionEnable          bool     // unclean.leader.election.enable
}

// Compact reports whether cleanup.policy contains compact.
func (t *TopicConfig) Compact() bool { return slices.Contains(t.CleanupPolicy, "compact") }

// Delete reports whether cleanup.policy contains delete.
func (t *TopicConfig) Delete() bool { return slices.Contains(t.CleanupPolicy, "delete") }

// TopicKey describes one topic-level config.
type TopicKey struct {
	Name string
	Type Type
	Doc  string
	// BrokerSynonym is the broker key whose value is this config's default
	// (retention.ms: log.retention.ms); "" for the few configs without one,
	// whose default is Default.
	BrokerSynonym string
	Default       string

	field func(*TopicConfig) any
	check validator
}

// ErrUnknownTopicConfig is returned, wrapped, for a topic config name
// kbroker does not know: "config: unknown topic config X". Kafka answers
// it with INVALID_CONFIG.
var ErrUnknownTopicConfig = errors.New("config: unknown topic config")

// TopicKeys returns the topic config table, sorted by name.
func TopicKeys() []TopicKey { return slices.Clone(topicTable) }

func topicKeyByName(name string) *TopicKey {
	for i := range topicTable {
		if topicTable[i].Name == name {
			return &topicTable[i]
		}
	}
	return nil
}

// TopicDefaults is each topic config's default on this broker, as Kafka
// text: the value of its broker synonym (retention.ms from
// log.retention.ms, in ms).
func (c *Config) TopicDefaults() map[string]string {
	out := make(map[string]string, len(topicTable))
	for _, t := range topicTable {
		if t.BrokerSynonym == "" {
			out[t.Name] = t.Default
			continue
		}
		out[t.Name] = formatValue(keyByName(t.BrokerSynonym).current(c))
	}
	return out
}

// ValidateTopicConfig checks one topic config: a known name and a value of
// its type in its range. The error names the key, the value and what is
// allowed, fit for an INVALID_CONFIG message.
func ValidateTopicConfig(name, value string) error {
	t := topicKeyByName(name)
	if t == nil {
		return fmt.Errorf("%w %s", ErrUnknownTopicConfig, name)
	}
	_, err := t.parse(value)
	return err
}

// ResolveTopicConfig is the effective config of a topic with these
// overrides (name -> Kafka text, as CreateTopics and AlterConfigs carry
// them) over the broker's defaults. Every bad or unknown override is
// reported, joined.
func (c *Config) ResolveTopicConfig(overrides map[string]string) (TopicConfig, error) {
	var tc TopicConfig
	var errs []error
	unknown := make([]string, 0)
	for name := range overrides {
		if topicKeyByName(name) == nil {
			unknown = append(unknown, name)
		}
	}
	sort.Strings(unknown)
	for _, name := range unknown {
		errs = append(errs, fmt.Errorf("%w %s", ErrUnknownTopicConfig, name))
	}
	defaults := c.TopicDefaults()
	for i := range topicTable {
		t := &topicTable[i]
		raw, ok := overrides[t.Name]
		if !ok {
			raw = defaults[t.Name]
		}
		v, err := t.parse(raw)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		setValue(t.field(&tc), v, 1)
	}
	return tc, errors.Join(errs...)
}

// parse parses and validates one value.
func (t *TopicKey) parse(raw string) (any, error) {
	v, problem := parseValue(t.field(new(TopicConfig)), t.Type, raw)
	if problem == "" && t.check != nil {
		problem = t.check(v)
	}
	if problem != "" {
		return nil, &ValueError{Key: t.Name, Value: raw, Problem: problem}
	}
	return v, nil
}

// throttledReplicas accepts Kafka's throttled replica lists: "*", or
// partition:broker pairs.
func throttledReplicas(v any) string {
	list := v.([]string)
	if len(list) == 1 && list[0] == "*" {
		return ""
	}
	for _, item := range list {
		p, b, ok := strings.Cut(item, ":")
		if _, err := strconv.ParseUint(p, 10, 31); !ok || err != nil {
			return "is invalid: must be * or a list of partition:broker"
		}
		if _, err := strconv.ParseUint(b, 10, 31); err != nil {
			return "is invalid: must be * or a list of partition:broker"
		}
	}
	return ""
}

// topicTable declares every topic config kbroker accepts, sorted by name.
var topicTable = []TopicKey{
	{Name: "cleanup.policy", Type: TypeList, BrokerSynonym: "log.cleanup.policy", check: oneOf("delete", "compact"),
		field: func(t *TopicConfig) any { return &t.CleanupPolicy },
		Doc:   "delete: old segments are removed by retention; compact: the last record per key is kept."},
	{Name: "compression.gzip.level", Type: TypeInt, BrokerSynonym: "compression.gzip.level", check: gzipLevel,
		field: func(t *TopicConfig) any { return &t.CompressionGzipLevel },
		Doc:   "The gzip level when compression.type is gzip."},
	{Name: "compression.lz4.level", Type: TypeInt, BrokerSynonym: "compression.lz4.level", check: between(1, 17),
		field: func(t *TopicConfig) any { return &t.CompressionLz4Level },
		Doc:   "The lz4 level when compression.type is lz4."},
	{Name: "compression.type", Type: TypeString, BrokerSynonym: "compression.type", check: oneOf(compressionTypes...),
		field: func(t *TopicConfig) any { return &t.CompressionType },
		Doc:   "The compression of stored batches; producer keeps the producer's."},
	{Name: "compression.zstd.level", Type: TypeInt, BrokerSynonym: "compression.zstd.level", check: between(-131072, 22),
		field: func(t *TopicConfig) any { return &t.CompressionZstdLevel },
		Doc:   "The zstd level when compression.type is zstd."},
	{Name: "delete.retention.ms", Type: TypeLong, BrokerSynonym: "log.cleaner.delete.retention.ms", check: atLeast(0),
		field: func(t *TopicConfig) any { return &t.DeleteRetentionMs },
		Doc:   "How long tombstones are kept on a compacted topic."},
	{Name: "file.delete.delay.ms", Type: TypeLong, BrokerSynonym: "log.segment.delete.delay.ms", check: atLeast(0),
		field: func(t *TopicConfig) any { return &t.FileDeleteDelayMs },
		Doc:   "How long a deleted segment's files wait before removal."},
	{Name: "flush.messages", Type: TypeLong, BrokerSynonym: "log.flush.interval.messages", check: atLeast(1),
		field: func(t *TopicConfig) any { return &t.FlushMessages },
		Doc:   "Messages appended before the log is fsynced."},
	{Name: "flush.ms", Type: TypeLong, BrokerSynonym: "log.flush.interval.ms", check: atLeast(0),
		field: func(t *TopicConfig) any { return &t.FlushMs },
		Doc:   "The longest time a message stays unflushed."},
	{Name: "follower.replication.throttled.replicas", Type: TypeList, Default: "", check: throttledReplicas,
		field: func(t *TopicConfig) any { return &t.FollowerReplicationThrottledReplicas },
		Doc:   "Replicas whose catch-up fetches their follower throttles to follower.replication.throttled.rate (partition:broker,... or *)."},
	{Name: "index.interval.bytes", Type: TypeInt, BrokerSynonym: "log.index.interval.bytes", check: atLeast(0),
		field: func(t *TopicConfig) any { return &t.IndexIntervalBytes },
		Doc:   "Bytes of log between two offset index entries."},
	{Name: "leader.replication.throttled.replicas", Type: TypeList, Default: "", check: throttledReplicas,
		field: func(t *TopicConfig) any { return &t.LeaderReplicationThrottledReplicas },
		Doc:   "Replicas whose leader throttles what it sends out-of-sync followers to leader.replication.throttled.rate (partition:broker,... or *)."},
	{Name: "local.retention.bytes", Type: TypeLong, BrokerSynonym: "log.local.retention.bytes", check: atLeast(-2),
		field: func(t *TopicConfig) any { return &t.LocalRetentionBytes },
		Doc:   "Tiered storage: local retention size; -2 = retention.bytes. No effect in kbroker."},
	{Name: "local.retention.ms", Type: TypeLong, BrokerSynonym: "log.local.retention.ms", check: atLeast(-2),
		field: func(t *TopicConfig) any { return &t.LocalRetentionMs },
		Doc:   "Tiered storage: local retention time; -2 = retention.ms. No effect in kbroker."},
	{Name: "max.compaction.lag.ms", Type: TypeLong, BrokerSynonym: "log.cleaner.max.compaction.lag.ms", check: atLeast(1),
		field: func(t *TopicConfig) any { return &t.MaxCompactionLagMs },
		Doc:   "The longest time a message stays ineligible for compaction."},
	{Name: "max.message.bytes", Type: TypeInt, BrokerSynonym: "message.max.bytes", check: atLeast(0),
		field: func(t *TopicConfig) any { return &t.MaxMessageBytes },
		Doc:   "The largest record batch the topic accepts."},
	{Name: "message.downconversion.enable", Type: TypeBoolean, BrokerSynonym: "log.message.downconversion.enable",
		field: func(t *TopicConfig) any { return &t.MessageDownconversionEnable },
		Doc:   "Accepted for compatibility; kbroker never down-converts."},
	{Name: "message.timestamp.after.max.ms", Type: TypeLong, BrokerSynonym: "log.message.timestamp.after.max.ms", check: atLeast(0),
		field: func(t *TopicConfig) any { return &t.MessageTimestampAfterMaxMs },
		Doc:   "How far a CreateTime timestamp may lie after the broker's clock."},
	{Name: "message.timestamp.before.max.ms", Type: TypeLong, BrokerSynonym: "log.message.timestamp.before.max.ms", check: atLeast(0),
		field: func(t *TopicConfig) any { return &t.MessageTimestampBeforeMaxMs },
		Doc:   "How far a CreateTime timestamp may lie before the broker's clock."},
	{Name: "message.timestamp.type", Type: TypeString, BrokerSynonym: "log.message.timestamp.type", check: oneOf(timestampTypes...),
		field: func(t *TopicConfig) any { return &t.MessageTimestampType },
		Doc:   "CreateTime (the producer's timestamp) or LogAppendTime (the broker's)."},
	{Name: "min.cleanable.dirty.ratio", Type: TypeDouble, BrokerSynonym: "log.cleaner.min.cleanable.ratio", check: betweenFloat(0, 1),
		field: func(t *TopicConfig) any { return &t.MinCleanableDirtyRatio },
		Doc:   "The smallest ratio of dirty log to total log for compaction."},
	{Name: "min.compaction.lag.ms", Type: TypeLong, BrokerSynonym: "log.cleaner.min.compaction.lag.ms", check: atLeast(0),
		field: func(t *TopicConfig) any { return &t.MinCompactionLagMs },
		Doc:   "The shortest time a message stays uncompacted."},
	{Name: "min.insync.replicas", Type: TypeInt, BrokerSynonym: "min.insync.replicas", check: atLeast(1),
		field: func(t *TopicConfig) any { return &t.MinInsyncReplicas },
		Doc:   "The fewest in-sync replicas for an acks=all produce to succeed."},
	{Name: "preallocate", Type: TypeBoolean, BrokerSynonym: "log.preallocate",
		field: func(t *TopicConfig) any { return &t.Preallocate },
		Doc:   "Accepted; kbroker always preallocates segments."},
	{Name: "remote.storage.enable", Type: TypeBoolean, Default: "false", check: onlyValue(false, "kbroker has no tiered storage"),
		field: func(t *TopicConfig) any { return &t.RemoteStorageEnable },
		Doc:   "Tiered storage; kbroker accepts only false."},
	{Name: "retention.bytes", Type: TypeLong, BrokerSynonym: "log.retention.bytes",
		field: func(t *TopicConfig) any { return &t.RetentionBytes },
		Doc:   "The largest size of a partition before old segments are deleted; -1 = no limit."},
	{Name: "retention.ms", Type: TypeLong, BrokerSynonym: "log.retention.ms", check: atLeast(-1),
		field: func(t *TopicConfig) any { return &t.RetentionMs },
		Doc:   "How long a segment is kept before deletion; -1 = no limit."},
	{Name: "segment.bytes", Type: TypeInt, BrokerSynonym: "log.segment.bytes", check: between(14, 2147483647),
		field: func(t *TopicConfig) any { return &t.SegmentBytes },
		Doc:   "The largest size of a segment file."},
	{Name: "segment.index.bytes", Type: TypeInt, BrokerSynonym: "log.index.size.max.bytes", check: atLeast(4),
		field: func(t *TopicConfig) any { return &t.SegmentIndexBytes },
		Doc:   "The largest size of an offset index file."},
	{Name: "segment.jitter.ms", Type: TypeLong, BrokerSynonym: "log.roll.jitter.ms", check: atLeast(0),
		field: func(t *TopicConfig) any { return &t.SegmentJitterMs },
		Doc:   "The largest random jitter subtracted from segment.ms."},
	{Name: "segment.ms", Type: TypeLong, BrokerSynonym: "log.roll.ms", check: atLeast(1),
		field: func(t *TopicConfig) any { return &t.SegmentMs },
		Doc:   "The longest time before a new segment is rolled."},
	{Name: "unclean.leader.election.enable", Type: TypeBoolean, BrokerSynonym: "unclean.leader.election.enable",
		field: func(t *TopicConfig) any { return &t.UncleanLeaderElectionEnable },
		Doc:   "Elect a replica outside the ISR when no ISR member is alive, at the risk of losing data."},
}

// ErrNotDynamic is returned, wrapped, for a broker key that cannot change
// without a restart (Kafka refuses such an update with INVALID_REQUEST).
var ErrNotDynamic = errors.New("config: cannot be updated dynamically")

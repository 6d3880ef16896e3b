package config

import (
	"slices"
	"strings"
	"time"
)

// Key describes one broker config key. The table behind Keys is the only
// place a key is declared; defaults, environment names, flags, validation
// and DescribeConfigs data all come from it.
type Key struct {
	Name string
	Type Type // as Kafka declares it
	// Default is the Kafka string form of the default value, unless
	// NoDefault (Kafka's null default: the key has no value unless set).
	Default   string
	NoDefault bool
	Doc       string
	// Dynamic: Kafka can change the key at runtime (AlterConfigs on the
	// cluster default or on a broker). DescribeConfigs reports the others
	// read-only.
	Dynamic   bool
	Sensitive bool
	// Unit is the unit of a duration key's number (time.Millisecond for
	// *.ms keys, time.Hour for log.retention.hours); 0 for other keys.
	Unit time.Duration
	// SynonymOf names the key this one is a lower-precedence name of:
	// log.retention.hours is a synonym of log.retention.ms. It sets the same
	// field, and only when no higher name is set.
	SynonymOf string
	// Synonyms lists this key's lower-precedence names, highest first.
	Synonyms []string
	// TopicConfig names the topic-level config whose broker default this
	// key is (log.retention.ms -> retention.ms), if any.
	TopicConfig string
	// FlagAlias is a second flag name for the key (log-format).
	FlagAlias string

	field func(*Config) any // a pointer to the field the key sets
	check validator         // nil: any value of the type
}

// EnvName is the environment variable that sets the key:
// KBROKER_LOG_DIRS for log.dirs.
func (k Key) EnvName() string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(k.Name, ".", "_"))
}

const envPrefix = "KBROKER_"

func (k *Key) unit() time.Duration {
	if k.Unit == 0 {
		return time.Millisecond
	}
	return k.Unit
}

// parse parses raw into the key's value kind, without range checks.
func (k *Key) parse(raw string) (any, error) {
	v, problem := parseValue(k.field(new(Config)), k.Type, raw)
	if problem != "" {
		return nil, &ValueError{Key: k.Name, Value: raw, Problem: problem}
	}
	return v, nil
}

// validate checks a parsed value against the key's validator.
func (k *Key) validate(raw string, v any) error {
	if k.check == nil {
		return nil
	}
	if problem := k.check(v); problem != "" {
		return &ValueError{Key: k.Name, Value: raw, Problem: problem}
	}
	return nil
}

// set parses raw and stores it in c's field.
func (k *Key) setRaw(c *Config, raw string) error {
	v, err := k.parse(raw)
	if err != nil {
		return err
	}
	setValue(k.field(c), v, k.unit())
	return nil
}

// current is the value of c's field, in the key's unit.
func (k *Key) current(c *Config) any { return getValue(k.field(c), k.unit()) }

// isDuration reports whether the key sets a time.Duration field.
func (k *Key) isDuration() bool {
	_, ok := k.field(new(Config)).(*time.Duration)
	return ok
}

// Keys returns the broker key table, in declaration order: each key is
// followed by its synonyms.
func Keys() []Key {
	out := slices.Clone(keyTable)
	for i := range out {
		k := &out[i]
		if k.isDuration() && k.Unit == 0 {
			k.Unit = time.Millisecond
		}
		for _, s := range keyTable {
			if s.SynonymOf == k.Name {
				k.Synonyms = append(k.Synonyms, s.Name)
			}
		}
		for _, t := range topicTable {
			if t.BrokerSynonym == k.Name {
				k.TopicConfig = t.Name
			}
		}
	}
	return out
}

// keyByName returns the table entry for name, or nil.
func keyByName(name string) *Key {
	for i := range keyTable {
		if keyTable[i].Name == name {
			return &keyTable[i]
		}
	}
	return nil
}

const (
	maxInt32 = "2147483647"
	maxInt64 = "9223372036854775807"
)

var timestampTypes = []string{"CreateTime", "LogAppendTime"}

var compressionTypes = []string{"uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"}

// keyTable declares every broker key. A key's synonyms follow it, highest
// precedence first. Defaults are Kafka 4.0's unless the doc says otherwise.
var keyTable = []Key{
	// Node and cluster.
	{Name: "node.id", Type: TypeInt, Default: "1", check: atLeast(0),
		field: func(c *Config) any { return &c.NodeID },
		Doc:   "This node's id in the cluster, as a broker and as a controller."},
	{Name: "broker.id", Type: TypeInt, NoDefault: true, SynonymOf: "node.id", check: atLeast(0),
		field: func(c *Config) any { return &c.NodeID },
		Doc:   "Older name of node.id; if both are set they must be equal."},
	{Name: "process.roles", Type: TypeList, Default: "broker,controller", check: oneOf(RoleBroker, RoleController),
		field: func(c *Config) any { return &c.ProcessRoles },
		Doc:   "The roles of this node: broker, controller, or both (combined mode)."},
	{Name: "broker.rack", Type: TypeString, NoDefault: true,
		field: func(c *Config) any { return &c.BrokerRack },
		Doc:   "The rack of this broker, for rack-aware replica placement."},
	{Name: "cluster.id", Type: TypeString, NoDefault: true,
		field: func(c *Config) any { return &c.ClusterID },
		Doc:   "The cluster id; when unset the first active controller generates one and stores it in the metadata log."},

	// Listeners.
	{Name: "listeners", Type: TypeString, Default: "PLAINTEXT://127.0.0.1:9092", Dynamic: true,
		field: func(c *Config) any { return &c.Listeners },
		Doc:   "Comma-separated NAME://host:port to listen on; an empty host means all interfaces, IPv6 goes in brackets ([::1]:9092)."},
	{Name: "advertised.listeners", Type: TypeString, NoDefault: true, Dynamic: true,
		field: func(c *Config) any { return &c.AdvertisedListeners },
		Doc:   "Addresses given to clients and other brokers; default: listeners without the controller listeners, an empty host replaced by the hostname."},
	{Name: "listener.security.protocol.map", Type: TypeString, Dynamic: true,
		Default: "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL",
		field:   func(c *Config) any { return &c.ListenerSecurityProtocolMap },
		Doc:     "NAME:PROTOCOL for each listener name; kbroker supports only PLAINTEXT."},
	{Name: "inter.broker.listener.name", Type: TypeString, Default: "PLAINTEXT",
		field: func(c *Config) any { return &c.InterBrokerListenerName },
		Doc:   "The listener brokers use to reach each other; must name a listener."},
	{Name: "controller.listener.names", Type: TypeString, Default: "CONTROLLER",
		field: func(c *Config) any { return &c.ControllerListenerNames },
		Doc:   "Comma-separated names of the listeners used by the controller quorum."},

	// KRaft quorum.
	{Name: "controller.quorum.voters", Type: TypeList, NoDefault: true,
		field: func(c *Config) any { return &c.ControllerQuorumVoters },
		Doc:   "The controller quorum, id@host:port,...; empty on a controller: a quorum of one, this node."},
	{Name: "controller.quorum.bootstrap.servers", Type: TypeList, NoDefault: true, check: hostPorts,
		field: func(c *Config) any { return &c.ControllerQuorumBootstrapServers },
		Doc:   "host:port of controllers to bootstrap from (KIP-853); accepted and stored."},
	{Name: "controller.quorum.election.timeout.ms", Type: TypeInt, Default: "1000", check: atLeast(1),
		field: func(c *Config) any { return &c.ControllerQuorumElectionTimeout },
		Doc:   "How long a controller waits without hearing from the leader before it starts an election."},
	{Name: "controller.quorum.fetch.timeout.ms", Type: TypeInt, Default: "2000", check: atLeast(1),
		field: func(c *Config) any { return &c.ControllerQuorumFetchTimeout },
		Doc:   "How long a voter waits for a successful fetch from the leader before becoming a candidate."},
	{Name: "broker.session.timeout.ms", Type: TypeInt, Default: "9000", check: atLeast(1),
		field: func(c *Config) any { return &c.BrokerSessionTimeout },
		Doc:   "A broker that sends no heartbeat for this long is fenced."},
	{Name: "broker.heartbeat.interval.ms", Type: TypeInt, Default: "2000", check: atLeast(1),
		field: func(c *Config) any { return &c.BrokerHeartbeatInterval },
		Doc:   "The interval between broker heartbeats to the controller; must be less than broker.session.timeout.ms."},
	{Name: "initial.broker.registration.timeout.ms", Type: TypeInt, Default: "60000", check: atLeast(1),
		field: func(c *Config) any { return &c.InitialBrokerRegistrationTimeout },
		Doc:   "How long a starting broker waits to register with the controller before giving up."},
	{Name: "metadata.log.dir", Type: TypeString, NoDefault: true,
		field: func(c *Config) any { return &c.MetadataLogDir },
		Doc:   "Directory of the cluster metadata log; default: the first of log.dirs."},

	// Topics and partitions.
	{Name: "num.partitions", Type: TypeInt, Default: "1", check: atLeast(1),
		field: func(c *Config) any { return &c.NumPartitions },
		Doc:   "The default number of partitions of a new topic."},
	{Name: "default.replication.factor", Type: TypeShort, Default: "1", check: atLeast(1),
		field: func(c *Config) any { return &c.DefaultReplicationFactor },
		Doc:   "The default replication factor of a new topic."},
	{Name: "min.insync.replicas", Type: TypeInt, Default: "1", Dynamic: true, check: atLeast(1),
		field: func(c *Config) any { return &c.MinInsyncReplicas },
		Doc:   "The fewest in-sync replicas for an acks=all produce to succeed and for the high watermark to advance."},
	{Name: "unclean.leader.election.enable", Type: TypeBoolean, Default: "false", Dynamic: true,
		field: func(c *Config) any { return &c.UncleanLeaderElectionEnable },
		Doc:   "Elect a replica outside the ISR as leader when no ISR member is alive, at the risk of losing data."},
	{Name: "auto.create.topics.enable", Type: TypeBoolean, Default: "true",
		field: func(c *Config) any { return &c.AutoCreateTopicsEnable },
		Doc:   "Create a topic when a client asks Metadata for one that does not exist."},
	{Name: "delete.topic.enable", Type: TypeBoolean, Default: "true",
		field: func(c *Config) any { return &c.DeleteTopicEnable },
		Doc:   "Allow DeleteTopics."},

	// Log: segments, retention, flush, indexes.
	{Name: "log.dirs", Type: TypeString, NoDefault: true,
		field: func(c *Config) any { return &c.LogDirs },
		Doc:   "Comma-separated directories for partition data."},
	{Name: "log.dir", Type: TypeString, Default: "./data", SynonymOf: "log.dirs",
		field: func(c *Config) any { return &c.LogDirs },
		Doc:   "The data directory, used when log.dirs is not set (kbroker default ./data)."},
	{Name: "log.segment.bytes", Type: TypeInt, Default: "1073741824", Dynamic: true, check: between(14, 2147483647),
		field: func(c *Config) any { return &c.LogSegmentBytes },
		Doc:   "The largest size of a log segment file."},
	{Name: "log.roll.ms", Type: TypeLong, NoDefault: true, Dynamic: true, check: atLeast(1),
		field: func(c *Config) any { return &c.LogRollMs },
		Doc:   "The longest time before a new segment is rolled out; overrides log.roll.hours."},
	{Name: "log.roll.hours", Type: TypeInt, Default: "168", SynonymOf: "log.roll.ms", Unit: time.Hour, Dynamic: true, check: atLeast(1),
		field: func(c *Config) any { return &c.LogRollMs },
		Doc:   "log.roll.ms in hours."},
	{Name: "log.roll.jitter.ms", Type: TypeLong, NoDefault: true, Dynamic: true, check: atLeast(0),
		field: func(c *Config) any { return &c.LogRollJitterMs },
		Doc:   "The largest random jitter subtracted from the roll time; overrides log.roll.jitter.hours."},
	{Name: "log.roll.jitter.hours", Type: TypeInt, Default: "0", SynonymOf: "log.roll.jitter.ms", Unit: time.Hour, Dynamic: true, check: atLeast(0),
		field: func(c *Config) any { return &c.LogRollJitterMs },
		Doc:   "log.roll.jitter.ms in hours."},
	{Name: "log.retention.ms", Type: TypeLong, NoDefault: true, Dynamic: true, check: atLeast(-1),
		field: func(c *Config) any { return &c.LogRetentionMs },
		Doc:   "How long a log segment is kept before deletion; -1 = no time limit. Overrides log.retention.minutes and .hours."},
	{Name: "log.retention.minutes", Type: TypeInt, NoDefault: true, SynonymOf: "log.retention.ms", Unit: time.Minute, Dynamic: true,
		field: func(c *Config) any { return &c.LogRetentionMs },
		Doc:   "log.retention.ms in minutes; negative = no time limit. Overrides log.retention.hours."},
	{Name: "log.retention.hours", Type: TypeInt, Default: "168", SynonymOf: "log.retention.ms", Unit: time.Hour, Dynamic: true,
		field: func(c *Config) any { return &c.LogRetentionMs },
		Doc:   "log.retention.ms in hours; negative = no time limit."},
	{Name: "log.retention.bytes", Type: TypeLong, Default: "-1", Dynamic: true,
		field: func(c *Config) any { return &c.LogRetentionBytes },
		Doc:   "The largest size of a partition's log before old segments are deleted; -1 = no size limit."},
	{Name: "log.retention.check.interval.ms", Type: TypeLong, Default: "300000", check: atLeast(1),
		field: func(c *Config) any { return &c.LogRetentionCheckInterval },
		Doc:   "How often the retention check runs."},
	{Name: "log.segment.delete.delay.ms", Type: TypeLong, Default: "60000", Dynamic: true, check: atLeast(0),
		field: func(c *Config) any { return &c.LogSegmentDeleteDelay },
		Doc:   "How long a deleted segment's files wait before removal from disk."},
	{Name: "log.flush.interval.messages", Type: TypeLong, Default: maxInt64, Dynamic: true, check: atLeast(1),
		field: func(c *Config) any { return &c.LogFlushIntervalMessages },
		Doc:   "Messages appended to a partition before its log is fsynced; the default never flushes by count."},
	{Name: "log.flush.interval.ms", Type: TypeLong, NoDefault: true, Dynamic: true, check: atLeast(0),
		field: func(c *Config) any { return &c.LogFlushIntervalMs },
		Doc:   "The longest time a message stays unflushed; unset: log.flush.scheduler.interval.ms."},
	{Name: "log.flush.scheduler.interval.ms", Type: TypeLong, Default: maxInt64, check: atLeast(0),
		field: func(c *Config) any { return &c.LogFlushSchedulerInterval },
		Doc:   "How often the flusher checks whether a log needs flushing; the default never flushes by time."},
	{Name: "log.flush.offset.checkpoint.interval.ms", Type: TypeInt, Default: "60000", check: atLeast(0),
		field: func(c *Config) any { return &c.LogFlushOffsetCheckpointInterval },
		Doc:   "How often the recovery-point checkpoint is written."},
	{Name: "log.flush.start.offset.checkpoint.interval.ms", Type: TypeInt, Default: "60000", check: atLeast(0),
		field: func(c *Config) any { return &c.LogFlushStartOffsetCheckpointInterval },
		Doc:   "How often the log-start-offset checkpoint is written."},
	{Name: "log.index.size.max.bytes", Type: TypeInt, Default: "10485760", Dynamic: true, check: atLeast(4),
		field: func(c *Config) any { return &c.LogIndexSizeMaxBytes },
		Doc:   "The largest size of an offset index file."},
	{Name: "log.index.interval.bytes", Type: TypeInt, Default: "4096", Dynamic: true, check: atLeast(0),
		field: func(c *Config) any { return &c.LogIndexIntervalBytes },
		Doc:   "Bytes of log between two offset index entries."},
	{Name: "log.preallocate", Type: TypeBoolean, Default: "false", Dynamic: true,
		field: func(c *Config) any { return &c.LogPreallocate },
		Doc:   "Accepted for compatibility; kbroker always preallocates segments."},
	{Name: "log.local.retention.ms", Type: TypeLong, Default: "-2", Dynamic: true, check: atLeast(-2),
		field: func(c *Config) any { return &c.LogLocalRetentionMs },
		Doc:   "Tiered storage: local retention time; -2 = log.retention.ms. kbroker has no tiered storage."},
	{Name: "log.local.retention.bytes", Type: TypeLong, Default: "-2", Dynamic: true, check: atLeast(-2),
		field: func(c *Config) any { return &c.LogLocalRetentionBytes },
		Doc:   "Tiered storage: local retention size; -2 = log.retention.bytes. kbroker has no tiered storage."},

	// Log: cleanup and compaction.
	{Name: "log.cleanup.policy", Type: TypeList, Default: "delete", Dynamic: true, check: oneOf("delete", "compact"),
		field: func(c *Config) any { return &c.LogCleanupPolicy },
		Doc:   "The default cleanup policy of a topic: delete, compact, or both."},
	{Name: "log.cleaner.delete.retention.ms", Type: TypeLong, Default: "86400000", Dynamic: true, check: atLeast(0),
		field: func(c *Config) any { return &c.LogCleanerDeleteRetention },
		Doc:   "How long tombstones are kept on compacted topics."},
	{Name: "log.cleaner.min.compaction.lag.ms", Type: TypeLong, Default: "0", Dynamic: true, check: atLeast(0),
		field: func(c *Config) any { return &c.LogCleanerMinCompactionLag },
		Doc:   "The shortest time a message stays uncompacted."},
	{Name: "log.cleaner.max.compaction.lag.ms", Type: TypeLong, Default: maxInt64, Dynamic: true, check: atLeast(1),
		field: func(c *Config) any { return &c.LogCleanerMaxCompactionLag },
		Doc:   "The longest time a message stays ineligible for compaction."},
	{Name: "log.cleaner.min.cleanable.ratio", Type: TypeDouble, Default: "0.5", Dynamic: true, check: betweenFloat(0, 1),
		field: func(c *Config) any { return &c.LogCleanerMinCleanableRatio },
		Doc:   "The smallest ratio of dirty log to total log for a log to be compacted."},
	{Name: "log.cleaner.backoff.ms", Type: TypeLong, Default: "15000", Dynamic: true, check: atLeast(0),
		field: func(c *Config) any { return &c.LogCleanerBackoff },
		Doc:   "How often the log cleaner looks for logs to compact."},

	// Messages.
	{Name: "log.message.timestamp.type", Type: TypeString, Default: "CreateTime", Dynamic: true, check: oneOf(timestampTypes...),
		field: func(c *Config) any { return &c.LogMessageTimestampType },
		Doc:   "Whether a record's timestamp is the producer's (CreateTime) or the broker's append time (LogAppendTime)."},
	{Name: "log.message.timestamp.before.max.ms", Type: TypeLong, Default: maxInt64, Dynamic: true, check: atLeast(0),
		field: func(c *Config) any { return &c.LogMessageTimestampBeforeMaxMs },
		Doc:   "How far a CreateTime timestamp may lie before the broker's clock."},
	{Name: "log.message.timestamp.after.max.ms", Type: TypeLong, Default: "3600000", Dynamic: true, check: atLeast(0),
		field: func(c *Config) any { return &c.LogMessageTimestampAfterMaxMs },
		Doc:   "How far a CreateTime timestamp may lie after the broker's clock."},
	{Name: "log.message.downconversion.enable", Type: TypeBoolean, Default: "true", Dynamic: true,
		field: func(c *Config) any { return &c.LogMessageDownconversionEnable },
		Doc:   "Accepted for compatibility; kbroker never down-converts (old message formats are refused)."},
	{Name: "message.max.bytes", Type: TypeInt, Default: "1048588", Dynamic: true, check: atLeast(0),
		field: func(c *Config) any { return &c.MessageMaxBytes },
		Doc:   "The largest record batch the broker accepts (topic config max.message.bytes)."},
	{Name: "compression.type", Type: TypeString, Default: "producer", Dynamic: true, check: oneOf(compressionTypes...),
		field: func(c *Config) any { return &c.CompressionType },
		Doc:   "The compression of stored batches; producer keeps the producer's."},
	{Name: "compression.gzip.level", Type: TypeInt, Default: "-1", Dynamic: true, check: gzipLevel,
		field: func(c *Config) any { return &c.CompressionGzipLevel },
		Doc:   "The gzip level when compression.type is gzip."},
	{Name: "compression.lz4.level", Type: TypeInt, Default: "9", Dynamic: true, check: between(1, 17),
		field: func(c *Config) any { return &c.CompressionLz4Level },
		Doc:   "The lz4 level when compression.type is lz4."},
	{Name: "compression.zstd.level", Type: TypeInt, Default: "3", Dynamic: true, check: between(-131072, 22),
		field: func(c *Config) any { return &c.CompressionZstdLevel },
		Doc:   "The zstd level when compression.type is zstd."},

	// Replication.
	{Name: "replica.fetch.max.bytes", Type: TypeInt, Default: "1048576", check: atLeast(0),
		field: func(c *Config) any { return &c.ReplicaFetchMaxBytes },
		Doc:   "Bytes a follower asks per partition in a fetch."},
	{Name: "replica.fetch.response.max.bytes", Type: TypeInt, Default: "10485760", check: atLeast(0),
		field: func(c *Config) any { return &c.ReplicaFetchResponseMaxBytes },
		Doc:   "Bytes a follower asks for a whole fetch response."},
	{Name: "replica.fetch.wait.max.ms", Type: TypeInt, Default: "500", check: atLeast(0),
		field: func(c *Config) any { return &c.ReplicaFetchWaitMax },
		Doc:   "The longest a follower's fetch waits on the leader; must be less than replica.lag.time.max.ms."},
	{Name: "replica.fetch.min.bytes", Type: TypeInt, Default: "1", check: atLeast(0),
		field: func(c *Config) any { return &c.ReplicaFetchMinBytes },
		Doc:   "Bytes a follower's fetch waits for before the leader answers."},
	{Name: "replica.fetch.backoff.ms", Type: TypeInt, Default: "1000", check: atLeast(0),
		field: func(c *Config) any { return &c.ReplicaFetchBackoff },
		Doc:   "How long a follower waits after a fetch error."},
	{Name: "replica.selector.class", Type: TypeString, NoDefault: true, check: oneOf("", RackAwareReplicaSelector),
		field: func(c *Config) any { return &c.ReplicaSelectorClass },
		Doc:   "The replica selector for consumer fetches (KIP-392): " + RackAwareReplicaSelector + " sends consumers with a client.rack to a replica in their rack; unset: always the leader."},
	{Name: "max.incremental.fetch.session.cache.slots", Type: TypeInt, Default: "1000", check: atLeast(0),
		field: func(c *Config) any { return &c.MaxIncrementalFetchSessionCacheSlots },
		Doc:   "The most incremental fetch sessions (KIP-227) this broker keeps."},
	{Name: "replica.lag.time.max.ms", Type: TypeLong, Default: "30000", check: atLeast(1),
		field: func(c *Config) any { return &c.ReplicaLagTimeMax },
		Doc:   "A follower not caught up with the leader for this long leaves the ISR."},
	{Name: "replica.socket.timeout.ms", Type: TypeInt, Default: "30000", check: atLeast(1),
		field: func(c *Config) any { return &c.ReplicaSocketTimeout },
		Doc:   "The network timeout of follower fetch requests."},
	{Name: "num.recovery.threads.per.data.dir", Type: TypeInt, Default: "16", Dynamic: true, check: atLeast(1),
		field: func(c *Config) any { return &c.NumRecoveryThreadsPerDataDir },
		Doc: "How many partition logs each log dir opens (startup, new and changed partitions) and closes (shutdown) at once; " +
			"read at startup. Kafka's default is 2, but opening or closing a log is mostly waiting on fsyncs, which concurrent " +
			"writers of one file system share: 10,000 logs take minutes with 2."},
	{Name: "num.replica.fetchers", Type: TypeInt, Default: "1", Dynamic: true, check: atLeast(1),
		field: func(c *Config) any { return &c.NumReplicaFetchers },
		Doc:   "Fetcher goroutines per source broker."},
	{Name: "replica.high.watermark.checkpoint.interval.ms", Type: TypeLong, Default: "5000", check: atLeast(1),
		field: func(c *Config) any { return &c.ReplicaHighWatermarkCheckpointInterval },
		Doc:   "How often high watermarks are checkpointed to disk."},
	{Name: "auto.leader.rebalance.enable", Type: TypeBoolean, Default: "true",
		field: func(c *Config) any { return &c.AutoLeaderRebalanceEnable },
		Doc:   "Move leadership back to preferred replicas periodically."},
	{Name: "leader.imbalance.check.interval.seconds", Type: TypeLong, Default: "300", Unit: time.Second, check: atLeast(1),
		field: func(c *Config) any { return &c.LeaderImbalanceCheckInterval },
		Doc:   "How often the controller checks for leader imbalance."},
	{Name: "leader.imbalance.per.broker.percentage", Type: TypeInt, Default: "10", check: between(0, 100),
		field: func(c *Config) any { return &c.LeaderImbalancePerBrokerPercentage },
		Doc:   "The imbalance per broker above which the controller rebalances leaders."},
	{Name: "controlled.shutdown.enable", Type: TypeBoolean, Default: "true",
		field: func(c *Config) any { return &c.ControlledShutdownEnable },
		Doc:   "Move leadership away from a broker before it shuts down."},

	// Quotas (Kafka's QuotaConfig): the windows client, controller mutation
	// and replication quotas are measured over, and the replication
	// throttles, which kafka-reassign-partitions --throttle sets per broker.
	{Name: "quota.window.num", Type: TypeInt, Default: "11", check: atLeast(1),
		field: func(c *Config) any { return &c.QuotaWindowNum },
		Doc:   "The number of samples client quotas (producer_byte_rate, consumer_byte_rate, request_percentage) are measured over."},
	{Name: "quota.window.size.seconds", Type: TypeInt, Default: "1", Unit: time.Second, check: atLeast(1),
		field: func(c *Config) any { return &c.QuotaWindowSize },
		Doc:   "The time span of each sample for client quotas."},
	{Name: "controller.quota.window.num", Type: TypeInt, Default: "11", check: atLeast(1),
		field: func(c *Config) any { return &c.ControllerQuotaWindowNum },
		Doc:   "The number of samples controller mutation quotas (controller_mutation_rate) hold."},
	{Name: "controller.quota.window.size.seconds", Type: TypeInt, Default: "1", Unit: time.Second, check: atLeast(1),
		field: func(c *Config) any { return &c.ControllerQuotaWindowSize },
		Doc:   "The time span of each sample for controller mutation quotas."},
	{Name: "replication.quota.window.num", Type: TypeInt, Default: "11", check: atLeast(1),
		field: func(c *Config) any { return &c.ReplicationQuotaWindowNum },
		Doc:   "The number of samples replication throttles are measured over."},
	{Name: "replication.quota.window.size.seconds", Type: TypeInt, Default: "1", Unit: time.Second, check: atLeast(1),
		field: func(c *Config) any { return &c.ReplicationQuotaWindowSize },
		Doc:   "The time span of each sample for replication throttles."},
	{Name: "leader.replication.throttled.rate", Type: TypeLong, Default: maxInt64, Dynamic: true, check: atLeast(0),
		field: func(c *Config) any { return &c.LeaderReplicationThrottledRate },
		Doc:   "Bytes/s a leader sends to out-of-sync followers of the replicas in its topics' leader.replication.throttled.replicas. Kafka reads it only from dynamic broker configs; kbroker also takes a static value as the default."},
	{Name: "follower.replication.throttled.rate", Type: TypeLong, Default: maxInt64, Dynamic: true, check: atLeast(0),
		field: func(c *Config) any { return &c.FollowerReplicationThrottledRate },
		Doc:   "Bytes/s a follower fetches for its out-of-sync replicas in its topics' follower.replication.throttled.replicas. Kafka reads it only from dynamic broker configs; kbroker also takes a static value as the default."},

	// Groups and offsets.
	{Name: "offsets.topic.num.partitions", Type: TypeInt, Default: "50", check: atLeast(1),
		field: func(c *Config) any { return &c.OffsetsTopicNumPartitions },
		Doc:   "Partitions of __consumer_offsets; do not change after deployment."},
	{Name: "offsets.topic.replication.factor", Type: TypeShort, Default: "3", check: atLeast(1),
		field: func(c *Config) any { return &c.OffsetsTopicReplicationFactor },
		Doc:   "Replication factor of __consumer_offsets; creation waits until enough brokers are alive."},
	{Name: "offsets.topic.segment.bytes", Type: TypeInt, Default: "104857600", check: atLeast(1),
		field: func(c *Config) any { return &c.OffsetsTopicSegmentBytes },
		Doc:   "Segment size of __consumer_offsets."},
	{Name: "offsets.retention.minutes", Type: TypeInt, Default: "10080", Unit: time.Minute, check: atLeast(1),
		field: func(c *Config) any { return &c.OffsetsRetentionMinutes },
		Doc:   "How long committed offsets of an empty group are kept."},
	{Name: "offsets.retention.check.interval.ms", Type: TypeLong, Default: "600000", check: atLeast(1),
		field: func(c *Config) any { return &c.OffsetsRetentionCheckInterval },
		Doc:   "How often stale offsets are looked for."},
	{Name: "offset.metadata.max.bytes", Type: TypeInt, Default: "4096", check: atLeast(0),
		field: func(c *Config) any { return &c.OffsetMetadataMaxBytes },
		Doc:   "The largest metadata string of an offset commit."},
	{Name: "group.min.session.timeout.ms", Type: TypeInt, Default: "6000", check: atLeast(0),
		field: func(c *Config) any { return &c.GroupMinSessionTimeout },
		Doc:   "The shortest session timeout a classic group member may ask for."},
	{Name: "group.max.session.timeout.ms", Type: TypeInt, Default: "1800000", check: atLeast(0),
		field: func(c *Config) any { return &c.GroupMaxSessionTimeout },
		Doc:   "The longest session timeout a classic group member may ask for."},
	{Name: "group.initial.rebalance.delay.ms", Type: TypeInt, Default: "3000", check: atLeast(0),
		field: func(c *Config) any { return &c.GroupInitialRebalanceDelay },
		Doc:   "How long the first rebalance of a new classic group waits for more members."},
	{Name: "group.max.size", Type: TypeInt, Default: maxInt32, check: atLeast(1),
		field: func(c *Config) any { return &c.GroupMaxSize },
		Doc:   "The most members a classic group may have."},
	{Name: "group.coordinator.rebalance.protocols", Type: TypeList, Default: "classic,consumer", check: rebalanceProtocols,
		field: func(c *Config) any { return &c.GroupCoordinatorRebalanceProtocols },
		Doc:   "Rebalance protocols the group coordinator offers; must include classic."},
	{Name: "group.consumer.heartbeat.interval.ms", Type: TypeInt, Default: "5000", check: atLeast(1),
		field: func(c *Config) any { return &c.GroupConsumerHeartbeatInterval },
		Doc:   "KIP-848 consumer groups: the heartbeat interval given to members."},
	{Name: "group.consumer.min.heartbeat.interval.ms", Type: TypeInt, Default: "5000", check: atLeast(1),
		field: func(c *Config) any { return &c.GroupConsumerMinHeartbeatInterval },
		Doc:   "KIP-848 consumer groups: the shortest heartbeat interval."},
	{Name: "group.consumer.max.heartbeat.interval.ms", Type: TypeInt, Default: "15000", check: atLeast(1),
		field: func(c *Config) any { return &c.GroupConsumerMaxHeartbeatInterval },
		Doc:   "KIP-848 consumer groups: the longest heartbeat interval."},
	{Name: "group.consumer.session.timeout.ms", Type: TypeInt, Default: "45000", check: atLeast(1),
		field: func(c *Config) any { return &c.GroupConsumerSessionTimeout },
		Doc:   "KIP-848 consumer groups: the session timeout of members."},
	{Name: "group.consumer.min.session.timeout.ms", Type: TypeInt, Default: "45000", check: atLeast(1),
		field: func(c *Config) any { return &c.GroupConsumerMinSessionTimeout },
		Doc:   "KIP-848 consumer groups: the shortest session timeout."},
	{Name: "group.consumer.max.session.timeout.ms", Type: TypeInt, Default: "60000", check: atLeast(1),
		field: func(c *Config) any { return &c.GroupConsumerMaxSessionTimeout },
		Doc:   "KIP-848 consumer groups: the longest session timeout."},
	{Name: "group.consumer.assignors", Type: TypeList, Default: "uniform,range", check: oneOf("uniform", "range"),
		field: func(c *Config) any { return &c.GroupConsumerAssignors },
		Doc:   "KIP-848 consumer groups: server-side assignors, the first is the default."},
	{Name: "group.consumer.max.size", Type: TypeInt, Default: maxInt32, check: atLeast(1),
		field: func(c *Config) any { return &c.GroupConsumerMaxSize },
		Doc:   "KIP-848 consumer groups: the most members a group may have."},

	// Share groups (KIP-932): the defaults of a share group's share.*
	// group configs and the bounds a group value must lie in.
	{Name: "group.share.session.timeout.ms", Type: TypeInt, Default: "45000", check: atLeast(1),
		field: func(c *Config) any { return &c.GroupShareSessionTimeout },
		Doc:   "Share groups: a member that does not heartbeat for this long is removed (share.session.timeout.ms default)."},
	{Name: "group.share.min.session.timeout.ms", Type: TypeInt, Default: "45000", check: atLeast(1),
		field: func(c *Config) any { return &c.GroupShareMinSessionTimeout },
		Doc:   "Share groups: the smallest share.session.timeout.ms a group may set."},
	{Name: "group.share.max.session.timeout.ms", Type: TypeInt, Default: "60000", check: atLeast(1),
		field: func(c *Config) any { return &c.GroupShareMaxSessionTimeout },
		Doc:   "Share groups: the largest share.session.timeout.ms a group may set."},
	{Name: "group.share.heartbeat.interval.ms", Type: TypeInt, Default: "5000", check: atLeast(1),
		field: func(c *Config) any { return &c.GroupShareHeartbeatInterval },
		Doc:   "Share groups: the heartbeat interval given to members (share.heartbeat.interval.ms default)."},
	{Name: "group.share.min.heartbeat.interval.ms", Type: TypeInt, Default: "5000", check: atLeast(1),
		field: func(c *Config) any { return &c.GroupShareMinHeartbeatInterval },
		Doc:   "Share groups: the smallest share.heartbeat.interval.ms a group may set."},
	{Name: "group.share.max.heartbeat.interval.ms", Type: TypeInt, Default: "15000", check: atLeast(1),
		field: func(c *Config) any { return &c.GroupShareMaxHeartbeatInterval },
		Doc:   "Share groups: the largest share.heartbeat.interval.ms a group may set."},
	{Name: "group.share.record.lock.duration.ms", Type: TypeInt, Default: "30000", check: atLeast(1000),
		field: func(c *Config) any { return &c.GroupShareRecordLockDuration },
		Doc:   "Share groups: how long an acquired record stays locked to its member (share.record.lock.duration.ms default)."},
	{Name: "group.share.min.record.lock.duration.ms", Type: TypeInt, Default: "15000", check: atLeast(1000),
		field: func(c *Config) any { return &c.GroupShareMinRecordLockDuration },
		Doc:   "Share groups: the smallest share.record.lock.duration.ms a group may set."},
	{Name: "group.share.max.record.lock.duration.ms", Type: TypeInt, Default: "60000", check: atLeast(1000),
		field: func(c *Config) any { return &c.GroupShareMaxRecordLockDuration },
		Doc:   "Share groups: the largest share.record.lock.duration.ms a group may set."},
	{Name: "group.share.delivery.count.limit", Type: TypeInt, Default: "5", check: between(2, 10),
		field: func(c *Config) any { return &c.GroupShareDeliveryCountLimit },
		Doc:   "Share groups: a record delivered this many times is archived (share.delivery.count.limit default)."},
	{Name: "group.share.min.delivery.count.limit", Type: TypeInt, Default: "2", check: between(2, 10),
		field: func(c *Config) any { return &c.GroupShareMinDeliveryCountLimit },
		Doc:   "Share groups: the smallest share.delivery.count.limit a group may set."},
	{Name: "group.share.max.delivery.count.limit", Type: TypeInt, Default: "10", check: between(2, 10),
		field: func(c *Config) any { return &c.GroupShareMaxDeliveryCountLimit },
		Doc:   "Share groups: the largest share.delivery.count.limit a group may set."},
	{Name: "group.share.partition.max.record.locks", Type: TypeInt, Default: "2000", check: between(100, 10000),
		field: func(c *Config) any { return &c.GroupSharePartitionMaxRecordLocks },
		Doc:   "Share groups: the most in-flight records of one share-partition (share.partition.max.record.locks default)."},
	{Name: "group.share.min.partition.max.record.locks", Type: TypeInt, Default: "100", check: between(100, 10000),
		field: func(c *Config) any { return &c.GroupShareMinPartitionMaxRecordLocks },
		Doc:   "Share groups: the smallest share.partition.max.record.locks a group may set."},
	{Name: "group.share.max.partition.max.record.locks", Type: TypeInt, Default: "10000", check: between(100, 10000),
		field: func(c *Config) any { return &c.GroupShareMaxPartitionMaxRecordLocks },
		Doc:   "Share groups: the largest share.partition.max.record.locks a group may set."},
	{Name: "group.share.max.size", Type: TypeInt, Default: "200", check: between(10, 1000),
		field: func(c *Config) any { return &c.GroupShareMaxSize },
		Doc:   "Share groups: the most members a share group may have."},
	{Name: "group.share.max.share.sessions", Type: TypeInt, Default: "2000", check: atLeast(1),
		field: func(c *Config) any { return &c.GroupShareMaxShareSessions },
		Doc:   "Share groups: the most share sessions (ShareFetch) this broker keeps."},
	{Name: "group.share.initialize.retry.interval.ms", Type: TypeInt, Default: "30000", check: atLeast(1),
		field: func(c *Config) any { return &c.GroupShareInitializeRetryInterval },
		Doc:   "Share groups: how long share-state initialization may stay pending before it is tried again."},
	{Name: "share.coordinator.state.topic.num.partitions", Type: TypeInt, Default: "50", check: atLeast(1),
		field: func(c *Config) any { return &c.ShareCoordinatorStateTopicPartitions },
		Doc:   "Partitions of __share_group_state; do not change after deployment."},
	{Name: "share.coordinator.state.topic.replication.factor", Type: TypeShort, Default: "3", check: atLeast(1),
		field: func(c *Config) any { return &c.ShareCoordinatorStateTopicRF },
		Doc:   "Replication factor of __share_group_state (lowered to the cluster size on a smaller cluster)."},
	{Name: "share.coordinator.state.topic.min.isr", Type: TypeShort, Default: "2", check: atLeast(1),
		field: func(c *Config) any { return &c.ShareCoordinatorStateTopicMinISR },
		Doc:   "min.insync.replicas of __share_group_state."},
	{Name: "share.coordinator.state.topic.segment.bytes", Type: TypeInt, Default: "104857600", check: atLeast(1),
		field: func(c *Config) any { return &c.ShareCoordinatorStateTopicSegmentSize },
		Doc:   "Segment size of __share_group_state."},
	{Name: "share.coordinator.snapshot.update.records.per.snapshot", Type: TypeInt, Default: "500", check: between(0, 500),
		field: func(c *Config) any { return &c.ShareCoordinatorUpdatesPerSnapshot },
		Doc:   "Share state updates of a share-partition between two snapshots of it."},
	{Name: "share.coordinator.write.timeout.ms", Type: TypeInt, Default: "5000", check: atLeast(1),
		field: func(c *Config) any { return &c.ShareCoordinatorWriteTimeout },
		Doc:   "How long a share state write waits for __share_group_state's ISR."},
	{Name: "share.coordinator.state.topic.prune.interval.ms", Type: TypeLong, Default: "300000", check: atLeast(1),
		field: func(c *Config) any { return &c.ShareCoordinatorPruneInterval },
		Doc:   "How often redundant __share_group_state records are deleted."},
	{Name: "share.coordinator.cold.partition.snapshot.interval.ms", Type: TypeInt, Default: "300000", check: atLeast(1),
		field: func(c *Config) any { return &c.ShareCoordinatorColdSnapshotInterval },
		Doc:   "A share-partition not written for this long is snapshotted again so that older records can be pruned."},

	// Producers and transactions.
	{Name: "producer.id.expiration.ms", Type: TypeInt, Default: "86400000", Dynamic: true, check: atLeast(1),
		field: func(c *Config) any { return &c.ProducerIDExpiration },
		Doc:   "How long a producer id's state is kept after its last write."},
	{Name: "transaction.max.timeout.ms", Type: TypeInt, Default: "900000", check: atLeast(1),
		field: func(c *Config) any { return &c.TransactionMaxTimeout },
		Doc:   "The longest transaction.timeout.ms a producer may ask for."},
	{Name: "transactional.id.expiration.ms", Type: TypeInt, Default: "604800000", check: atLeast(1),
		field: func(c *Config) any { return &c.TransactionalIDExpiration },
		Doc:   "How long an idle transactional id is kept."},
	{Name: "transaction.state.log.num.partitions", Type: TypeInt, Default: "50", check: atLeast(1),
		field: func(c *Config) any { return &c.TransactionStateLogNumPartitions },
		Doc:   "Partitions of __transaction_state; do not change after deployment."},
	{Name: "transaction.state.log.replication.factor", Type: TypeShort, Default: "3", check: atLeast(1),
		field: func(c *Config) any { return &c.TransactionStateLogReplicationFactor },
		Doc:   "Replication factor of __transaction_state; lowered (with min.isr) only when the cluster has fewer brokers."},
	{Name: "transaction.state.log.min.isr", Type: TypeInt, Default: "2", check: atLeast(1),
		field: func(c *Config) any { return &c.TransactionStateLogMinISR },
		Doc:   "min.insync.replicas of __transaction_state."},
	{Name: "transaction.state.log.segment.bytes", Type: TypeInt, Default: "104857600", check: atLeast(1),
		field: func(c *Config) any { return &c.TransactionStateLogSegmentBytes },
		Doc:   "Segment size of __transaction_state."},
	{Name: "transaction.abort.timed.out.transaction.cleanup.interval.ms", Type: TypeInt, Default: "10000", check: atLeast(1),
		field: func(c *Config) any { return &c.TransactionAbortTimedOutCleanupInterval },
		Doc:   "How often the coordinator aborts transactions open longer than their timeout."},
	{Name: "transaction.remove.expired.transaction.cleanup.interval.ms", Type: TypeInt, Default: "3600000", check: atLeast(1),
		field: func(c *Config) any { return &c.TransactionRemoveExpiredCleanupInterval },
		Doc:   "How often the coordinator removes transactional ids idle longer than transactional.id.expiration.ms."},
	{Name: "add.partitions.to.txn.retry.backoff.ms", Type: TypeInt, Default: "20", check: atLeast(1),
		field: func(c *Config) any { return &c.AddPartitionsToTxnRetryBackoff },
		Doc:   "How long a partition leader waits before asking the coordinator again to add a partition to a transaction whose previous one is still completing (CONCURRENT_TRANSACTIONS, transaction version 2)."},
	{Name: "add.partitions.to.txn.retry.backoff.max.ms", Type: TypeInt, Default: "100", check: atLeast(0),
		field: func(c *Config) any { return &c.AddPartitionsToTxnRetryBackoffMax },
		Doc:   "How long in all a partition leader retries adding a partition before it answers CONCURRENT_TRANSACTIONS."},
	{Name: "transaction.concurrent.wait.ms", Type: TypeInt, Default: "5000", check: atLeast(0),
		field: func(c *Config) any { return &c.TransactionConcurrentWait },
		Doc: "How long the transaction coordinator holds a request that meets a state change of its transactional id in flight " +
			"(another leader's add of a partition to the same transaction, the previous transaction's markers: a transaction version 2 producer's " +
			"first produces of each transaction) before it answers CONCURRENT_TRANSACTIONS; the request goes on as soon as the change is written. " +
			"Kafka answers at once and its leaders retry a produce's verification for add.partitions.to.txn.retry.backoff.max.ms, but a client that " +
			"gets the error backs off (franz-go 250 ms and more, and fails the batches pipelined behind it), which costs more than the wait; " +
			"0 answers at once (kbroker key)."},

	// Connections and operations.
	{Name: "socket.request.max.bytes", Type: TypeInt, Default: "104857600", check: atLeast(1),
		field: func(c *Config) any { return &c.SocketRequestMaxBytes },
		Doc:   "The largest request the broker reads; a larger one closes the connection."},
	{Name: "connections.max.idle.ms", Type: TypeLong, Default: "600000", check: atLeast(0),
		field: func(c *Config) any { return &c.ConnectionsMaxIdle },
		Doc:   "Idle connections are closed after this long."},
	{Name: "max.connections", Type: TypeInt, Default: maxInt32, Dynamic: true, check: atLeast(0),
		field: func(c *Config) any { return &c.MaxConnections },
		Doc:   "The most client connections the broker accepts."},
	{Name: "queued.max.requests", Type: TypeInt, Default: "500", check: atLeast(1),
		field: func(c *Config) any { return &c.QueuedMaxRequests },
		Doc:   "Requests queued before the broker stops reading from connections."},
	{Name: "metrics.listen", Type: TypeString, Default: "127.0.0.1:9644", check: hostPortOrEmpty,
		field: func(c *Config) any { return &c.MetricsListen },
		Doc:   "host:port of the Prometheus /metrics endpoint; empty disables it (kbroker key)."},
	{Name: "console.enable", Type: TypeBoolean, Default: "true",
		field: func(c *Config) any { return &c.ConsoleEnable },
		Doc:   "Serve the read-only web console at /ui on metrics.listen (kbroker key)."},
	// Security.
	{Name: "security.inter.broker.protocol", Type: TypeString, Default: "PLAINTEXT",
		check: oneOf(securityProtocols...),
		field: func(c *Config) any { return &c.SecurityInterBrokerProtocol },
		Doc:   "The security protocol brokers talk to each other with; names the inter-broker listener when inter.broker.listener.name is not set (set only one of them)."},
	{Name: "sasl.mechanism.inter.broker.protocol", Type: TypeString, Default: "GSSAPI",
		field: func(c *Config) any { return &c.SaslMechanismInterBrokerProtocol },
		Doc:   "The SASL mechanism brokers authenticate to each other with on a SASL inter-broker listener (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER; GSSAPI is not supported)."},
	{Name: "sasl.mechanism.controller.protocol", Type: TypeString, Default: "GSSAPI",
		field: func(c *Config) any { return &c.SaslMechanismControllerProtocol },
		Doc:   "The SASL mechanism nodes authenticate to the controller quorum with on a SASL controller listener."},
	{Name: "super.users", Type: TypeString, NoDefault: true,
		field: func(c *Config) any { return &c.SuperUsers },
		Doc:   "Semicolon-separated principals (User:admin;User:broker) allowed everything, whatever the ACLs say."},
	{Name: "allow.everyone.if.no.acl.found", Type: TypeBoolean, Default: "false",
		field: func(c *Config) any { return &c.AllowEveryoneIfNoACLFound },
		Doc:   "Allow an operation on a resource that no ACL applies to at all."},
	{Name: "authorizer.class.name", Type: TypeString, Default: "",
		field: func(c *Config) any { return &c.AuthorizerClassName },
		Doc:   "org.apache.kafka.metadata.authorizer.StandardAuthorizer enables ACLs (stored in the metadata log); empty: no authorization."},
	{Name: "connections.max.reauth.ms", Type: TypeLong, Default: "0", check: atLeast(0),
		field: func(c *Config) any { return &c.ConnectionsMaxReauth },
		Doc:   "KIP-368: a SASL connection must re-authenticate within this long (0: never); listener.name.<l>.connections.max.reauth.ms overrides it."},
	{Name: "connection.failed.authentication.delay.ms", Type: TypeInt, Default: "100", check: atLeast(0),
		field: func(c *Config) any { return &c.ConnectionFailedAuthDelay },
		Doc:   "How long a failed authentication's answer is delayed before the connection closes."},
	{Name: "ssl.store.reload.interval.ms", Type: TypeLong, Default: "10000", check: atLeast(0),
		field: func(c *Config) any { return &c.SSLStoreReloadInterval },
		Doc:   "How often the listeners' keystore and truststore files are checked for changes, which are served without a restart; 0 disables it (kbroker key)."},

	{Name: "log.format", Type: TypeString, Default: "text", FlagAlias: "log-format", check: oneOf("text", "json"),
		field: func(c *Config) any { return &c.LogFormat },
		Doc:   "Format of kbroker's own logs: text or json (kbroker key)."},
	{Name: "log.level", Type: TypeString, Default: "info", FlagAlias: "log-level", check: oneOf("debug", "info", "warn", "error"),
		field: func(c *Config) any { return &c.LogLevel },
		Doc:   "Level of kbroker's own logs: debug, info, warn or error (kbroker key)."},
}

// rebalanceProtocols checks group.coordinator.rebalance.protocols: known
// protocols, classic among them (as Kafka requires).
func rebalanceProtocols(v any) string {
	if p := oneOf("classic", "consumer", "share", "streams")(v); p != "" {
		return p
	}
	if !slices.Contains(v.([]string), "classic") {
		return "is invalid: must include classic"
	}
	return ""
}

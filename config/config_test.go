package config

import (
	"errors"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestDefaults(t *testing.T) {
	c := Defaults()
	if err := c.Validate(); err != nil {
		t.Fatalf("Defaults().Validate() = %v", err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"NodeID", c.NodeID, int32(1)},
		{"ProcessRoles", c.ProcessRoles, []string{"broker", "controller"}},
		{"Listeners", c.Listeners, []Listener{{Name: "PLAINTEXT", Host: "127.0.0.1", Port: 9092}}},
		{"AdvertisedListeners", c.AdvertisedListeners, []Listener{{Name: "PLAINTEXT", Host: "127.0.0.1", Port: 9092}}},
		{"ListenerSecurityProtocolMap", c.ListenerSecurityProtocolMap["SASL_SSL"], "SASL_SSL"},
		{"InterBrokerListenerName", c.InterBrokerListenerName, "PLAINTEXT"},
		{"ControllerListenerNames", c.ControllerListenerNames, []string{"CONTROLLER"}},
		{"ControllerQuorumVoters", len(c.ControllerQuorumVoters), 0},
		{"ControllerQuorumElectionTimeout", c.ControllerQuorumElectionTimeout, time.Second},
		{"ControllerQuorumFetchTimeout", c.ControllerQuorumFetchTimeout, 2 * time.Second},
		{"BrokerSessionTimeout", c.BrokerSessionTimeout, 9 * time.Second},
		{"BrokerHeartbeatInterval", c.BrokerHeartbeatInterval, 2 * time.Second},
		{"LogDirs", c.LogDirs, []string{"./data"}},
		{"NumPartitions", c.NumPartitions, int32(1)},
		{"DefaultReplicationFactor", c.DefaultReplicationFactor, int16(1)},
		{"MinInsyncReplicas", c.MinInsyncReplicas, int32(1)},
		{"UncleanLeaderElectionEnable", c.UncleanLeaderElectionEnable, false},
		{"AutoCreateTopicsEnable", c.AutoCreateTopicsEnable, true},
		{"DeleteTopicEnable", c.DeleteTopicEnable, true},
		{"LogSegmentBytes", c.LogSegmentBytes, int64(1 << 30)},
		{"LogRollMs", c.LogRollMs, 168 * time.Hour},
		{"LogRetentionMs", c.LogRetentionMs, 168 * time.Hour},
		{"LogRetentionBytes", c.LogRetentionBytes, int64(-1)},
		{"LogRetentionCheckInterval", c.LogRetentionCheckInterval, 5 * time.Minute},
		{"LogFlushIntervalMessages", c.LogFlushIntervalMessages, int64(math.MaxInt64)},
		{"LogFlushIntervalMs", c.LogFlushIntervalMs, Forever},
		{"LogFlushSchedulerInterval", c.LogFlushSchedulerInterval, Forever},
		{"LogFlushOffsetCheckpointInterval", c.LogFlushOffsetCheckpointInterval, time.Minute},
		{"LogIndexSizeMaxBytes", c.LogIndexSizeMaxBytes, int32(10 << 20)},
		{"LogIndexIntervalBytes", c.LogIndexIntervalBytes, int32(4096)},
		{"LogCleanupPolicy", c.LogCleanupPolicy, []string{"delete"}},
		{"LogMessageTimestampType", c.LogMessageTimestampType, "CreateTime"},
		{"LogMessageTimestampBeforeMaxMs", c.LogMessageTimestampBeforeMaxMs, Forever},
		{"LogMessageTimestampAfterMaxMs", c.LogMessageTimestampAfterMaxMs, time.Hour},
		{"MessageMaxBytes", c.MessageMaxBytes, int32(1048588)},
		{"SocketRequestMaxBytes", c.SocketRequestMaxBytes, int32(104857600)},
		{"ReplicaFetchMaxBytes", c.ReplicaFetchMaxBytes, int32(1048576)},
		{"ReplicaFetchResponseMaxBytes", c.ReplicaFetchResponseMaxBytes, int32(10485760)},
		{"ReplicaFetchWaitMax", c.ReplicaFetchWaitMax, 500 * time.Millisecond},
		{"ReplicaFetchMinBytes", c.ReplicaFetchMinBytes, int32(1)},
		{"ReplicaFetchBackoff", c.ReplicaFetchBackoff, time.Second},
		{"ReplicaLagTimeMax", c.ReplicaLagTimeMax, 30 * time.Second},
		{"ReplicaSocketTimeout", c.ReplicaSocketTimeout, 30 * time.Second},
		{"NumReplicaFetchers", c.NumReplicaFetchers, int32(1)},
		{"ReplicaHighWatermarkCheckpointInterval", c.ReplicaHighWatermarkCheckpointInterval, 5 * time.Second},
		{"AutoLeaderRebalanceEnable", c.AutoLeaderRebalanceEnable, true},
		{"LeaderImbalanceCheckInterval", c.LeaderImbalanceCheckInterval, 300 * time.Second},
		{"LeaderImbalancePerBrokerPercentage", c.LeaderImbalancePerBrokerPercentage, int32(10)},
		{"ControlledShutdownEnable", c.ControlledShutdownEnable, true},
		{"OffsetsTopicNumPartitions", c.OffsetsTopicNumPartitions, int32(50)},
		{"OffsetsTopicReplicationFactor", c.OffsetsTopicReplicationFactor, int16(3)},
		{"OffsetsTopicSegmentBytes", c.OffsetsTopicSegmentBytes, int64(104857600)},
		{"OffsetsRetentionMinutes", c.OffsetsRetentionMinutes, 10080 * time.Minute},
		{"OffsetsRetentionCheckInterval", c.OffsetsRetentionCheckInterval, 10 * time.Minute},
		{"GroupMinSessionTimeout", c.GroupMinSessionTimeout, 6 * time.Second},
		{"GroupMaxSessionTimeout", c.GroupMaxSessionTimeout, 30 * time.Minute},
		{"GroupInitialRebalanceDelay", c.GroupInitialRebalanceDelay, 3 * time.Second},
		{"GroupMaxSize", c.GroupMaxSize, int32(math.MaxInt32)},
		{"GroupConsumerHeartbeatInterval", c.GroupConsumerHeartbeatInterval, 5 * time.Second},
		{"GroupConsumerSessionTimeout", c.GroupConsumerSessionTimeout, 45 * time.Second},
		{"GroupConsumerAssignors", c.GroupConsumerAssignors, []string{"uniform", "range"}},
		{"GroupCoordinatorRebalanceProtocols", c.GroupCoordinatorRebalanceProtocols, []string{"classic", "consumer"}},
		{"ProducerIDExpiration", c.ProducerIDExpiration, 24 * time.Hour},
		{"TransactionMaxTimeout", c.TransactionMaxTimeout, 15 * time.Minute},
		{"TransactionalIDExpiration", c.TransactionalIDExpiration, 7 * 24 * time.Hour},
		{"MetricsListen", c.MetricsListen, "127.0.0.1:9644"},
		{"ConsoleEnable", c.ConsoleEnable, true},
		{"LogFormat", c.LogFormat, "text"},
		{"LogLevel", c.LogLevel, "info"},
		{"ConnectionsMaxIdle", c.ConnectionsMaxIdle, 10 * time.Minute},
		{"MaxConnections", c.MaxConnections, int32(math.MaxInt32)},
		{"QueuedMaxRequests", c.QueuedMaxRequests, int32(500)},
	}
	for _, tc := range checks {
		if !reflect.DeepEqual(tc.got, tc.want) {
			t.Errorf("%s = %v, want %v", tc.name, tc.got, tc.want)
		}
	}
	// The single-node default: a quorum of one on the client port + 10000.
	if got, want := c.EffectiveVoters(), []Voter{{ID: 1, Host: "127.0.0.1", Port: 19092}}; !reflect.DeepEqual(got, want) {
		t.Errorf("EffectiveVoters() = %v, want %v", got, want)
	}
	if got := c.ControllerListenAddr(); got != "127.0.0.1:19092" {
		t.Errorf("ControllerListenAddr() = %q, want 127.0.0.1:19092", got)
	}
}

// Every Config field is set by some key, and every key's field is one the
// parser knows (a key of an unsupported Go type would panic here).
func TestKeyTableCoversConfig(t *testing.T) {
	c := &Config{}
	bound := map[uintptr]bool{}
	names := map[string]bool{}
	for _, k := range Keys() {
		if names[k.Name] {
			t.Errorf("key %s declared twice", k.Name)
		}
		names[k.Name] = true
		p := reflect.ValueOf(k.field(c))
		bound[p.Pointer()] = true
		_ = getValue(k.field(c), k.unit())
		if k.Doc == "" {
			t.Errorf("key %s has no doc", k.Name)
		}
		if classify(k.Name) != classKnown {
			t.Errorf("key %s does not classify as known", k.Name)
		}
	}
	v := reflect.ValueOf(c).Elem()
	for i := range v.NumField() {
		f := v.Type().Field(i)
		if !f.IsExported() || f.Name == "Ignored" || f.Name == "Unknown" || f.Name == "Security" {
			continue
		}
		if !bound[v.Field(i).Addr().Pointer()] {
			t.Errorf("Config.%s is set by no key", f.Name)
		}
	}
}

func TestKeyTableConsistency(t *testing.T) {
	for _, k := range Keys() {
		if !k.NoDefault {
			if _, err := k.parse(k.Default); err != nil {
				t.Errorf("default of %s does not parse: %v", k.Name, err)
			}
		}
		if k.SynonymOf != "" {
			main := keyByName(k.SynonymOf)
			if main == nil {
				t.Errorf("%s is a synonym of unknown key %s", k.Name, k.SynonymOf)
				continue
			}
			if reflect.ValueOf(main.field(&Config{})).Type() != reflect.ValueOf(k.field(&Config{})).Type() {
				t.Errorf("%s and its main key %s set fields of different types", k.Name, main.Name)
			}
		}
		if k.isDuration() && k.Unit == 0 {
			t.Errorf("Keys() left the unit of duration key %s empty", k.Name)
		}
		if !k.isDuration() && k.Unit != 0 {
			t.Errorf("non-duration key %s has a unit", k.Name)
		}
		if strings.HasSuffix(k.Name, ".ms") != (k.Unit == time.Millisecond) {
			t.Errorf("key %s: unit %v does not match its name", k.Name, k.Unit)
		}
	}
	retention := keyByName("log.retention.ms")
	if got := Keys()[slices.IndexFunc(Keys(), func(k Key) bool { return k.Name == retention.Name })]; !slices.Equal(got.Synonyms, []string{"log.retention.minutes", "log.retention.hours"}) || got.TopicConfig != "retention.ms" {
		t.Errorf("log.retention.ms: Synonyms = %v, TopicConfig = %q", got.Synonyms, got.TopicConfig)
	}
	if got := (Key{Name: "log.dirs"}).EnvName(); got != "KBROKER_LOG_DIRS" {
		t.Errorf("EnvName = %q", got)
	}
}

func TestIgnoredKeysAreNotKeys(t *testing.T) {
	for _, name := range ignoredKeys {
		if keyByName(name) != nil {
			t.Errorf("%s is both a key and ignored", name)
		}
	}
	for name, want := range map[string]keyClass{
		"num.network.threads":             classIgnored,
		"log.cleaner.threads":             classIgnored,
		"log.cleaner.delete.retention.ms": classKnown,
		"group.max.size":                  classKnown,
		"group.share.enable":              classIgnored,
		"zookeeper.connect":               classIgnored,
		"no.such.key":                     classUnknown,
	} {
		if got := classify(name); got != want {
			t.Errorf("classify(%s) = %v, want %v", name, got, want)
		}
	}
}

// mutate returns Defaults with f applied.
func mutate(f func(c *Config)) *Config {
	c := Defaults()
	f(c)
	return c
}

// TestValidate checks that a bad value is refused with a message naming
// the key, the value and what is allowed.
func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  *Config
		want []string // substrings of the error
	}{
		{"min.insync.replicas", mutate(func(c *Config) { c.MinInsyncReplicas = 0 }),
			[]string{"config: min.insync.replicas=0 is out of range: must be >= 1"}},
		{"node.id", mutate(func(c *Config) { c.NodeID = -1 }),
			[]string{"config: node.id=-1 is out of range: must be >= 0"}},
		{"num.partitions", mutate(func(c *Config) { c.NumPartitions = 0 }),
			[]string{"config: num.partitions=0 is out of range: must be >= 1"}},
		{"default.replication.factor", mutate(func(c *Config) { c.DefaultReplicationFactor = 0 }),
			[]string{"config: default.replication.factor=0 is out of range: must be >= 1"}},
		{"log.segment.bytes low", mutate(func(c *Config) { c.LogSegmentBytes = 13 }),
			[]string{"config: log.segment.bytes=13 is out of range: must be between 14 and 2147483647"}},
		{"log.segment.bytes high", mutate(func(c *Config) { c.LogSegmentBytes = 1 << 31 }),
			[]string{"config: log.segment.bytes=2147483648 is out of range: must be between 14 and 2147483647"}},
		{"log.retention.ms", mutate(func(c *Config) { c.LogRetentionMs = -2 * time.Millisecond }),
			[]string{"config: log.retention.ms=-2 is out of range: must be >= -1"}},
		{"log.roll.ms", mutate(func(c *Config) { c.LogRollMs = 0 }),
			[]string{"config: log.roll.ms=0 is out of range: must be >= 1"}},
		{"log.cleanup.policy", mutate(func(c *Config) { c.LogCleanupPolicy = []string{"delete", "archive"} }),
			[]string{`config: log.cleanup.policy=delete,archive is invalid: "archive" is not one of delete, compact`}},
		{"log.message.timestamp.type", mutate(func(c *Config) { c.LogMessageTimestampType = "Now" }),
			[]string{"config: log.message.timestamp.type=Now is invalid: must be one of CreateTime, LogAppendTime"}},
		{"process.roles", mutate(func(c *Config) { c.ProcessRoles = []string{"broker", "zookeeper"} }),
			[]string{`config: process.roles=broker,zookeeper is invalid: "zookeeper" is not one of broker, controller`}},
		{"process.roles empty", mutate(func(c *Config) { c.ProcessRoles = nil }),
			[]string{"config: process.roles= is invalid: must list at least one of broker, controller"}},
		{"log.cleaner.min.cleanable.ratio", mutate(func(c *Config) { c.LogCleanerMinCleanableRatio = 1.5 }),
			[]string{"config: log.cleaner.min.cleanable.ratio=1.5 is out of range: must be between 0 and 1"}},
		{"compression.type", mutate(func(c *Config) { c.CompressionType = "brotli" }),
			[]string{"config: compression.type=brotli is invalid: must be one of uncompressed, zstd, lz4, snappy, gzip, producer"}},
		{"compression.gzip.level", mutate(func(c *Config) { c.CompressionGzipLevel = 0 }),
			[]string{"config: compression.gzip.level=0 is out of range: must be -1 or between 1 and 9"}},
		{"log.level", mutate(func(c *Config) { c.LogLevel = "trace" }),
			[]string{"config: log.level=trace is invalid: must be one of debug, info, warn, error"}},
		{"log.format", mutate(func(c *Config) { c.LogFormat = "xml" }),
			[]string{"config: log.format=xml is invalid: must be one of text, json"}},
		{"metrics.listen", mutate(func(c *Config) { c.MetricsListen = "9644" }),
			[]string{"config: metrics.listen=9644 is invalid: must be host:port or empty"}},
		{"rebalance protocols", mutate(func(c *Config) { c.GroupCoordinatorRebalanceProtocols = []string{"consumer"} }),
			[]string{"config: group.coordinator.rebalance.protocols=consumer is invalid: must include classic"}},
		{"leader.imbalance.check.interval.seconds", mutate(func(c *Config) { c.LeaderImbalanceCheckInterval = 0 }),
			[]string{"config: leader.imbalance.check.interval.seconds=0 is out of range: must be >= 1"}},
		{"offsets.retention.minutes", mutate(func(c *Config) { c.OffsetsRetentionMinutes = 0 }),
			[]string{"config: offsets.retention.minutes=0 is out of range: must be >= 1"}},
		{"several joined", mutate(func(c *Config) { c.MinInsyncReplicas, c.NumPartitions = 0, 0 }),
			[]string{"min.insync.replicas=0", "num.partitions=0"}},
		{"heartbeat >= session", mutate(func(c *Config) { c.BrokerHeartbeatInterval = 9 * time.Second }),
			[]string{"config: broker.heartbeat.interval.ms=9000 must be less than broker.session.timeout.ms=9000"}},
		{"fetch wait > lag", mutate(func(c *Config) { c.ReplicaFetchWaitMax = time.Minute }),
			[]string{"config: replica.fetch.wait.max.ms=60000 must be at most replica.lag.time.max.ms=30000"}},
		{"group session min > max", mutate(func(c *Config) { c.GroupMinSessionTimeout = time.Hour }),
			[]string{"config: group.min.session.timeout.ms=3600000 must be at most group.max.session.timeout.ms=1800000"}},
		{"no log dirs", mutate(func(c *Config) { c.LogDirs = nil }),
			[]string{"config: log.dirs is empty"}},
		{"no listeners", mutate(func(c *Config) { c.Listeners, c.AdvertisedListeners = nil, nil }),
			[]string{"config: listeners is empty"}},
		{"unknown security protocol", mutate(func(c *Config) {
			c.ListenerSecurityProtocolMap["PLAINTEXT"] = "KERBEROS"
		}), []string{`"KERBEROS" is not one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL`}},
		{"foreign authorizer", mutate(func(c *Config) { c.AuthorizerClassName = "kafka.security.authorizer.AclAuthorizer" }),
			[]string{"authorizer.class.name=kafka.security.authorizer.AclAuthorizer is not supported"}},
		{"listener missing from map", mutate(func(c *Config) { c.Listeners[0].Name = "INTERNAL"; c.InterBrokerListenerName = "INTERNAL" }),
			[]string{"config: listener.security.protocol.map has no entry for listener INTERNAL"}},
		{"unknown protocol", mutate(func(c *Config) { c.ListenerSecurityProtocolMap["X"] = "QUIC" }),
			[]string{`"QUIC" is not one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL`}},
		{"duplicate listener name", mutate(func(c *Config) { c.Listeners = append(c.Listeners, Listener{Name: "PLAINTEXT", Port: 9093}) }),
			[]string{"listener name PLAINTEXT appears twice"}},
		{"duplicate address", mutate(func(c *Config) {
			c.Listeners = append(c.Listeners, Listener{Name: "CONTROLLER", Host: "127.0.0.1", Port: 9092})
		}), []string{"two listeners use 127.0.0.1:9092"}},
		{"inter broker listener", mutate(func(c *Config) { c.InterBrokerListenerName = "INTERNAL" }),
			[]string{"config: inter.broker.listener.name=INTERNAL does not name a listener (listeners=PLAINTEXT://127.0.0.1:9092)"}},
		{"advertised wildcard", mutate(func(c *Config) { c.AdvertisedListeners[0].Host = "0.0.0.0" }),
			[]string{`config: advertised.listeners=PLAINTEXT://0.0.0.0:9092 is invalid: PLAINTEXT has host "0.0.0.0"`}},
		{"advertised unknown name", mutate(func(c *Config) { c.AdvertisedListeners[0].Name = "EXTERNAL" }),
			[]string{"EXTERNAL is not a listener name"}},
		{"broker without client listener", mutate(func(c *Config) { c.Listeners[0].Name = "CONTROLLER" }),
			[]string{"has no listener outside controller.listener.names=CONTROLLER, which a broker needs"}},
		{"duplicate voter", mutate(func(c *Config) {
			c.ControllerQuorumVoters = []Voter{{ID: 1, Host: "a", Port: 1}, {ID: 1, Host: "b", Port: 1}}
		}), []string{"config: controller.quorum.voters=1@a:1,1@b:1 is invalid: voter id 1 appears twice"}},
		{"controller-only node not a voter", mutate(func(c *Config) {
			c.ProcessRoles = []string{"controller"}
			c.ControllerQuorumVoters = []Voter{{ID: 2, Host: "a", Port: 1}}
		}), []string{"config: node.id=1 is not in controller.quorum.voters=2@a:1: a controller must be one of the voters"}},
		{"non-voter without a controller listener", mutate(func(c *Config) { c.ControllerQuorumVoters = []Voter{{ID: 2, Host: "a", Port: 1}} }),
			[]string{"config: node.id=1 is not in controller.quorum.voters=2@a:1: a broker that joins the quorum as a non-voter needs a listener named in controller.listener.names=CONTROLLER"}},
		{"broker-only without voters", mutate(func(c *Config) { c.ProcessRoles = []string{"broker"} }),
			[]string{"config: controller.quorum.voters is empty"}},
		{"broker-only with a controller listener", mutate(func(c *Config) {
			c.ProcessRoles = []string{"broker"}
			c.ControllerQuorumVoters = []Voter{{ID: 2, Host: "a", Port: 1}}
			c.Listeners = append(c.Listeners, Listener{Name: "CONTROLLER", Port: 9093})
		}), []string{"must not listen on a controller listener"}},
		{"implicit controller port overflow", mutate(func(c *Config) { c.Listeners[0].Port = 60000 }),
			[]string{"the implicit one (client port 60000 + 10000) is not usable"}},
		{"implicit controller on ephemeral port", mutate(func(c *Config) { c.Listeners[0].Port = 0 }),
			[]string{"the implicit one (client port 0 + 10000) is not usable"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if err == nil {
				t.Fatalf("Validate() = nil, want %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate() = %q\nwant it to contain %q", err, w)
				}
			}
		})
	}
}

func TestValidateAcceptsLegalEdges(t *testing.T) {
	for name, cfg := range map[string]*Config{
		"unlimited retention": mutate(func(c *Config) { c.LogRetentionMs = -time.Millisecond }),
		"segment 14 bytes":    mutate(func(c *Config) { c.LogSegmentBytes = 14 }),
		"broker only": mutate(func(c *Config) {
			c.ProcessRoles = []string{"broker"}
			c.ControllerQuorumVoters = []Voter{{ID: 2, Host: "c2", Port: 9093}}
		}),
		"controller only": mutate(func(c *Config) {
			c.ProcessRoles = []string{"controller"}
			c.Listeners = []Listener{{Name: "CONTROLLER", Port: 9093}}
			c.AdvertisedListeners = nil
		}),
		"ephemeral port with controller listener": mutate(func(c *Config) {
			c.Listeners = []Listener{{Name: "PLAINTEXT", Host: "127.0.0.1"}, {Name: "CONTROLLER", Host: "127.0.0.1"}}
		}),
	} {
		if err := cfg.Validate(); err != nil {
			t.Errorf("%s: Validate() = %v", name, err)
		}
	}
}

func TestParseListeners(t *testing.T) {
	tests := []struct {
		in      string
		want    []Listener
		wantErr string
	}{
		{in: "PLAINTEXT://127.0.0.1:9092", want: []Listener{{"PLAINTEXT", "127.0.0.1", 9092}}},
		{in: "plaintext://:9092, CONTROLLER://[::1]:9093", want: []Listener{{"PLAINTEXT", "", 9092}, {"CONTROLLER", "::1", 9093}}},
		{in: "EXTERNAL://broker-1.example.com:19092", want: []Listener{{"EXTERNAL", "broker-1.example.com", 19092}}},
		{in: "INTERNAL://[::]:0", want: []Listener{{"INTERNAL", "::", 0}}},
		{in: "", want: nil},
		{in: "127.0.0.1:9092", wantErr: `"127.0.0.1:9092" is not NAME://host:port`},
		{in: "PLAINTEXT://::1:9092", wantErr: "an IPv6 host goes in brackets"},
		{in: "PLAINTEXT://host:99999", wantErr: `port "99999" is not in [0, 65535]`},
		{in: "PLAINTEXT://host", wantErr: "not host:port"},
	}
	for _, tc := range tests {
		got, err := ParseListeners(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ParseListeners(%q) error = %v, want %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParseListeners(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	l := Listener{Name: "CONTROLLER", Host: "::1", Port: 9093}
	if l.String() != "CONTROLLER://[::1]:9093" || l.Address() != "[::1]:9093" {
		t.Errorf("String/Address = %q, %q", l.String(), l.Address())
	}
}

func TestParseVoters(t *testing.T) {
	got, err := ParseVoters("1@127.0.0.1:19092, 2@[::1]:19093,3@c3.example:9093")
	want := []Voter{{1, "127.0.0.1", 19092}, {2, "::1", 19093}, {3, "c3.example", 9093}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("ParseVoters = %v, %v; want %v", got, err, want)
	}
	if s := want[1].String(); s != "2@[::1]:19093" {
		t.Errorf("String() = %q", s)
	}
	for _, bad := range []string{"127.0.0.1:19092", "x@h:1", "-1@h:1", "1@:9093", "1@h"} {
		if _, err := ParseVoters(bad); err == nil {
			t.Errorf("ParseVoters(%q) succeeded", bad)
		}
	}
}

func TestDerivedListeners(t *testing.T) {
	c := mutate(func(c *Config) {
		c.Listeners = []Listener{{"CONTROLLER", "", 9093}, {"INTERNAL", "", 9092}, {"EXTERNAL", "", 9094}}
		c.AdvertisedListeners = c.deriveAdvertised(func() string { return "node1.example" })
	})
	if got := c.ClientListener(); got != (Listener{"INTERNAL", "", 9092}) {
		t.Errorf("ClientListener() = %v", got)
	}
	if got, ok := c.ControllerListener(); !ok || got != (Listener{"CONTROLLER", "", 9093}) {
		t.Errorf("ControllerListener() = %v, %v", got, ok)
	}
	want := []Listener{{"INTERNAL", "node1.example", 9092}, {"EXTERNAL", "node1.example", 9094}}
	if !reflect.DeepEqual(c.AdvertisedListeners, want) {
		t.Errorf("derived advertised = %v, want %v", c.AdvertisedListeners, want)
	}
	// A quorum of one on the controller listener; its empty host becomes
	// 127.0.0.1 since the controller listener is not advertised.
	if got, want := c.EffectiveVoters(), []Voter{{1, "127.0.0.1", 9093}}; !reflect.DeepEqual(got, want) {
		t.Errorf("EffectiveVoters() = %v, want %v", got, want)
	}
	if got := c.ControllerListenAddr(); got != ":9093" {
		t.Errorf("ControllerListenAddr() = %q", got)
	}

	c.ControllerQuorumVoters = []Voter{{1, "c1", 9093}, {2, "c2", 9093}}
	if got := c.EffectiveVoters(); !reflect.DeepEqual(got, c.ControllerQuorumVoters) {
		t.Errorf("EffectiveVoters() with voters = %v", got)
	}

	// Without a controller listener, a given voter entry places the controller.
	c.Listeners = c.Listeners[1:]
	if got := c.ControllerListenAddr(); got != "c1:9093" {
		t.Errorf("ControllerListenAddr() from voters = %q", got)
	}
	c.ProcessRoles = []string{RoleBroker}
	if got, ok := c.ControllerListener(); ok || c.ControllerListenAddr() != "" {
		t.Errorf("broker-only: ControllerListener() = %v, %v; ControllerListenAddr() = %q", got, ok, c.ControllerListenAddr())
	}
}

func TestEffectiveVotersImplicitUsesAdvertisedHost(t *testing.T) {
	c := mutate(func(c *Config) {
		c.Listeners = []Listener{{"PLAINTEXT", "", 9092}}
		c.AdvertisedListeners = []Listener{{"PLAINTEXT", "broker.example", 9092}}
	})
	if got, want := c.EffectiveVoters(), []Voter{{1, "broker.example", 19092}}; !reflect.DeepEqual(got, want) {
		t.Errorf("EffectiveVoters() = %v, want %v", got, want)
	}
	if got := c.ControllerListenAddr(); got != ":19092" {
		t.Errorf("ControllerListenAddr() = %q", got)
	}
}

func TestEffectiveMetadataLogDir(t *testing.T) {
	c := mutate(func(c *Config) { c.LogDirs = []string{"/a", "/b"} })
	if got := c.EffectiveMetadataLogDir(); got != "/a" {
		t.Errorf("EffectiveMetadataLogDir() = %q", got)
	}
	c.MetadataLogDir = "/meta"
	if got := c.EffectiveMetadataLogDir(); got != "/meta" {
		t.Errorf("EffectiveMetadataLogDir() = %q", got)
	}
}

func TestEntriesDefaults(t *testing.T) {
	entries := Defaults().Entries()
	if len(entries) != len(keyTable)+len(dynamicKeys) {
		t.Fatalf("Entries() has %d entries, want one per key (%d and %d dynamic-only)", len(entries), len(keyTable), len(dynamicKeys))
	}
	if !slices.IsSortedFunc(entries, func(a, b Entry) int { return strings.Compare(a.Name, b.Name) }) {
		t.Error("Entries() not sorted by name")
	}
	byName := map[string]Entry{}
	for _, e := range entries {
		byName[e.Name] = e
		if e.Source != SourceDefault || e.Source.KafkaSource() != KafkaSourceDefault {
			t.Errorf("%s: source %v", e.Name, e.Source)
		}
	}
	for name, want := range map[string]Entry{
		"log.retention.ms":                        {Value: "604800000", Type: TypeLong},
		"log.retention.hours":                     {Value: "168", Type: TypeInt},
		"log.retention.minutes":                   {Null: true, Type: TypeInt},
		"log.flush.interval.ms":                   {Value: "9223372036854775807", Type: TypeLong},
		"log.dirs":                                {Value: "./data", Type: TypeString, ReadOnly: true},
		"listeners":                               {Value: "PLAINTEXT://127.0.0.1:9092", Type: TypeString},
		"cluster.id":                              {Null: true, Type: TypeString, ReadOnly: true},
		"controller.quorum.voters":                {Null: true, Type: TypeList, ReadOnly: true},
		"min.insync.replicas":                     {Value: "1", Type: TypeInt},
		"leader.imbalance.check.interval.seconds": {Value: "300", Type: TypeLong, ReadOnly: true},
		"listener.security.protocol.map":          {Value: "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL,SSL:SSL", Type: TypeString},
		"log.cleaner.min.cleanable.ratio":         {Value: "0.5", Type: TypeDouble},
	} {
		got := byName[name]
		if got.Value != want.Value || got.Null != want.Null || got.Type != want.Type || got.ReadOnly != want.ReadOnly {
			t.Errorf("%s = %+v, want value %q null %v type %v read-only %v", name, got, want.Value, want.Null, want.Type, want.ReadOnly)
		}
	}
}

func TestValueErrorIsTyped(t *testing.T) {
	err := mutate(func(c *Config) { c.MinInsyncReplicas = 0 }).Validate()
	var ve *ValueError
	if !errors.As(err, &ve) || ve.Key != "min.insync.replicas" || ve.Value != "0" {
		t.Fatalf("errors.As(%v) = %+v", err, ve)
	}
}

func TestDurationSaturation(t *testing.T) {
	if d := durationOf(math.MaxInt64, time.Millisecond); d != Forever {
		t.Errorf("durationOf(MaxInt64 ms) = %v", d)
	}
	if n := unitsOf(Forever, time.Millisecond); n != math.MaxInt64 {
		t.Errorf("unitsOf(Forever) = %d", n)
	}
	if d := durationOf(168, time.Hour); unitsOf(d, time.Millisecond) != 604800000 {
		t.Errorf("168h = %v", d)
	}
}

package config

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// load runs Load with a file (if any), an explicit environment (never the
// process's) and command-line flags.
func load(t *testing.T, file string, env []string, args ...string) (*Config, error) {
	t.Helper()
	fs := pflag.NewFlagSet("kbroker", pflag.ContinueOnError)
	RegisterFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("parse flags %v: %v", args, err)
	}
	if env == nil {
		env = []string{}
	}
	return Load(LoadArgs{File: file, Env: env, Flags: fs, Hostname: func() string { return "host.example" }})
}

func mustLoad(t *testing.T, file string, env []string, args ...string) *Config {
	t.Helper()
	c, err := load(t, file, env, args...)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return c
}

// writeFile writes a config file named name in a temporary directory.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func entry(c *Config, name string) Entry {
	for _, e := range c.Entries() {
		if e.Name == name {
			return e
		}
	}
	return Entry{}
}

func TestLoadNothingIsDefaults(t *testing.T) {
	c := mustLoad(t, "", nil)
	d := Defaults()
	c.origin, d.origin = nil, nil
	if !reflect.DeepEqual(c, d) {
		t.Errorf("Load with no input differs from Defaults:\n%+v\n%+v", c, d)
	}
}

// Each file format gives the same values; keys stay flat ("log.dirs" is
// not log -> dirs) and nested tables are flattened.
func TestLoadFileFormats(t *testing.T) {
	files := map[string]string{
		"server.properties": `
# comment
node.id=7
log.dirs=/d1,/d2
listeners=PLAINTEXT://:9092,CONTROLLER://[::1]:9093
min.insync.replicas : 2
unclean.leader.election.enable true
log.retention.ms=1000
`,
		"server": "node.id=7\nlog.dirs=/d1,/d2\nlisteners=PLAINTEXT://:9092,CONTROLLER://[::1]:9093\n" +
			"min.insync.replicas=2\nunclean.leader.election.enable=true\nlog.retention.ms=1000\n",
		"flat.yaml": `
node.id: 7
log.dirs: [/d1, /d2]
listeners: "PLAINTEXT://:9092,CONTROLLER://[::1]:9093"
min.insync.replicas: 2
unclean.leader.election.enable: true
log.retention.ms: 1000
`,
		"nested.yml": `
node:
  id: 7
log:
  dirs: /d1,/d2
  retention:
    ms: 1000
listeners: "PLAINTEXT://:9092,CONTROLLER://[::1]:9093"
min.insync:
  replicas: 2
unclean.leader.election.enable: true
`,
		"flat.toml": `
"node.id" = 7
"log.dirs" = ["/d1", "/d2"]
"listeners" = "PLAINTEXT://:9092,CONTROLLER://[::1]:9093"
"min.insync.replicas" = 2
"unclean.leader.election.enable" = true
"log.retention.ms" = 1000
`,
		"dotted.toml": `
node.id = 7
log.dirs = "/d1,/d2"
log.retention.ms = 1000
listeners = "PLAINTEXT://:9092,CONTROLLER://[::1]:9093"
min.insync.replicas = 2
unclean.leader.election.enable = true
`,
		"server.json": `{"node.id": 7, "log.dirs": "/d1,/d2", "listeners": "PLAINTEXT://:9092,CONTROLLER://[::1]:9093",
			"min.insync.replicas": 2, "unclean.leader.election.enable": true, "log.retention.ms": 1000}`,
	}
	for name, content := range files {
		t.Run(name, func(t *testing.T) {
			c := mustLoad(t, writeFile(t, name, content), nil)
			if c.NodeID != 7 || !slices.Equal(c.LogDirs, []string{"/d1", "/d2"}) || c.MinInsyncReplicas != 2 ||
				!c.UncleanLeaderElectionEnable || c.LogRetentionMs != time.Second {
				t.Errorf("node %d dirs %v minISR %d unclean %v retention %v",
					c.NodeID, c.LogDirs, c.MinInsyncReplicas, c.UncleanLeaderElectionEnable, c.LogRetentionMs)
			}
			want := []Listener{{"PLAINTEXT", "", 9092}, {"CONTROLLER", "::1", 9093}}
			if !reflect.DeepEqual(c.Listeners, want) {
				t.Errorf("listeners = %v", c.Listeners)
			}
			if e := entry(c, "node.id"); e.Source != SourceFile || e.Value != "7" || e.Source.KafkaSource() != KafkaSourceStaticBroker {
				t.Errorf("node.id entry = %+v", e)
			}
			if len(c.Unknown) != 0 || len(c.Ignored) != 0 {
				t.Errorf("Unknown = %v, Ignored = %v", c.Unknown, c.Ignored)
			}
		})
	}
}

func TestLoadYAMLProtocolMapAsTable(t *testing.T) {
	path := writeFile(t, "c.yaml", `
listeners: PLAINTEXT://127.0.0.1:9092,INTERNAL://127.0.0.1:9093
listener.security.protocol.map:
  PLAINTEXT: PLAINTEXT
  INTERNAL: PLAINTEXT
`)
	c := mustLoad(t, path, nil)
	want := map[string]string{"PLAINTEXT": "PLAINTEXT", "INTERNAL": "PLAINTEXT"}
	if !reflect.DeepEqual(c.ListenerSecurityProtocolMap, want) {
		t.Errorf("map = %v", c.ListenerSecurityProtocolMap)
	}
}

// A real Kafka 4.0 KRaft combined-mode config/server.properties loads
// unchanged.
func TestLoadKafkaServerProperties(t *testing.T) {
	c := mustLoad(t, "testdata/server.properties", nil)
	checks := []struct {
		name      string
		got, want any
	}{
		{"roles", c.ProcessRoles, []string{"broker", "controller"}},
		{"node", c.NodeID, int32(1)},
		{"bootstrap", c.ControllerQuorumBootstrapServers, []string{"localhost:9093"}},
		{"listeners", c.Listeners, []Listener{{"PLAINTEXT", "", 9092}, {"CONTROLLER", "", 9093}}},
		{"advertised", c.AdvertisedListeners, []Listener{{"PLAINTEXT", "localhost", 9092}, {"CONTROLLER", "localhost", 9093}}},
		{"inter broker", c.InterBrokerListenerName, "PLAINTEXT"},
		{"controller names", c.ControllerListenerNames, []string{"CONTROLLER"}},
		{"client listener", c.ClientListener(), Listener{"PLAINTEXT", "", 9092}},
		{"voters", c.EffectiveVoters(), []Voter{{1, "localhost", 9093}}},
		{"controller addr", c.ControllerListenAddr(), ":9093"},
		{"request max", c.SocketRequestMaxBytes, int32(104857600)},
		{"log dirs", c.LogDirs, []string{"/tmp/kraft-combined-logs"}},
		{"partitions", c.NumPartitions, int32(1)},
		{"offsets rf", c.OffsetsTopicReplicationFactor, int16(1)},
		{"share state rf", c.ShareCoordinatorStateTopicRF, int16(1)},
		{"share state min isr", c.ShareCoordinatorStateTopicMinISR, int16(1)},
		{"retention", c.LogRetentionMs, 168 * time.Hour},
		{"segment", c.LogSegmentBytes, int64(1073741824)},
		{"retention check", c.LogRetentionCheckInterval, 5 * time.Minute},
		// Used since the log open/close pools take it (issue 20).
		{"recovery threads", c.NumRecoveryThreadsPerDataDir, int32(1)},
		{"ignored", c.Ignored, []string{
			"num.io.threads", "num.network.threads",
			"socket.receive.buffer.bytes", "socket.send.buffer.bytes",
		}},
		// Used since transactions exist (issue 14).
		{"txn state rf", c.TransactionStateLogReplicationFactor, int16(1)},
		{"txn state min isr", c.TransactionStateLogMinISR, int32(1)},
		{"unknown", len(c.Unknown), 0},
	}
	for _, tc := range checks {
		if !reflect.DeepEqual(tc.got, tc.want) {
			t.Errorf("%s = %v, want %v", tc.name, tc.got, tc.want)
		}
	}
	if e := entry(c, "log.retention.hours"); e.Value != "168" || e.Source != SourceFile {
		t.Errorf("log.retention.hours entry = %+v", e)
	}
	if e := entry(c, "log.retention.ms"); e.Value != "604800000" || e.Source != SourceFile {
		t.Errorf("log.retention.ms entry = %+v", e)
	}
}

func TestLoadEnv(t *testing.T) {
	env := []string{
		"KBROKER_LOG_DIRS=/env/a,/env/b",
		"KBROKER_NODE_ID=4",
		"KBROKER_MIN_INSYNC_REPLICAS=2",
		"KBROKER_LOG_FORMAT=json",
		"KBROKER_CLUSTER_ID=",        // empty: unset
		"KBROKER_NUM_IO_THREADS=8",   // Kafka's, ignored
		"KBROKER_NO_SUCH_THING=1",    // unknown
		"PATH=/usr/bin", "NODE_ID=9", // not ours
		"kbroker_node_id=8", // prefix is case-sensitive
		"KBROKER_LISTENERS=PLAINTEXT://127.0.0.1:9192",
	}
	c := mustLoad(t, "", env)
	if !slices.Equal(c.LogDirs, []string{"/env/a", "/env/b"}) || c.NodeID != 4 || c.MinInsyncReplicas != 2 || c.LogFormat != "json" {
		t.Errorf("dirs %v node %d minISR %d format %q", c.LogDirs, c.NodeID, c.MinInsyncReplicas, c.LogFormat)
	}
	if c.ClusterID != "" {
		t.Errorf("ClusterID = %q from an empty variable", c.ClusterID)
	}
	if !slices.Equal(c.Ignored, []string{"num.io.threads"}) || !slices.Equal(c.Unknown, []string{"KBROKER_NO_SUCH_THING"}) {
		t.Errorf("Ignored = %v, Unknown = %v", c.Ignored, c.Unknown)
	}
	if e := entry(c, "node.id"); e.Source != SourceEnv {
		t.Errorf("node.id source = %v", e.Source)
	}
	if got := c.EffectiveVoters(); !reflect.DeepEqual(got, []Voter{{4, "127.0.0.1", 19192}}) {
		t.Errorf("EffectiveVoters() = %v", got)
	}
}

func TestLoadFlags(t *testing.T) {
	c := mustLoad(t, "", nil,
		"--log.dirs=/f/a", "--log.dirs=/f/b", // a list flag given twice appends
		"--listeners=PLAINTEXT://[::1]:9092",
		"--min.insync.replicas=2",
		"--unclean.leader.election.enable", // a boolean flag alone is true
		"--auto.create.topics.enable=false",
		"--log-format=json", "--log-level", "debug", // aliases
		"--controller.quorum.voters=1@[::1]:19092,2@h2:19092",
	)
	if !slices.Equal(c.LogDirs, []string{"/f/a", "/f/b"}) || c.MinInsyncReplicas != 2 || !c.UncleanLeaderElectionEnable ||
		c.AutoCreateTopicsEnable || c.LogFormat != "json" || c.LogLevel != "debug" {
		t.Errorf("dirs %v minISR %d unclean %v autocreate %v format %q level %q", c.LogDirs, c.MinInsyncReplicas,
			c.UncleanLeaderElectionEnable, c.AutoCreateTopicsEnable, c.LogFormat, c.LogLevel)
	}
	if want := []Listener{{"PLAINTEXT", "::1", 9092}}; !reflect.DeepEqual(c.Listeners, want) || !reflect.DeepEqual(c.AdvertisedListeners, want) {
		t.Errorf("listeners %v advertised %v", c.Listeners, c.AdvertisedListeners)
	}
	if got := c.ControllerListenAddr(); got != "[::1]:19092" {
		t.Errorf("ControllerListenAddr() = %q, want this node's voter address", got)
	}
	if e := entry(c, "log.format"); e.Source != SourceFlag || e.Value != "json" {
		t.Errorf("log.format entry = %+v", e)
	}
}

func TestRegisterFlagsHasEveryKey(t *testing.T) {
	fs := pflag.NewFlagSet("kbroker", pflag.ContinueOnError)
	RegisterFlags(fs)
	for _, k := range Keys() {
		f := fs.Lookup(k.Name)
		if f == nil {
			t.Errorf("no flag --%s", k.Name)
			continue
		}
		if !k.NoDefault && f.DefValue != k.Default {
			t.Errorf("--%s default %q, want %q", k.Name, f.DefValue, k.Default)
		}
	}
	if fs.Lookup(FlagConfig) == nil || fs.Lookup("log-format") == nil || fs.Lookup("log-level") == nil {
		t.Error("missing --config, --log-format or --log-level")
	}
	// A mistyped flag is an error (a mistyped file key is only a warning).
	if err := fs.Parse([]string{"--min.insync.replica=2"}); err == nil || !strings.Contains(err.Error(), "unknown flag: --min.insync.replica") {
		t.Errorf("typo flag: %v", err)
	}
}

func TestLoadConfigFileFromFlag(t *testing.T) {
	path := writeFile(t, "c.properties", "node.id=3\n")
	if c := mustLoad(t, "", nil, "--config="+path); c.NodeID != 3 {
		t.Errorf("NodeID = %d from --config", c.NodeID)
	}
}

// Precedence: flag > env > file > default, key by key.
func TestLoadPrecedence(t *testing.T) {
	file := writeFile(t, "c.properties", "num.partitions=2\nmin.insync.replicas=2\ndefault.replication.factor=2\n")
	env := []string{"KBROKER_MIN_INSYNC_REPLICAS=3", "KBROKER_DEFAULT_REPLICATION_FACTOR=3", "KBROKER_NUM_REPLICA_FETCHERS=3"}
	flags := []string{"--default.replication.factor=4", "--queued.max.requests=4"}
	tests := []struct {
		name, key string
		file, env bool
		flags     bool
		want      string
		source    Source
	}{
		{name: "default only", key: "offsets.topic.num.partitions", want: "50", source: SourceDefault},
		{name: "file over default", key: "num.partitions", file: true, env: true, flags: true, want: "2", source: SourceFile},
		{name: "env over file", key: "min.insync.replicas", file: true, env: true, flags: true, want: "3", source: SourceEnv},
		{name: "flag over env over file", key: "default.replication.factor", file: true, env: true, flags: true, want: "4", source: SourceFlag},
		{name: "env over default", key: "num.replica.fetchers", env: true, want: "3", source: SourceEnv},
		{name: "flag over default", key: "queued.max.requests", flags: true, want: "4", source: SourceFlag},
		{name: "file without env", key: "min.insync.replicas", file: true, want: "2", source: SourceFile},
		{name: "env without flags", key: "default.replication.factor", file: true, env: true, want: "3", source: SourceEnv},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var f string
			var e, a []string
			if tc.file {
				f = file
			}
			if tc.env {
				e = env
			}
			if tc.flags {
				a = flags
			}
			got := entry(mustLoad(t, f, e, a...), tc.key)
			if got.Value != tc.want || got.Source != tc.source {
				t.Errorf("%s = %q from %v, want %q from %v", tc.key, got.Value, got.Source, tc.want, tc.source)
			}
		})
	}
}

// Kafka's retention precedence: log.retention.ms > .minutes > .hours, by
// name, whichever source set each.
func TestLoadRetentionPrecedence(t *testing.T) {
	tests := []struct {
		name   string
		file   string
		env    []string
		flags  []string
		want   time.Duration
		source Source
	}{
		{name: "default 168 hours", want: 168 * time.Hour, source: SourceDefault},
		{name: "hours", file: "log.retention.hours=24", want: 24 * time.Hour, source: SourceFile},
		{name: "minutes over hours", file: "log.retention.hours=24\nlog.retention.minutes=30", want: 30 * time.Minute, source: SourceFile},
		{name: "ms over minutes and hours", file: "log.retention.hours=24\nlog.retention.minutes=30\nlog.retention.ms=1500",
			want: 1500 * time.Millisecond, source: SourceFile},
		{name: "flag minutes over file hours", file: "log.retention.hours=24", flags: []string{"--log.retention.minutes=5"},
			want: 5 * time.Minute, source: SourceFlag},
		{name: "file ms over flag hours (by name, as Kafka)", file: "log.retention.ms=1000", flags: []string{"--log.retention.hours=2"},
			want: time.Second, source: SourceFile},
		{name: "env hours over file hours", file: "log.retention.hours=24", env: []string{"KBROKER_LOG_RETENTION_HOURS=48"},
			want: 48 * time.Hour, source: SourceEnv},
		{name: "ms -1 is unlimited", flags: []string{"--log.retention.ms=-1"}, want: -time.Millisecond, source: SourceFlag},
		{name: "negative hours are unlimited", file: "log.retention.hours=-5", want: -time.Millisecond, source: SourceFile},
		{name: "ms max is forever", file: "log.retention.ms=9223372036854775807", want: Forever, source: SourceFile},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var path string
			if tc.file != "" {
				path = writeFile(t, "c.properties", tc.file)
			}
			c := mustLoad(t, path, tc.env, tc.flags...)
			if c.LogRetentionMs != tc.want {
				t.Errorf("LogRetentionMs = %v, want %v", c.LogRetentionMs, tc.want)
			}
			if e := entry(c, "log.retention.ms"); e.Source != tc.source {
				t.Errorf("log.retention.ms source = %v, want %v", e.Source, tc.source)
			}
			if tc.want < 0 {
				if got := c.TopicDefaults()["retention.ms"]; got != "-1" {
					t.Errorf("retention.ms default = %q, want -1", got)
				}
			}
		})
	}
}

func TestLoadSynonyms(t *testing.T) {
	c := mustLoad(t, writeFile(t, "c.properties", "broker.id=5\nlog.dir=/single\nlog.roll.hours=2\n"), nil)
	if c.NodeID != 5 || !slices.Equal(c.LogDirs, []string{"/single"}) || c.LogRollMs != 2*time.Hour {
		t.Errorf("node %d dirs %v roll %v", c.NodeID, c.LogDirs, c.LogRollMs)
	}
	c = mustLoad(t, writeFile(t, "c.properties", "log.dir=/single\nlog.dirs=/a,/b\nlog.roll.hours=2\nlog.roll.ms=60000\n"), nil)
	if !slices.Equal(c.LogDirs, []string{"/a", "/b"}) || c.LogRollMs != time.Minute {
		t.Errorf("dirs %v roll %v", c.LogDirs, c.LogRollMs)
	}
	if _, err := load(t, "", nil, "--node.id=1", "--broker.id=2"); err == nil ||
		!strings.Contains(err.Error(), "config: node.id=1 and broker.id=2 differ") {
		t.Errorf("node.id/broker.id conflict: %v", err)
	}
	mustLoad(t, "", nil, "--node.id=2", "--broker.id=2", "--controller.quorum.voters=2@h:1")
}

func TestLoadFlushIntervalDefault(t *testing.T) {
	c := mustLoad(t, "", nil, "--log.flush.scheduler.interval.ms=3000")
	if c.LogFlushIntervalMs != 3*time.Second {
		t.Errorf("LogFlushIntervalMs = %v, want the scheduler interval", c.LogFlushIntervalMs)
	}
	c = mustLoad(t, "", nil, "--log.flush.scheduler.interval.ms=3000", "--log.flush.interval.ms=100")
	if c.LogFlushIntervalMs != 100*time.Millisecond {
		t.Errorf("LogFlushIntervalMs = %v", c.LogFlushIntervalMs)
	}
}

func TestLoadAdvertisedDefaultUsesHostname(t *testing.T) {
	c := mustLoad(t, "", nil, "--listeners=PLAINTEXT://0.0.0.0:9092,CONTROLLER://:9093,EXTERNAL://10.0.0.1:9094",
		"--listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,EXTERNAL:PLAINTEXT")
	want := []Listener{{"PLAINTEXT", "host.example", 9092}, {"EXTERNAL", "10.0.0.1", 9094}}
	if !reflect.DeepEqual(c.AdvertisedListeners, want) {
		t.Errorf("advertised = %v, want %v", c.AdvertisedListeners, want)
	}
}

// Invalid values fail Load with every problem named: key, value, range.
func TestLoadInvalid(t *testing.T) {
	tests := []struct {
		name  string
		file  string
		env   []string
		flags []string
		want  []string
	}{
		{name: "flag out of range", flags: []string{"--min.insync.replicas=0"},
			want: []string{"config: min.insync.replicas=0 is out of range: must be >= 1"}},
		{name: "not an integer", flags: []string{"--num.partitions=many"},
			want: []string{"config: num.partitions=many is invalid: must be an integer"}},
		{name: "int32 overflow", flags: []string{"--node.id=3000000000"},
			want: []string{"config: node.id=3000000000 is out of range: must be between -2147483648 and 2147483647"}},
		{name: "short overflow", flags: []string{"--default.replication.factor=40000"},
			want: []string{"config: default.replication.factor=40000 is out of range: must be between -32768 and 32767"}},
		{name: "int64 overflow", flags: []string{"--log.retention.bytes=99999999999999999999"},
			want: []string{"config: log.retention.bytes=99999999999999999999 is out of range: must fit in 64 bits"}},
		{name: "bad bool", env: []string{"KBROKER_AUTO_CREATE_TOPICS_ENABLE=yes"},
			want: []string{"config: auto.create.topics.enable=yes is invalid: must be true or false"}},
		{name: "bad double", flags: []string{"--log.cleaner.min.cleanable.ratio=half"},
			want: []string{"config: log.cleaner.min.cleanable.ratio=half is invalid: must be a number"}},
		{name: "bad listener", file: "listeners=127.0.0.1:9092",
			want: []string{`config: listeners=127.0.0.1:9092 is invalid: "127.0.0.1:9092" is not NAME://host:port`}},
		{name: "bad voters", flags: []string{"--controller.quorum.voters=1:h:1"},
			want: []string{`config: controller.quorum.voters=1:h:1 is invalid: "1:h:1" is not ID@host:port`}},
		{name: "bad bootstrap", flags: []string{"--controller.quorum.bootstrap.servers=localhost"},
			want: []string{`config: controller.quorum.bootstrap.servers=localhost is invalid: "localhost": not host:port`}},
		{name: "bad protocol map", flags: []string{"--listener.security.protocol.map=PLAINTEXT"},
			want: []string{`config: listener.security.protocol.map=PLAINTEXT is invalid: "PLAINTEXT" is not NAME:PROTOCOL`}},
		{name: "synonym out of range", file: "log.roll.hours=0",
			want: []string{"config: log.roll.hours=0 is out of range: must be >= 1"}},
		{name: "both inter-broker settings", flags: []string{"--listeners=SSL://127.0.0.1:9093", "--inter.broker.listener.name=SSL",
			"--security.inter.broker.protocol=SSL"},
			want: []string{"only one of inter.broker.listener.name and security.inter.broker.protocol may be set"}},
		{name: "override without a value", flags: []string{"--override=ssl.keystore.location"},
			want: []string{`--override "ssl.keystore.location" is not key=value`}},
		{name: "several, from several sources", file: "num.partitions=0\nlog.segment.bytes=10",
			env:   []string{"KBROKER_LOG_MESSAGE_TIMESTAMP_TYPE=Whenever"},
			flags: []string{"--node.id=abc", "--min.insync.replicas=0"},
			want: []string{
				"config: num.partitions=0 is out of range: must be >= 1",
				"config: log.segment.bytes=10 is out of range: must be between 14 and 2147483647",
				"config: log.message.timestamp.type=Whenever is invalid: must be one of CreateTime, LogAppendTime",
				"config: node.id=abc is invalid: must be an integer",
				"config: min.insync.replicas=0 is out of range: must be >= 1",
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var path string
			if tc.file != "" {
				path = writeFile(t, "c.properties", tc.file)
			}
			c, err := load(t, path, tc.env, tc.flags...)
			if err == nil {
				t.Fatalf("Load succeeded: %+v", c)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\ndoes not contain %q", err, w)
				}
			}
			if n := strings.Count(err.Error(), "\n") + 1; n != len(tc.want) {
				t.Errorf("%d errors, want %d:\n%v", n, len(tc.want), err)
			}
		})
	}
}

func TestLoadFileErrors(t *testing.T) {
	tests := []struct {
		name, file, content, want string
	}{
		{"extension", "c.ini", "x=1", `unknown config file extension ".ini"`},
		{"bad yaml", "c.yaml", "node.id: [1", "config: parse"},
		{"bad toml", "c.toml", "node.id = = 1", "config: parse"},
		{"nested and flat", "c.yaml", "log.dirs: /a\nlog:\n  dirs: /b\n", "log.dirs is set twice"},
		{"bad escape", "c.properties", `node.id=\u12`, "malformed \\uxxxx escape"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := load(t, writeFile(t, tc.file, tc.content), nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
	if _, err := load(t, filepath.Join(t.TempDir(), "missing.properties"), nil); err == nil ||
		!strings.Contains(err.Error(), "config: read config file") {
		t.Errorf("missing file: %v", err)
	}
}

func TestLoadUnknownAndIgnoredFileKeys(t *testing.T) {
	c := mustLoad(t, writeFile(t, "c.yaml", `
num.network.threads: 3
log.cleaner.threads: 2
ssl.keystore.location: /x
zookeeper.connect: zk:2181
my.custom.thing: 1
log.retention.hourz: 5
`), nil)
	if want := []string{"log.cleaner.threads", "num.network.threads", "zookeeper.connect"}; !slices.Equal(c.Ignored, want) {
		t.Errorf("Ignored = %v, want %v", c.Ignored, want)
	}
	if want := []string{"log.retention.hourz", "my.custom.thing"}; !slices.Equal(c.Unknown, want) {
		t.Errorf("Unknown = %v, want %v", c.Unknown, want)
	}
}

func TestLoadUsesProcessEnvByDefault(t *testing.T) {
	t.Setenv("KBROKER_NUM_PARTITIONS", "6")
	c, err := Load(LoadArgs{})
	if err != nil {
		t.Fatal(err)
	}
	if c.NumPartitions != 6 {
		t.Errorf("NumPartitions = %d, want 6 from the process environment", c.NumPartitions)
	}
}

// Keys stay flat: one name may be a prefix of another (a.b and a.b.c),
// which a "." key delimiter in viper would merge into one table.
func TestLoadKeepsFlatDottedKeys(t *testing.T) {
	for name, content := range map[string]string{
		"c.properties": "x.y=1\nx.y.z=2\nnode.id=2\nnode.id.extra=3\n",
		"c.yaml":       "x.y: 1\nx.y.z: 2\nnode.id: 2\nnode.id.extra: 3\n",
	} {
		c := mustLoad(t, writeFile(t, name, content), nil)
		if want := []string{"node.id.extra", "x.y", "x.y.z"}; !slices.Equal(c.Unknown, want) || c.NodeID != 2 {
			t.Errorf("%s: Unknown = %v, want %v; NodeID = %d", name, c.Unknown, want, c.NodeID)
		}
	}
}

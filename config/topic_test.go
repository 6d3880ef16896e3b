package config

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestTopicKeyTable(t *testing.T) {
	keys := TopicKeys()
	if !slices.IsSortedFunc(keys, func(a, b TopicKey) int { return strings.Compare(a.Name, b.Name) }) {
		t.Error("topic table not sorted by name")
	}
	defaults := Defaults().TopicDefaults()
	for _, k := range keys {
		if k.Doc == "" {
			t.Errorf("%s has no doc", k.Name)
		}
		if k.BrokerSynonym != "" {
			bk := keyByName(k.BrokerSynonym)
			if bk == nil || bk.SynonymOf != "" {
				t.Errorf("%s: broker synonym %s is not a main broker key", k.Name, k.BrokerSynonym)
			}
		}
		// Every default is valid for the topic key itself.
		if err := ValidateTopicConfig(k.Name, defaults[k.Name]); err != nil {
			t.Errorf("default of %s: %v", k.Name, err)
		}
	}
	for _, name := range []string{
		"cleanup.policy", "compression.type", "delete.retention.ms", "file.delete.delay.ms", "flush.messages",
		"flush.ms", "index.interval.bytes", "max.compaction.lag.ms", "max.message.bytes", "message.timestamp.type",
		"message.timestamp.before.max.ms", "message.timestamp.after.max.ms", "min.cleanable.dirty.ratio",
		"min.compaction.lag.ms", "min.insync.replicas", "preallocate", "retention.bytes", "retention.ms",
		"segment.bytes", "segment.index.bytes", "segment.jitter.ms", "segment.ms", "unclean.leader.election.enable",
		"message.downconversion.enable", "local.retention.ms", "local.retention.bytes", "remote.storage.enable",
	} {
		if topicKeyByName(name) == nil {
			t.Errorf("topic config %s missing", name)
		}
	}
}

func TestTopicDefaultsFollowBrokerConfig(t *testing.T) {
	d := Defaults().TopicDefaults()
	for name, want := range map[string]string{
		"retention.ms":                    "604800000",
		"retention.bytes":                 "-1",
		"segment.bytes":                   "1073741824",
		"segment.ms":                      "604800000",
		"segment.jitter.ms":               "0",
		"segment.index.bytes":             "10485760",
		"flush.messages":                  "9223372036854775807",
		"flush.ms":                        "9223372036854775807",
		"cleanup.policy":                  "delete",
		"max.message.bytes":               "1048588",
		"min.insync.replicas":             "1",
		"message.timestamp.type":          "CreateTime",
		"message.timestamp.before.max.ms": "9223372036854775807",
		"message.timestamp.after.max.ms":  "3600000",
		"min.cleanable.dirty.ratio":       "0.5",
		"compression.type":                "producer",
		"unclean.leader.election.enable":  "false",
		"remote.storage.enable":           "false",
		"local.retention.ms":              "-2",
	} {
		if d[name] != want {
			t.Errorf("TopicDefaults()[%s] = %q, want %q", name, d[name], want)
		}
	}
	c := mustLoad(t, "", nil, "--log.retention.hours=1", "--min.insync.replicas=2", "--log.cleanup.policy=compact,delete",
		"--log.roll.ms=5000", "--message.max.bytes=2000000")
	d = c.TopicDefaults()
	for name, want := range map[string]string{
		"retention.ms": "3600000", "min.insync.replicas": "2", "cleanup.policy": "compact,delete",
		"segment.ms": "5000", "max.message.bytes": "2000000",
	} {
		if d[name] != want {
			t.Errorf("loaded TopicDefaults()[%s] = %q, want %q", name, d[name], want)
		}
	}
}

func TestResolveTopicConfig(t *testing.T) {
	c := mutate(func(c *Config) { c.MinInsyncReplicas = 2; c.LogRetentionMs = time.Hour })
	tc, err := c.ResolveTopicConfig(nil)
	if err != nil {
		t.Fatal(err)
	}
	if tc.MinInsyncReplicas != 2 || tc.RetentionMs != 3600000 || tc.SegmentBytes != 1<<30 || tc.FlushMs != math.MaxInt64 ||
		!tc.Delete() || tc.Compact() || tc.MessageTimestampType != "CreateTime" || tc.MaxMessageBytes != 1048588 ||
		tc.SegmentIndexBytes != 10485760 || tc.IndexIntervalBytes != 4096 || tc.MinCleanableDirtyRatio != 0.5 {
		t.Errorf("broker defaults not applied: %+v", tc)
	}
	tc, err = c.ResolveTopicConfig(map[string]string{
		"retention.ms":                            "-1",
		"cleanup.policy":                          "compact",
		"min.insync.replicas":                     "3",
		"segment.bytes":                           "1048576",
		"unclean.leader.election.enable":          "true",
		"message.timestamp.type":                  "LogAppendTime",
		"compression.type":                        "zstd",
		"leader.replication.throttled.replicas":   "0:1,1:2",
		"follower.replication.throttled.replicas": "*",
	})
	if err != nil {
		t.Fatal(err)
	}
	if tc.RetentionMs != -1 || !tc.Compact() || tc.Delete() || tc.MinInsyncReplicas != 3 || tc.SegmentBytes != 1048576 ||
		!tc.UncleanLeaderElectionEnable || tc.MessageTimestampType != "LogAppendTime" || tc.CompressionType != "zstd" ||
		!slices.Equal(tc.LeaderReplicationThrottledReplicas, []string{"0:1", "1:2"}) ||
		!slices.Equal(tc.FollowerReplicationThrottledReplicas, []string{"*"}) {
		t.Errorf("overrides not applied: %+v", tc)
	}
	if tc.SegmentMs != 604800000 {
		t.Errorf("SegmentMs = %d, want the broker default", tc.SegmentMs)
	}
}

func TestResolveTopicConfigErrors(t *testing.T) {
	_, err := Defaults().ResolveTopicConfig(map[string]string{
		"retention.ms":     "-5",
		"segment.bytes":    "big",
		"no.such.config":   "1",
		"log.retention.ms": "1000", // a broker key is not a topic config
	})
	if err == nil {
		t.Fatal("ResolveTopicConfig succeeded")
	}
	for _, want := range []string{
		"config: unknown topic config log.retention.ms",
		"config: unknown topic config no.such.config",
		"config: retention.ms=-5 is out of range: must be >= -1",
		"config: segment.bytes=big is invalid: must be an integer",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q\ndoes not contain %q", err, want)
		}
	}
	if !errors.Is(err, ErrUnknownTopicConfig) {
		t.Error("errors.Is(err, ErrUnknownTopicConfig) = false")
	}
}

func TestValidateTopicConfig(t *testing.T) {
	tests := []struct{ name, value, want string }{
		{"retention.ms", "1000", ""},
		{"retention.ms", "-1", ""},
		{"retention.ms", "-2", "config: retention.ms=-2 is out of range: must be >= -1"},
		{"retention.bytes", "-1", ""},
		{"segment.bytes", "13", "config: segment.bytes=13 is out of range: must be between 14 and 2147483647"},
		{"segment.bytes", "2147483648", "config: segment.bytes=2147483648 is out of range: must be between -2147483648 and 2147483647"},
		{"segment.ms", "0", "config: segment.ms=0 is out of range: must be >= 1"},
		{"segment.index.bytes", "3", "config: segment.index.bytes=3 is out of range: must be >= 4"},
		{"min.insync.replicas", "0", "config: min.insync.replicas=0 is out of range: must be >= 1"},
		{"cleanup.policy", "compact,delete", ""},
		{"cleanup.policy", "archive", `config: cleanup.policy=archive is invalid: "archive" is not one of delete, compact`},
		{"compression.type", "brotli", "config: compression.type=brotli is invalid: must be one of uncompressed, zstd, lz4, snappy, gzip, producer"},
		{"compression.zstd.level", "23", "config: compression.zstd.level=23 is out of range: must be between -131072 and 22"},
		{"message.timestamp.type", "LogAppendTime", ""},
		{"message.timestamp.type", "logappendtime", "config: message.timestamp.type=logappendtime is invalid: must be one of CreateTime, LogAppendTime"},
		{"min.cleanable.dirty.ratio", "1.01", "config: min.cleanable.dirty.ratio=1.01 is out of range: must be between 0 and 1"},
		{"max.compaction.lag.ms", "0", "config: max.compaction.lag.ms=0 is out of range: must be >= 1"},
		{"flush.messages", "0", "config: flush.messages=0 is out of range: must be >= 1"},
		{"unclean.leader.election.enable", "TRUE", ""},
		{"unclean.leader.election.enable", "1", "config: unclean.leader.election.enable=1 is invalid: must be true or false"},
		{"remote.storage.enable", "false", ""},
		{"remote.storage.enable", "true", "config: remote.storage.enable=true is not supported: must be false (kbroker has no tiered storage)"},
		{"local.retention.ms", "-3", "config: local.retention.ms=-3 is out of range: must be >= -2"},
		{"leader.replication.throttled.replicas", "0:x", "must be * or a list of partition:broker"},
		{"max.message.bytes", "-1", "config: max.message.bytes=-1 is out of range: must be >= 0"},
		{"message.format.version", "3.0", "config: unknown topic config message.format.version"},
	}
	for _, tc := range tests {
		err := ValidateTopicConfig(tc.name, tc.value)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("ValidateTopicConfig(%s, %s) = %v", tc.name, tc.value, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("ValidateTopicConfig(%s, %s) = %v, want %q", tc.name, tc.value, err, tc.want)
		}
	}
}

func TestValidateBrokerConfig(t *testing.T) {
	for _, tc := range []struct {
		name, value string
		ok          bool
	}{
		{"min.insync.replicas", "2", true},
		{"min.insync.replicas", "0", false},
		{"log.retention.ms", "60000", true},
		{"unclean.leader.election.enable", "maybe", false},
		{"node.id", "7", false},     // not dynamic
		{"no.such.key", "1", false}, // unknown
	} {
		err := ValidateBrokerConfig(tc.name, tc.value, true)
		if (err == nil) != tc.ok {
			t.Errorf("%s=%s: %v", tc.name, tc.value, err)
		}
	}
}

package compat

import (
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Kafka's dynamic broker configs change per broker and cluster-wide through
// IncrementalAlterConfigs, and DescribeConfigs reports them: log cleaner
// settings (sarama TestFuncAdminIncrementalAlterConfigs sets
// log.cleaner.backoff.ms on broker 1), thread counts, replication throttles,
// log defaults, and listener SSL keys (per broker only, with the listener
// prefix, as Kafka; DescribeConfigs answers secrets as null). Issue 21.
func TestDynamicBrokerConfigs(t *testing.T) {
	tg := singleNode(t)
	adm := newAdmin(t, tg.seeds)
	ctx := ctxTimeout(t, 30*time.Second)
	set := func(k, v string) kadm.AlterConfig {
		return kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: kmsg.StringPtr(v)}
	}
	alter := func(configs []kadm.AlterConfig, brokers ...int32) error {
		t.Helper()
		res, err := adm.AlterBrokerConfigs(ctx, configs, brokers...)
		if err != nil {
			return err
		}
		for _, r := range res {
			if r.Err != nil {
				return errors.Join(r.Err, errors.New(r.ErrMessage))
			}
		}
		return nil
	}
	describe := func(broker int32, key string) kadm.Config {
		t.Helper()
		rcs, err := adm.DescribeBrokerConfigs(ctx, broker)
		must(t, err, "DescribeConfigs")
		for _, c := range rcs[0].Configs {
			if c.Key == key {
				return c
			}
		}
		t.Fatalf("DescribeConfigs of broker %d lacks %s", broker, key)
		return kadm.Config{}
	}

	if c := describe(1, "log.cleaner.backoff.ms"); c.MaybeValue() != "15000" {
		t.Fatalf("log.cleaner.backoff.ms = %q before any change, want Kafka's default 15000", c.MaybeValue())
	}
	must(t, alter([]kadm.AlterConfig{set("log.cleaner.backoff.ms", "15001"), set("leader.replication.throttled.rate", "1048576")}, 1),
		"per-broker log cleaner and throttle configs")
	must(t, alter([]kadm.AlterConfig{set("num.io.threads", "16"), set("log.cleaner.threads", "2"),
		set("log.retention.ms", "3600000"), set("follower.replication.throttled.rate", "2097152")}), "cluster-wide configs")
	must(t, alter([]kadm.AlterConfig{set("listener.name.plaintext.ssl.keystore.password", "s3cret"),
		set("listener.name.plaintext.ssl.keystore.location", "/etc/kbroker/next.pem")}, 1), "per-broker listener SSL configs")

	for key, want := range map[string]struct {
		value  string
		source kmsg.ConfigSource
	}{
		"log.cleaner.backoff.ms":                        {"15001", kmsg.ConfigSourceDynamicBrokerConfig},
		"leader.replication.throttled.rate":             {"1048576", kmsg.ConfigSourceDynamicBrokerConfig},
		"num.io.threads":                                {"16", kmsg.ConfigSourceDynamicDefaultBrokerConfig},
		"log.retention.ms":                              {"3600000", kmsg.ConfigSourceDynamicDefaultBrokerConfig},
		"listener.name.plaintext.ssl.keystore.location": {"/etc/kbroker/next.pem", kmsg.ConfigSourceDynamicBrokerConfig},
	} {
		if c := describe(1, key); c.MaybeValue() != want.value || c.Source != want.source {
			t.Errorf("%s = %q (source %v), want %q (%v)", key, c.MaybeValue(), c.Source, want.value, want.source)
		}
	}
	if c := describe(1, "listener.name.plaintext.ssl.keystore.password"); !c.Sensitive || c.Value != nil {
		t.Errorf("a dynamic keystore password is described as %q (sensitive %v), want null", c.MaybeValue(), c.Sensitive)
	}

	// Refused as Kafka refuses them, with INVALID_REQUEST.
	for _, bad := range []struct {
		config  kadm.AlterConfig
		brokers []int32
		why     string
	}{
		{set("listener.name.plaintext.ssl.keystore.location", "/x.pem"), nil, "a listener's SSL cluster-wide"},
		{set("ssl.keystore.location", "/x.pem"), []int32{1}, "SSL without the listener prefix"},
		{set("num.io.threads", "0"), nil, "out of range"},
		{set("node.id", "7"), []int32{1}, "not dynamic"},
		{set("no.such.config", "1"), []int32{1}, "unknown"},
	} {
		if err := alter([]kadm.AlterConfig{bad.config}, bad.brokers...); !errors.Is(err, kerr.InvalidRequest) {
			t.Errorf("%s (%s): %v, want INVALID_REQUEST", bad.config.Name, bad.why, err)
		}
	}
}

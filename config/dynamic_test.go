package config

import (
	"errors"
	"testing"
)

// Kafka's dynamic broker config rules (DynamicBrokerConfig.validateConfigs):
// the whole dynamic set is accepted per broker and cluster-wide, listeners
// and listener-prefixed keys per broker only, the reloadable SSL keys only
// with a listener prefix; values are checked by type and range.
func TestValidateDynamicBrokerConfigs(t *testing.T) {
	for _, tc := range []struct {
		name, value string
		perBroker   bool
		ok          bool
		is          error
	}{
		{"log.cleaner.backoff.ms", "15001", true, true, nil},
		{"log.cleaner.backoff.ms", "15001", false, true, nil},
		{"log.cleaner.backoff.ms", "-1", true, false, nil},
		{"log.cleaner.backoff.ms", "soon", false, false, nil},
		{"log.cleaner.threads", "2", false, true, nil},
		{"log.cleaner.io.max.bytes.per.second", "1e6", false, true, nil},
		{"num.io.threads", "16", false, true, nil},
		{"num.io.threads", "0", false, false, nil},
		{"num.network.threads", "4", true, true, nil},
		{"background.threads", "4", false, true, nil},
		{"max.connections.per.ip", "100", false, true, nil},
		{"metric.reporters", "a.B,c.D", false, true, nil},
		{"leader.replication.throttled.rate", "1048576", true, true, nil},
		{"follower.replication.throttled.rate", "1048576", false, true, nil},
		{"follower.replication.throttled.rate", "-5", false, false, nil},
		{"log.retention.ms", "60000", false, true, nil},
		{"message.max.bytes", "2000000", true, true, nil},
		{"listener.name.ssl.ssl.keystore.location", "/x.pem", true, true, nil},
		{"listener.name.ssl.ssl.keystore.location", "/x.pem", false, false, ErrPerBrokerOnly},
		{"listener.name.sasl_ssl.plain.sasl.jaas.config", "x required;", true, true, nil},
		{"listener.name.external.max.connections", "10", false, true, nil},
		{"listener.name.external.max.connections", "-1", true, false, nil},
		{"ssl.keystore.location", "/x.pem", true, false, nil},
		{"advertised.listeners", "PLAINTEXT://h:9092", true, true, nil},
		{"advertised.listeners", "PLAINTEXT://h:9092", false, false, ErrPerBrokerOnly},
		{"node.id", "7", true, false, ErrNotDynamic},
		{"sasl.enabled.mechanisms", "PLAIN", true, false, ErrNotDynamic},
		{"fetch.max.bytes", "1", true, false, ErrNotDynamic},
		{"no.such.key", "1", true, false, nil},
	} {
		err := ValidateBrokerConfig(tc.name, tc.value, tc.perBroker)
		if (err == nil) != tc.ok || (tc.is != nil && !errors.Is(err, tc.is)) {
			t.Errorf("%s=%s (per broker %v): %v", tc.name, tc.value, tc.perBroker, err)
		}
	}
}

// Every dynamic-only key has a valid default, is not also a typed key, and
// DescribeConfigs lists it (Entries) exactly once.
func TestDynamicKeysListed(t *testing.T) {
	c, err := Load(LoadArgs{Env: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, e := range c.Entries() {
		count[e.Name]++
	}
	for _, k := range dynamicKeys {
		if keyByName(k.Name) != nil {
			t.Errorf("%s is in both tables", k.Name)
		}
		if !k.NoDefault {
			if _, err := k.parse(k.Default); err != nil {
				t.Errorf("%s: default: %v", k.Name, err)
			}
		}
		if count[k.Name] != 1 {
			t.Errorf("%s listed %d times by Entries", k.Name, count[k.Name])
		}
	}
}

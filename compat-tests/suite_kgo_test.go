package compat

import (
	"strings"
	"testing"
	"time"
)

// kgoSuite is franz-go's pkg/kgo integration suite at the version
// issue 21 measured, transactions (TestTxnEtl) included.
func kgoSuite(name string) clientSuite {
	return clientSuite{
		name: name, module: "github.com/twmb/franz-go", version: "v1.22.3", pkgs: []string{"pkg/kgo"},
		timeout: 30 * time.Minute,
	}
}

// franz-go's own integration suite, pkg/kgo, on plaintext against three
// brokers at replication factor 3 (make compat-kgo), as its CI runs it
// against Kafka (KGO_SEEDS, KGO_TEST_RF). The brokers are configured as
// the suite's CI configures kfake and Kafka: no initial rebalance delay,
// a transaction timeout the suite's producers may ask for.
func TestKgoSuite(t *testing.T) {
	wantSuite(t, "kgo")
	c := startCluster(t, clusterOpts{brokers: 3, flags: []string{
		"--default.replication.factor=3",
		"--offsets.topic.replication.factor=3",
		"--group.initial.rebalance.delay.ms=0",
		"--transaction.max.timeout.ms=600000",
	}})
	s := kgoSuite("franz-go pkg/kgo (3 brokers, RF=3)")
	s.env = []string{"KGO_SEEDS=" + strings.Join(c.seeds(), ","), "KGO_TEST_RF=3"}
	runSuite(t, s)
}

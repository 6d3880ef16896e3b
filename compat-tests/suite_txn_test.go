package compat

import (
	"os"
	"strings"
	"testing"
)

// franz-go's own integration suite, pkg/kgo, against three plaintext
// brokers at replication factor 3, transactions included (issue 14's
// acceptance: TestTxnEtl, its read-process-write chains over transactional
// group sessions, and the rest of the suite), with KGO_TEST_UNSAFE=1 so
// that TestTxnEtl also ends and begins transactions without waiting for
// the previous one's markers (make compat-kgo runs the same suite without
// it). make compat-kgo-txn runs it; it prints pass/fail/skip counts and
// fails when a test fails. Minutes long: not part of make test
// (KBROKER_SUITE=kgo-txn turns it on). KGO_TEST_RECORDS (the suite's own
// knob) shortens TestTxnEtl.
func TestKgoSuiteTxn(t *testing.T) {
	wantSuite(t, "kgo-txn")
	c := startCluster(t, clusterOpts{brokers: 3, flags: replicationFlags(
		"--group.initial.rebalance.delay.ms=0",
		"--transaction.max.timeout.ms=600000",
		"--default.replication.factor=3",
	)})
	s := kgoSuite("franz-go pkg/kgo with transactions (3 brokers, RF=3, KGO_TEST_UNSAFE=1)")
	s.env = []string{"KGO_SEEDS=" + strings.Join(c.seeds(), ","), "KGO_TEST_RF=3", "KGO_TEST_UNSAFE=1"}
	if n := os.Getenv("KGO_TEST_RECORDS"); n != "" {
		s.env = append(s.env, "KGO_TEST_RECORDS="+n)
	}
	runSuite(t, s)
}

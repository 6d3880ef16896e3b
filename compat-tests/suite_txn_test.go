package compat

import (
	"os"
	"strings"
	"testing"
)

// franz-go's own integration suite, pkg/kgo, against three plaintext
// brokers at replication factor 3, transactions included (issue 14's
// acceptance: TestTxnEtl, its read-process-write chains over transactional
// group sessions, and the rest of the suite, with KGO_TEST_UNSAFE=1 so
// that TestTxnEtl also ends and begins transactions without waiting for
// the previous one's markers). make compat-kgo-txn runs it; it prints
// pass/fail/skip counts and fails when a test fails. Minutes long: not part
// of make test (KBROKER_KGO_TXN=1 turns it on). KGO_TEST_RECORDS (the
// suite's own knob) shortens TestTxnEtl.
func TestKgoSuiteTxn(t *testing.T) {
	if os.Getenv("KBROKER_KGO_TXN") == "" {
		t.Skip("set KBROKER_KGO_TXN=1 (make compat-kgo-txn) to run franz-go's pkg/kgo suite with transactions")
	}
	suite := newKgoSuite(t)
	c := startCluster(t, clusterOpts{brokers: 3, flags: replicationFlags(
		"--group.initial.rebalance.delay.ms=0",
		"--transaction.max.timeout.ms=600000",
		"--default.replication.factor=3",
	)})
	env := []string{
		"KGO_SEEDS=" + strings.Join(c.seeds(), ","),
		"KGO_TEST_RF=3",
		"KGO_TEST_UNSAFE=1",
	}
	if n := os.Getenv("KGO_TEST_RECORDS"); n != "" {
		env = append(env, "KGO_TEST_RECORDS="+n)
	}
	suite.run(t, "with transactions (3 plaintext brokers, RF=3, KGO_TEST_UNSAFE=1)", "kgo-txn", env, "")
}

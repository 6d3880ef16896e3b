package compat

import (
	"strings"
	"testing"
)

// kgoShareTests are franz-go's pkg/kgo share group tests, issue 16's
// acceptance: one share consumer, the chained ETL of share groups with
// releases, rejects, short-lived members and rebalances, acknowledgements
// sent on close, the share group offsets admin APIs, and a regex share
// subscription that skips internal topics.
const kgoShareTests = "^(TestShareGroup|TestShareGroupETL|TestShareGroupAckOnClose|TestShareGroupOffsetsAdmin|TestConsumeRegexShareSkipsInternal)$"

// franz-go's share tests (from the module cache) against 3 brokers with
// every topic at RF=3 (make compat-kgo-share). They need share groups to be
// advertised (ShareFetch and ShareAcknowledge v2): a skip is a failure
// here. KBROKER_SUITE_RUN picks other tests. Minutes: not part of make
// test (KBROKER_SUITE=kgo-share turns it on).
func TestKgoShareSuite(t *testing.T) {
	wantSuite(t, "kgo-share")
	c := startCluster(t, clusterOpts{brokers: 3, flags: replicationFlags(
		"--default.replication.factor=3",
		"--min.insync.replicas=2",
		"--group.initial.rebalance.delay.ms=0",
	)})
	s := kgoSuite("franz-go pkg/kgo share group tests (3 brokers, RF=3)")
	s.env = []string{"KGO_SEEDS=" + strings.Join(c.seeds(), ","), "KGO_TEST_RF=3"}
	s.run = kgoShareTests
	counts := runSuite(t, s)
	if counts.topSkip > 0 || counts.topPass == 0 {
		t.Errorf("share tests skipped (%d) or none passed: share groups not advertised?", counts.topSkip)
	}
}

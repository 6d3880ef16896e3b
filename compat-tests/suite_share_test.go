package compat

import (
	"os"
	"strings"
	"testing"
	"time"
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
// here. KBROKER_KGO_RUN picks other tests. Minutes: not part of make test
// (KBROKER_KGO_SHARE=1 turns it on).
func TestKgoShareSuite(t *testing.T) {
	if os.Getenv("KBROKER_KGO_SHARE") == "" {
		t.Skip("set KBROKER_KGO_SHARE=1 (make compat-kgo-share) to run franz-go's share group tests against 3 brokers")
	}
	version, src := franzSource(t)
	c := startCluster(t, clusterOpts{brokers: 3, flags: replicationFlags(
		"--default.replication.factor=3",
		"--min.insync.replicas=2",
		"--group.initial.rebalance.delay.ms=0",
	)})
	mod := copyFranz(t, src)
	run := os.Getenv("KBROKER_KGO_RUN")
	if run == "" {
		run = kgoShareTests
	}
	timeout := os.Getenv("KBROKER_KGO_TIMEOUT")
	if timeout == "" {
		timeout = "15m"
	}
	start := time.Now()
	counts, logPath, waitErr := runKgoTests(t, mod, append(os.Environ(), "KGO_SEEDS="+strings.Join(c.seeds(), ","), "KGO_TEST_RF=3"),
		"kgo-share", "test", "-json", "-count=1", "-timeout", timeout, "-run", run, "./pkg/kgo/")
	t.Logf("franz-go %s share tests against 3 brokers at RF=3 in %s: %d passed, %d failed, %d skipped (top-level: %d passed, %d failed, %d skipped); go test output in %s",
		version, time.Since(start).Round(time.Second), counts.pass, len(counts.failed), counts.skip, counts.topPass, counts.topFail, counts.topSkip, logPath)
	for _, name := range counts.failed {
		t.Logf("failed: %s", name)
	}
	if len(counts.failed) > 0 || waitErr != nil || counts.topSkip > 0 || counts.topPass == 0 {
		t.Errorf("the share tests failed or were skipped (%v)", waitErr)
	}
}

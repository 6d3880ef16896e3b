package compat

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
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
	version := os.Getenv("KBROKER_FRANZ_VERSION")
	if version == "" {
		version = "v1.22.3"
	}
	src := filepath.Join(goEnv(t, "GOMODCACHE"), "github.com/twmb/franz-go@"+version)
	if _, err := os.Stat(filepath.Join(src, "pkg", "kgo")); err != nil {
		t.Skipf("franz-go %s is not in the module cache (go mod download github.com/twmb/franz-go@%s): %v", version, version, err)
	}
	c := startCluster(t, clusterOpts{brokers: 3, flags: replicationFlags(
		"--default.replication.factor=3",
		"--min.insync.replicas=2",
		"--group.initial.rebalance.delay.ms=0",
	)})
	work := t.TempDir()
	mod := filepath.Join(work, "franz-go")
	if out, err := exec.Command("cp", "-r", src, mod).CombinedOutput(); err != nil {
		t.Fatalf("copying %s: %v\n%s", src, err, out)
	}
	exec.Command("chmod", "-R", "u+w", mod).Run()
	run := os.Getenv("KBROKER_KGO_RUN")
	if run == "" {
		run = kgoShareTests
	}
	timeout := os.Getenv("KBROKER_KGO_TIMEOUT")
	if timeout == "" {
		timeout = "15m"
	}
	cmd := exec.Command("go", "test", "-json", "-count=1", "-timeout", timeout, "-run", run, "./pkg/kgo/")
	cmd.Dir = mod
	cmd.Env = append(os.Environ(), "KGO_SEEDS="+strings.Join(c.seeds(), ","), "KGO_TEST_RF=3")
	logPath := filepath.Join(os.TempDir(), fmt.Sprintf("kgo-share-%d.json", time.Now().Unix()))
	log, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = log
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	counts := countGoTestJSON(io.TeeReader(stdout, log))
	waitErr := cmd.Wait()
	t.Logf("franz-go %s share tests against 3 brokers at RF=3 in %s: %d passed, %d failed, %d skipped (top-level: %d passed, %d failed, %d skipped); go test output in %s",
		version, time.Since(start).Round(time.Second), counts.pass, len(counts.failed), counts.skip, counts.topPass, counts.topFail, counts.topSkip, logPath)
	for _, name := range counts.failed {
		t.Logf("failed: %s", name)
	}
	if len(counts.failed) > 0 || waitErr != nil || counts.topSkip > 0 || counts.topPass == 0 {
		t.Errorf("the share tests failed or were skipped (%v)", waitErr)
	}
}

package compat

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// franz-go's own integration suite, pkg/kgo, against a secured 3-broker
// cluster (make compat-kgo-secure): the suite's clients use TLS with a
// client certificate (KGO_TEST_TLS, the SSL listener with
// ssl.client.auth=required, principal User:admin), its SCRAM and OAuth
// tests the SASL_PLAINTEXT listener (KGO_TEST_SCRAM_SEEDS,
// KGO_TEST_OAUTH_SEEDS: they dial without TLS), and the brokers replicate
// over SCRAM-SHA-512 on TLS. It prints pass/fail/skip counts and the
// failures; it fails when a test fails. Minutes long: not part of make
// test (KBROKER_KGO_SECURE=1 turns it on).
func TestKgoSuiteSecure(t *testing.T) {
	if os.Getenv("KBROKER_KGO_SECURE") == "" {
		t.Skip("set KBROKER_KGO_SECURE=1 (make compat-kgo-secure) to run franz-go's pkg/kgo suite over TLS and SASL")
	}
	suite := newKgoSuite(t)
	sc := startSecureCluster(t, secureOpts{brokers: 3, properties: []string{
		"group.initial.rebalance.delay.ms=0",
		"transaction.max.timeout.ms=600000",
	}})
	var ssl, saslPlain []string
	for _, n := range sc.nodes {
		ssl, saslPlain = append(ssl, n.sslAddr), append(saslPlain, n.saslPlainAddr)
	}
	env := []string{
		"KGO_SEEDS=" + strings.Join(ssl, ","),
		fmt.Sprintf("KGO_TEST_TLS=ca:%s,cert:%s,key:%s", filepath.Join(sc.certs, "ca.pem"),
			filepath.Join(sc.certs, "admin.cert.pem"), filepath.Join(sc.certs, "admin.key.pem")),
		"KGO_TEST_SCRAM=admin:" + adminPassword + ":512",
		"KGO_TEST_SCRAM_SEEDS=" + strings.Join(saslPlain, ","),
		"KGO_TEST_OAUTH_SEEDS=" + strings.Join(saslPlain, ","),
		"KGO_TEST_RF=3",
	}
	// Skipped: TestIssue769 sets its own Dialer, which kgo refuses beside
	// the DialTLSConfig KGO_TEST_TLS adds; the test ignores NewClient's
	// error and its nil client panics, ending the whole package: not
	// runnable over TLS.
	suite.run(t, "over TLS + SASL (3 brokers, inter-broker SCRAM-SHA-512/TLS)", "kgo-secure", env, "^(TestIssue769)$")
}

// kgoSuite is franz-go's pkg/kgo test package, copied out of the module
// cache (its files are read-only there) to run against kbroker.
type kgoSuite struct {
	version, dir string
}

// newKgoSuite copies franz-go's sources (KBROKER_FRANZ_VERSION, default
// the version in go.mod); it skips the test when they are not cached.
func newKgoSuite(t *testing.T) kgoSuite {
	t.Helper()
	version := os.Getenv("KBROKER_FRANZ_VERSION")
	if version == "" {
		version = "v1.22.3"
	}
	src := filepath.Join(goEnv(t, "GOMODCACHE"), "github.com/twmb/franz-go@"+version)
	if _, err := os.Stat(filepath.Join(src, "pkg", "kgo")); err != nil {
		t.Skipf("franz-go %s is not in the module cache (go mod download github.com/twmb/franz-go@%s): %v", version, version, err)
	}
	mod := filepath.Join(t.TempDir(), "franz-go")
	if out, err := exec.Command("cp", "-r", src, mod).CombinedOutput(); err != nil {
		t.Fatalf("copying %s: %v\n%s", src, err, out)
	}
	exec.Command("chmod", "-R", "u+w", mod).Run()
	return kgoSuite{version: version, dir: mod}
}

// run runs the suite with env (KGO_SEEDS and the test's settings), skipping
// the tests skip matches (KBROKER_KGO_RUN picks tests, KBROKER_KGO_TIMEOUT
// bounds the run, default 30m), prints pass/fail/skip counts and the
// failures, and fails when a test failed.
func (s kgoSuite) run(t *testing.T, what, logName string, env []string, skip string) {
	t.Helper()
	timeout := os.Getenv("KBROKER_KGO_TIMEOUT")
	if timeout == "" {
		timeout = "30m"
	}
	args := []string{"test", "-json", "-count=1", "-timeout", timeout}
	if skip != "" {
		args = append(args, "-skip", skip)
	}
	args = append(args, "./pkg/kgo/")
	if run := os.Getenv("KBROKER_KGO_RUN"); run != "" {
		args = append(args, "-run", run)
	}
	cmd := exec.Command("go", args...)
	cmd.Dir, cmd.Env = s.dir, append(os.Environ(), env...)
	logPath := filepath.Join(os.TempDir(), fmt.Sprintf("%s-%d.json", logName, time.Now().Unix()))
	log, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	counts := countGoTestJSON(io.TeeReader(stdout, log))
	waitErr := cmd.Wait()
	t.Logf("franz-go %s pkg/kgo %s: %d passed, %d failed, %d skipped (top-level tests: %d passed, %d failed, %d skipped); go test output in %s",
		s.version, what, counts.pass, len(counts.failed), counts.skip, counts.topPass, counts.topFail, counts.topSkip, logPath)
	for _, name := range counts.failed {
		t.Logf("failed: %s", name)
	}
	if len(counts.failed) > 0 || waitErr != nil {
		t.Errorf("the suite failed (%v)", waitErr)
	}
}

type testCounts struct {
	pass, skip                int
	topPass, topFail, topSkip int
	failed                    []string
}

// countGoTestJSON counts the results of `go test -json` output.
func countGoTestJSON(r io.Reader) testCounts {
	var c testCounts
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var ev struct{ Action, Test string }
		if json.Unmarshal(sc.Bytes(), &ev) != nil || ev.Test == "" {
			continue
		}
		top := !strings.Contains(ev.Test, "/")
		switch ev.Action {
		case "pass":
			c.pass++
			if top {
				c.topPass++
			}
		case "skip":
			c.skip++
			if top {
				c.topSkip++
			}
		case "fail":
			c.failed = append(c.failed, ev.Test)
			if top {
				c.topFail++
			}
		}
	}
	sort.Strings(c.failed)
	return c
}

func goEnv(t *testing.T, key string) string {
	t.Helper()
	out, err := exec.CommandContext(context.Background(), "go", "env", key).Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

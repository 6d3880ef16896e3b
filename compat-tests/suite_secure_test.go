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
	version, src := franzSource(t)
	sc := startSecureCluster(t, secureOpts{brokers: 3, properties: []string{
		"group.initial.rebalance.delay.ms=0",
		"transaction.max.timeout.ms=600000",
	}})
	mod := copyFranz(t, src)
	var ssl, saslPlain []string
	for _, n := range sc.nodes {
		ssl, saslPlain = append(ssl, n.sslAddr), append(saslPlain, n.saslPlainAddr)
	}
	env := append(os.Environ(),
		"KGO_SEEDS="+strings.Join(ssl, ","),
		fmt.Sprintf("KGO_TEST_TLS=ca:%s,cert:%s,key:%s", filepath.Join(sc.certs, "ca.pem"),
			filepath.Join(sc.certs, "admin.cert.pem"), filepath.Join(sc.certs, "admin.key.pem")),
		"KGO_TEST_SCRAM=admin:"+adminPassword+":512",
		"KGO_TEST_SCRAM_SEEDS="+strings.Join(saslPlain, ","),
		"KGO_TEST_OAUTH_SEEDS="+strings.Join(saslPlain, ","),
		"KGO_TEST_RF=3",
	)
	timeout := os.Getenv("KBROKER_KGO_TIMEOUT")
	if timeout == "" {
		timeout = "30m"
	}
	// Skipped: TestIssue769 sets its own Dialer, which kgo refuses beside
	// the DialTLSConfig KGO_TEST_TLS adds; the test ignores NewClient's
	// error and its nil client panics, ending the whole package: not
	// runnable over TLS. TestTxnEtl needs transactions (issue 14, not
	// served yet): its transactional producer retries until the go test
	// timeout (the plaintext suite of compat-suites skips it too).
	args := []string{"test", "-json", "-count=1", "-timeout", timeout, "-skip", "^(TestIssue769|TestTxnEtl)$", "./pkg/kgo/"}
	if run := os.Getenv("KBROKER_KGO_RUN"); run != "" {
		args = append(args, "-run", run)
	}
	counts, logPath, waitErr := runKgoTests(t, mod, env, "kgo-secure", args...)
	t.Logf("franz-go %s pkg/kgo over TLS + SASL (3 brokers, inter-broker SCRAM-SHA-512/TLS): %d passed, %d failed, %d skipped (top-level tests: %d passed, %d failed, %d skipped); go test output in %s",
		version, counts.pass, len(counts.failed), counts.skip, counts.topPass, counts.topFail, counts.topSkip, logPath)
	for _, name := range counts.failed {
		t.Logf("failed: %s", name)
	}
	if len(counts.failed) > 0 || waitErr != nil {
		t.Errorf("the suite failed (%v)", waitErr)
	}
}

// franzSource is the franz-go module the kgo suites run
// (KBROKER_FRANZ_VERSION, v1.22.3 by default) in the module cache; the
// test is skipped when it is not there.
func franzSource(t *testing.T) (version, src string) {
	version = os.Getenv("KBROKER_FRANZ_VERSION")
	if version == "" {
		version = "v1.22.3"
	}
	src = filepath.Join(goEnv(t, "GOMODCACHE"), "github.com/twmb/franz-go@"+version)
	if _, err := os.Stat(filepath.Join(src, "pkg", "kgo")); err != nil {
		t.Skipf("franz-go %s is not in the module cache (go mod download github.com/twmb/franz-go@%s): %v", version, version, err)
	}
	return version, src
}

// copyFranz copies the read-only module src into a writable temp dir
// (go test writes there) and returns the copy.
func copyFranz(t *testing.T, src string) string {
	mod := filepath.Join(t.TempDir(), "franz-go")
	if out, err := exec.Command("cp", "-r", src, mod).CombinedOutput(); err != nil {
		t.Fatalf("copying %s: %v\n%s", src, err, out)
	}
	exec.Command("chmod", "-R", "u+w", mod).Run()
	return mod
}

// runKgoTests runs go test -json with args in the module copy mod, with
// env, and counts the results; the whole output goes to a file in the temp
// dir named after name, returned with the go command's exit error.
func runKgoTests(t *testing.T, mod string, env []string, name string, args ...string) (testCounts, string, error) {
	cmd := exec.Command("go", args...)
	cmd.Dir, cmd.Env = mod, env
	logPath := filepath.Join(os.TempDir(), fmt.Sprintf("%s-%d.json", name, time.Now().Unix()))
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
	return counts, logPath, cmd.Wait()
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

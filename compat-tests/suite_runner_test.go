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

// The suites of other Kafka clients (make compat-kgo, compat-kgo-secure,
// compat-sarama, compat-kafkago, compat-confluent) run from the Go module
// cache: the module at a pinned version is fetched through the module proxy
// (go mod download), copied to a temporary directory (the cache is
// read-only and the build writes go.sum entries), its test binary built with
// `go test -c`, and run through test2json so that pass, fail and skip can be
// counted. Nothing of theirs is copied into this repository.

// clientSuite is one client's integration test package.
type clientSuite struct {
	name    string // for messages: "franz-go pkg/kgo"
	module  string // github.com/twmb/franz-go
	version string // v1.22.3; overridden by $KBROKER_SUITE_VERSION
	// pkgs are the packages' directories inside the module ("pkg/kgo",
	// "."): each is built and run in turn, their counts added up.
	pkgs []string
	tags string // build tags: "functional"
	cgo  bool   // builds with cgo (confluent-kafka-go's bundled librdkafka)
	// env is added to the test binary's environment.
	env []string
	// skip names tests not run (a regexp for -test.skip) with the reason
	// in skipWhy; run (or $KBROKER_SUITE_RUN) picks tests.
	skip, skipWhy, run string
	// args are more flags for the test binary (-docker.exists=true).
	args []string
	// timeout bounds the whole run ($KBROKER_SUITE_TIMEOUT overrides).
	timeout time.Duration
	// prepare, when set, is called with the package's directory in the
	// copy before the build (to write a testconf.json).
	prepare func(t *testing.T, pkgDir string)
}

// wantSuite skips the test unless $KBROKER_SUITE names this suite (the make
// targets set it): the suites take minutes and need fixed ports.
func wantSuite(t *testing.T, id string) {
	t.Helper()
	if os.Getenv("KBROKER_SUITE") != id {
		t.Skipf("set KBROKER_SUITE=%s (make compat-%s) to run this client's own test suite", id, id)
	}
}

// fetchSuite makes sure the suite's module is in the module cache (through
// the module proxy) and returns its directory there.
func fetchSuite(t *testing.T, s *clientSuite) string {
	t.Helper()
	if v := os.Getenv("KBROKER_SUITE_VERSION"); v != "" {
		s.version = v
	}
	out, err := exec.Command("go", "mod", "download", "-json", s.module+"@"+s.version).Output()
	var info struct{ Dir, Error string }
	if jerr := json.Unmarshal(out, &info); err != nil || jerr != nil || info.Dir == "" {
		t.Fatalf("go mod download %s@%s: %v %s %s", s.module, s.version, err, info.Error, out)
	}
	return info.Dir
}

// copySuite copies the module out of the cache into a directory of the
// test's own and returns the copy.
func copySuite(t *testing.T, src string) string {
	t.Helper()
	mod := filepath.Join(t.TempDir(), "module")
	if out, err := exec.Command("cp", "-r", src, mod).CombinedOutput(); err != nil {
		t.Fatalf("copying %s: %v\n%s", src, err, out)
	}
	if out, err := exec.Command("chmod", "-R", "u+w", mod).CombinedOutput(); err != nil {
		t.Fatalf("chmod %s: %v\n%s", mod, err, out)
	}
	return mod
}

// buildSuite builds the test binary of the package in pkgDir.
func buildSuite(t *testing.T, s *clientSuite, pkgDir string) (bin string) {
	t.Helper()
	if s.prepare != nil {
		s.prepare(t, pkgDir)
	}
	bin = filepath.Join(t.TempDir(), "suite.test")
	// -mod=mod: some modules' go.mod files are not tidy for this Go
	// version (kafka-go's); the copy's go.mod may be completed.
	args := []string{"test", "-c", "-mod=mod", "-o", bin}
	if s.tags != "" {
		args = append(args, "-tags", s.tags)
	}
	cmd := exec.Command("go", append(args, ".")...)
	cmd.Dir = pkgDir
	cgo := "CGO_ENABLED=0"
	if s.cgo {
		cgo = "CGO_ENABLED=1"
	}
	cmd.Env = append(os.Environ(), cgo)
	start := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building %s %s: %v\n%s", s.name, s.version, err, out)
	}
	t.Logf("built the test binary of %s %s (%s) in %v", s.name, s.version, pkgDir, time.Since(start).Round(time.Second))
	return bin
}

// runSuite fetches, builds and runs the suite's packages against whatever
// the caller started, logs the counts and failures, and fails t when a test
// failed.
func runSuite(t *testing.T, s clientSuite) testCounts {
	t.Helper()
	mod := copySuite(t, fetchSuite(t, &s))
	var total testCounts
	for _, pkg := range s.pkgs {
		pkgDir := filepath.Join(mod, pkg)
		c := runSuitePackage(t, &s, pkgDir, buildSuite(t, &s, pkgDir))
		total.add(c, pkg)
	}
	t.Logf("%s %s: %d passed, %d failed, %d skipped (top-level tests: %d passed, %d failed, %d skipped)",
		s.name, s.version, total.pass, len(total.failed), total.skip, total.topPass, total.topFail, total.topSkip)
	for _, name := range total.failed {
		t.Logf("failed: %s", name)
	}
	if s.skip != "" {
		t.Logf("not run: %s (%s)", s.skip, s.skipWhy)
	}
	// The plain closing line, for anyone reading the make target's output.
	fmt.Printf("%s: %d passed, %d failed, %d skipped\n", strings.ReplaceAll(s.name, " ", "_"), total.pass, len(total.failed), total.skip)
	if len(total.failed) > 0 || total.broken {
		t.Errorf("the suite failed")
	}
	return total
}

// runSuitePackage runs one package's test binary in its directory and
// counts its results; go test's JSON output is kept in a file.
func runSuitePackage(t *testing.T, s *clientSuite, pkgDir, bin string) testCounts {
	t.Helper()
	timeout := s.timeout
	if d, err := time.ParseDuration(os.Getenv("KBROKER_SUITE_TIMEOUT")); err == nil {
		timeout = d
	}
	if timeout == 0 {
		timeout = 30 * time.Minute
	}
	args := []string{"tool", "test2json", "-t", "-p", s.module, bin,
		"-test.v=test2json", "-test.count=1", "-test.timeout=" + timeout.String()}
	if s.skip != "" {
		args = append(args, "-test.skip="+s.skip)
	}
	run := s.run
	if r := os.Getenv("KBROKER_SUITE_RUN"); r != "" {
		run = r
	}
	if run != "" {
		args = append(args, "-test.run="+run)
	}
	args = append(args, s.args...)
	ctx, cancel := context.WithTimeout(context.Background(), timeout+2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = pkgDir
	cmd.Env = append(os.Environ(), s.env...)
	logPath := filepath.Join(os.TempDir(), fmt.Sprintf("suite-%s-%d.json",
		strings.Map(fileSafe, s.name+"-"+filepath.Base(pkgDir)), time.Now().Unix()))
	log, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	counts := countGoTestJSON(io.TeeReader(stdout, log))
	if err := cmd.Wait(); err != nil && len(counts.failed) == 0 {
		// Exited non-zero with no test failing: a panic, a timeout or
		// a TestMain that gave up.
		counts.broken = true
		t.Logf("%s: the test binary failed with no test failing (%v); see %s", pkgDir, err, logPath)
	}
	t.Logf("%s: %d passed, %d failed, %d skipped; go test output in %s",
		filepath.Base(pkgDir), counts.pass, len(counts.failed), counts.skip, logPath)
	return counts
}

type testCounts struct {
	pass, skip                int
	topPass, topFail, topSkip int
	failed                    []string
	broken                    bool // the binary failed outside any test
}

// add adds another package's counts, naming its failures after pkg.
func (c *testCounts) add(o testCounts, pkg string) {
	c.pass, c.skip = c.pass+o.pass, c.skip+o.skip
	c.topPass, c.topFail, c.topSkip = c.topPass+o.topPass, c.topFail+o.topFail, c.topSkip+o.topSkip
	c.broken = c.broken || o.broken
	for _, f := range o.failed {
		if pkg != "." && pkg != "" {
			f = pkg + ": " + f
		}
		c.failed = append(c.failed, f)
	}
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

// fileSafe keeps letters, digits, '-' and '_' of a file name; the rest
// becomes '_'.
func fileSafe(r rune) rune {
	if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
		return r
	}
	return '_'
}

package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kbroker/kbroker/demo"
)

// demoBinary is the kbroker the demo's brokers run: $KBROKER_BIN (make test
// sets it to bin/kbroker), or this package built into a directory of t's.
func demoBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("starts brokers: not with -short")
	}
	if bin := os.Getenv("KBROKER_BIN"); bin != "" {
		return bin
	}
	bin := filepath.Join(t.TempDir(), "kbroker")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("building kbroker: %v\n%s", err, out)
	}
	return bin
}

// Each scenario runs as "kbroker demo --json NAME" on its own cluster; the
// outcome it reports and the story it tells must match the lesson. Then a
// run is cancelled midway. The subtests run in parallel, as many at a time
// as -parallel allows (GOMAXPROCS: 2 on a 2-core machine).
func TestDemoScenarios(t *testing.T) {
	bin := demoBinary(t)
	t.Run("cancelled", func(t *testing.T) {
		t.Parallel()
		testDemoCancelled(t, bin)
	})
	for _, tc := range []struct {
		name      string
		check     func(t *testing.T, o demo.Outcome)
		narration []string
	}{
		{"acks1", func(t *testing.T, o demo.Outcome) {
			if o.Lost == 0 {
				t.Errorf("acks=1: no acknowledged record lost: %+v", o)
			}
		}, []string{"producer (acks=1) wrote 50 records", "LOST: ", "acknowledged with acks=1"}},
		{"acksall", func(t *testing.T, o demo.Outcome) {
			if o.Lost != 0 || o.Duplicates != 0 || o.Retried == 0 || o.Acked != 10+o.Retried {
				t.Errorf("acks=all: want nothing lost or duplicated and retried records acknowledged: %+v", o)
			}
		}, []string{"1.5s later: none acknowledged", "the producer retried the in-flight records", " 0 lost, 0 duplicated"}},
		{"mininsync", func(t *testing.T, o demo.Outcome) {
			if !slices.Contains(o.Refusals, "NOT_ENOUGH_REPLICAS") || o.Lost != 0 || o.Acked != 25 {
				t.Errorf("min.insync.replicas=2: want NOT_ENOUGH_REPLICAS and 25 records acknowledged, none lost: %+v", o)
			}
		}, []string{"error 19 NOT_ENOUGH_REPLICAS", "the 5 waiting records were acknowledged", "25 acknowledged, 0 lost"}},
		{"unclean", func(t *testing.T, o demo.Outcome) {
			if o.Lost != 20 || !slices.Equal(o.LostValues, o.WrittenAfterStale) {
				t.Errorf("unclean election: lost %v, want exactly the records written after the stale replica left the ISR %v",
					o.LostValues, o.WrittenAfterStale)
			}
		}, []string{"no leader (offline)", "unclean election: stale broker", "LOST: 20 acknowledged records"}},
		{"queue", func(t *testing.T, o demo.Outcome) {
			if o.Acked != 60 || o.Lost != 0 || o.Duplicates != 0 || o.Redelivered == 0 {
				t.Errorf("queue: want 60 jobs accepted once, none lost, the killed consumer's redelivered: %+v", o)
			}
		}, []string{"each is assigned partition 0", "is KILLED mid-batch", "(delivery 2), accepted by", "start offset is 60, lag 0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			res := runCmd(t, nil, nil, "demo", "--json", "--kbroker-bin="+bin, "--dir="+dir, tc.name)
			if res.code != exitOK {
				t.Fatalf("exit %d\n%s", res.code, res.stderr)
			}
			var outs []demo.Outcome
			if err := json.Unmarshal([]byte(res.stdout), &outs); err != nil || len(outs) != 1 || outs[0].Scenario != tc.name {
				t.Fatalf("outcomes %q: %v", res.stdout, err)
			}
			o := outs[0]
			t.Logf("%s took %.1fs: acked %d, lost %d", tc.name, o.Elapsed.Seconds(), o.Acked, o.Lost)
			tc.check(t, o)
			for _, want := range append(tc.narration, "cleanup: all", "lesson: ", "Summary") {
				if !strings.Contains(res.stderr, want) {
					t.Errorf("narration lacks %q", want)
				}
			}
			if t.Failed() {
				t.Logf("narration:\n%s", res.stderr)
			}
			assertCleanedUp(t, dir)
		})
	}
}

// assertCleanedUp checks that the run removed its directory under dir and
// left no process running with it.
func assertCleanedUp(t *testing.T, dir string) {
	t.Helper()
	if entries, err := os.ReadDir(dir); err != nil || len(entries) != 0 {
		t.Errorf("left behind in %s: %v (%v)", dir, entries, err)
	}
	cmdlines, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, path := range cmdlines {
		b, err := os.ReadFile(path)
		if err == nil && strings.Contains(string(b), dir) {
			t.Errorf("a process still runs with %s: %s %q", dir, path, b)
		}
	}
}

// testDemoCancelled: cancelling a run (Ctrl-C) stops it soon, kills the
// brokers and removes the directory.
func testDemoCancelled(t *testing.T, bin string) {
	dir := t.TempDir()
	s, err := demo.New("unclean", demo.Config{Binary: bin, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var narration strings.Builder
	narr := demo.NewNarrator(&narrationWriter{b: &narration, onLine: func(line string) {
		if strings.Contains(line, "SIGSTOP") { // mid-scenario: a broker is paused
			cancel()
		}
	}})
	start := time.Now()
	_, err = s.Run(ctx, narr)
	cancel()
	if err == nil || !strings.Contains(err.Error(), "interrupted") {
		t.Fatalf("cancelled run returned %v\n%s", err, narration.String())
	}
	if d := time.Since(start); d > 40*time.Second {
		t.Errorf("cancelled run took %v", d)
	}
	assertCleanedUp(t, dir)
}

// narrationWriter keeps the narration and calls onLine for each write.
type narrationWriter struct {
	mu     sync.Mutex
	b      *strings.Builder
	onLine func(string)
}

func (w *narrationWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	w.b.Write(p)
	w.mu.Unlock()
	w.onLine(string(p))
	return len(p), nil
}

func TestDemoUsage(t *testing.T) {
	res := runCmd(t, nil, nil, "demo", "acks2")
	if res.code != exitUsage || !strings.Contains(res.stderr, `unknown scenario "acks2": one of acks1, acksall, mininsync, unclean, queue`) {
		t.Errorf("unknown scenario: exit %d, stderr %q", res.code, res.stderr)
	}
	res = runCmd(t, nil, nil, "demo", "--help")
	for _, name := range demo.Names() {
		if res.code != exitOK || !strings.Contains(res.stdout, "\n  "+name+" ") {
			t.Errorf("demo --help does not describe %s: exit %d\n%s", name, res.code, res.stdout)
		}
	}
	if res.cfg != nil {
		t.Error("demo --help started a broker")
	}
}

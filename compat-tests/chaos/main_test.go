package chaos

// How to run: see doc.go.

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/kbroker/kbroker/internal/testsupport"
)

var (
	seedFlag     = flag.Uint64("seed", 0, "seed of the nemesis schedules (0: from KBROKER_CHAOS_SEED or the clock)")
	durationFlag = flag.Duration("chaos.duration", 0, "how long each scenario's nemesis runs (0: KBROKER_CHAOS_DURATION or the scenario's default)")
)

// kbrokerBin is the binary under test: $KBROKER_BIN, or built once here.
var kbrokerBin string

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	if mode() == "" {
		return m.Run() // unit tests only: no binary needed
	}
	if bin := os.Getenv("KBROKER_BIN"); bin != "" {
		kbrokerBin = bin
		return m.Run()
	}
	return testsupport.RunWithBuiltKbroker("../../cmd/kbroker", func(bin string) int {
		kbrokerBin = bin
		return m.Run()
	})
}

// mode is KBROKER_CHAOS: "" (unit tests only), "short" (the run in make
// test) or "full" (make chaos).
func mode() string { return os.Getenv("KBROKER_CHAOS") }

// needMode skips a test unless KBROKER_CHAOS is one of modes.
func needMode(t *testing.T, modes ...string) {
	t.Helper()
	for _, m := range modes {
		if mode() == m {
			return
		}
	}
	t.Skipf("fault injection runs with KBROKER_CHAOS=%v (make chaos, make test); KBROKER_CHAOS=%q", modes, mode())
}

// seed is the schedule seed for this run.
func seed() uint64 {
	if *seedFlag != 0 {
		return *seedFlag
	}
	if s, err := strconv.ParseUint(os.Getenv("KBROKER_CHAOS_SEED"), 10, 64); err == nil && s != 0 {
		return s
	}
	return uint64(time.Now().UnixNano()) % 1_000_000_000
}

// duration is how long a scenario's nemesis runs.
func duration(def time.Duration) time.Duration {
	if *durationFlag != 0 {
		return *durationFlag
	}
	if d, err := time.ParseDuration(os.Getenv("KBROKER_CHAOS_DURATION")); err == nil && d > 0 {
		return d
	}
	return def
}

// runDir makes the folder that keeps a scenario's history and logs.
func runDir(t *testing.T, name string, seed uint64) string {
	root := os.Getenv("KBROKER_CHAOS_OUT")
	if root == "" {
		root = filepath.Join(os.TempDir(), "kbroker-chaos")
	}
	// Runs of other days go: each make test leaves one.
	if old, err := os.ReadDir(root); err == nil {
		for _, e := range old {
			if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > 24*time.Hour {
				os.RemoveAll(filepath.Join(root, e.Name()))
			}
		}
	}
	dir := filepath.Join(root, fmt.Sprintf("%s-%d", name, seed))
	os.RemoveAll(dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

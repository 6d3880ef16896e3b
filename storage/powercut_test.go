package storage

import (
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/kbroker/kbroker/internal/powercut"
	"github.com/kbroker/kbroker/storage/vfs"
)

var (
	powercutSeeds = flag.Int("powercut.seeds", 0, "power-loss journal suite: number of seeded sequences (default 150 under -race, 600 without)")
	powercutSeed  = flag.Int64("powercut.seed", -1, "power-loss journal suite: run only this seed (with -crash.trace: log the journal and the plan)")
)

// The power-loss harness of the process-level tests (internal/powercut)
// rebuilds a log dir from the fsync bookkeeping journal the broker wrote.
// This suite runs the crash suite's sequences through a powercut.Recorder,
// stops them at a random file system call (the process dies: nothing after
// it is done or journaled), lets the harness cut the power from the
// journal alone, and holds the result to the crash suite's checks: the log
// is a prefix of what was written, every flushed record is there, no torn
// batch is served, indexes, epochs and checkpoints agree. So the harness
// never drops what was synced and the state it leaves is one storage
// recovers from.
func TestPowercutJournalSuite(t *testing.T) {
	n := *powercutSeeds
	if n == 0 {
		n = 600
		if raceEnabled {
			n = 150
		}
	}
	first, last := int64(0), int64(n)
	if *powercutSeed >= 0 {
		first, last = *powercutSeed, *powercutSeed+1
	}
	root := crashRoot(t)
	dropped := 0
	for seed := first; seed < last; seed++ {
		dir := filepath.Join(root, strconv.FormatInt(seed, 10))
		if err := os.MkdirAll(filepath.Join(dir, "data"), 0o755); err != nil {
			t.Fatal(err)
		}
		dropped += runPowercutSequence(t, seed, dir)
		os.RemoveAll(dir)
		if t.Failed() {
			t.Fatalf("seed %d failed", seed)
		}
	}
	if dropped == 0 && last-first > 10 {
		t.Fatal("the harness never dropped anything: it would not test power loss")
	}
	t.Logf("%d sequences; the harness cut or deleted %d files", n, dropped)
}

// runPowercutSequence runs one seed and returns how many files the cut
// changed or deleted.
func runPowercutSequence(t *testing.T, seed int64, dir string) int {
	r := newCrashRun(seed, dir)
	// The process's death: CrashFS fails every call from a random one on,
	// and the recorder journals only calls that completed.
	stop, err := vfs.NewCrashFS(dir)
	if err != nil {
		t.Fatal(err)
	}
	journal := filepath.Join(dir, "journal")
	rec, err := powercut.NewRecorder(stop, journal, []string{r.logDir})
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	m, _ := r.run(t, rec, func() { stop.CutAfter(int64(1+r.rng.IntN(400)), nil) })
	stop.Cut(nil)
	// Dead: every call fails from now on and the journal is complete. The
	// Close releases the mappings; all it can still write are index
	// entries into mapped pages past what was synced, which the cut
	// zeroes.
	m.Close()

	plan, err := powercut.Replay(journal)
	if err != nil {
		t.Fatalf("seed %d: %v", seed, err)
	}
	if *crashTrace {
		b, _ := os.ReadFile(journal)
		t.Logf("journal:\n%s\nplan: %+v", b, plan)
	}
	changed := len(plan.Delete)
	for path, cut := range plan.Files {
		if st, err := os.Stat(path); err == nil && cut.Keep < st.Size() {
			changed++
		}
	}
	if _, err := powercut.Apply(journal); err != nil {
		t.Fatalf("seed %d: %v", seed, err)
	}
	r.reopenAndCheck(t)
	return changed
}

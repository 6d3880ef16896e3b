package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
)

func TestParseCaps(t *testing.T) {
	caps, err := parseCaps("")
	if err != nil || !mapsEqual(caps, defaultCaps) {
		t.Fatalf("parseCaps(\"\") = %v, %v; want the defaults %v", caps, err, defaultCaps)
	}
	caps, err = parseCaps("w2=2000,w4=300")
	if err != nil {
		t.Fatal(err)
	}
	if caps["w2"] != 2000 || caps["w2-acks1"] != 2000 || caps["w2-txn"] != 2000 || caps["w4"] != 300 || caps["w1"] != defaultCaps["w1"] {
		t.Fatalf("got %v: w2-acks1 and w2-txn must follow w2, the rest keep their defaults", caps)
	}
	if caps, _ = parseCaps("w2=2000,w2-acks1=10"); caps["w2-acks1"] != 10 {
		t.Fatalf("an explicit w2-acks1 cap was overridden: %v", caps)
	}
	for _, bad := range []string{"w2", "w2=0", "w2=-5", "w9=10", "w3=10", "w2=x"} {
		if _, err := parseCaps(bad); err == nil {
			t.Errorf("parseCaps(%q) accepted", bad)
		}
	}
}

func mapsEqual(a, b map[string]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestWarmRecords(t *testing.T) {
	for _, c := range []struct {
		cap  int64
		rate float64
		want int64
	}{{50, 0, 1000}, {50_000, 0, 1000}, {1_000_000, 0, 10_000}, {50_000, 5000, 10_000}, {1_000_000, 100, 10_000}} {
		if got := warmRecords(c.cap, c.rate); got != c.want {
			t.Errorf("warmRecords(%d, %v) = %d, want %d", c.cap, c.rate, got, c.want)
		}
	}
}

// TestRotation: warm-ups and repetition 1 keep the given order; over n
// repetitions each of n targets takes each place once.
func TestRotation(t *testing.T) {
	ts := []targetKind{"a", "b", "c"}
	for _, rep := range []int{-1, 0, 1} {
		if got := rotation(ts, rep); !slices.Equal(got, ts) {
			t.Fatalf("rep %d: %v, want %v", rep, got, ts)
		}
	}
	if got := rotation(ts, 2); !slices.Equal(got, []targetKind{"b", "c", "a"}) {
		t.Fatalf("rep 2: %v", got)
	}
	places := map[targetKind]map[int]bool{}
	for rep := 1; rep <= 3; rep++ {
		for i, tk := range rotation(ts, rep) {
			if places[tk] == nil {
				places[tk] = map[int]bool{}
			}
			places[tk][i] = true
		}
	}
	for tk, p := range places {
		if len(p) != 3 {
			t.Fatalf("target %s took places %v in 3 repetitions", tk, p)
		}
	}
	if !slices.Equal(ts, []targetKind{"a", "b", "c"}) {
		t.Fatal("rotation changed its argument")
	}
}

func TestMedian(t *testing.T) {
	in := []float64{5, 1, 3}
	for _, c := range []struct {
		vs   []float64
		want float64
		ok   bool
	}{{in, 3, true}, {[]float64{4, 1, 3, 2}, 2.5, true}, {[]float64{7}, 7, true}, {nil, 0, false}} {
		if got, ok := median(c.vs); got != c.want || ok != c.ok {
			t.Errorf("median(%v) = %v, %v; want %v, %v", c.vs, got, ok, c.want, c.ok)
		}
	}
	if !slices.Equal(in, []float64{5, 1, 3}) {
		t.Fatal("median sorted its argument")
	}
}

// inProcessStarter starts kfake and the null broker inside the test.
func inProcessStarter(t *testing.T) func(context.Context, startOpts) (*cluster, error) {
	return func(_ context.Context, o startOpts) (*cluster, error) {
		c := &cluster{kind: o.kind, dir: o.dir}
		switch o.kind {
		case kindKfake:
			kc, err := kfake.NewCluster(kfake.NumBrokers(o.brokers))
			if err != nil {
				return nil, err
			}
			c.addrs, c.inProcess = kc.ListenAddrs(), kc.Close
		case kindNull:
			if err := os.MkdirAll(o.dir, 0o755); err != nil {
				return nil, err
			}
			c.addrs, c.inProcess = runNullInProcess(t, o.dir, o.brokers, false)
		default:
			return nil, fmt.Errorf("no in-process %s", o.kind)
		}
		return c, nil
	}
}

// TestSuiteRules runs the whole suite with small caps on in-process kfake
// and null targets and checks the rules: every run times exactly its cap,
// w3 reads exactly what its repetition's w2 wrote (so the earlier
// repetitions' records were deleted), every topic is gone after its
// repetition, warm-ups run first and are not recorded, and the targets
// alternate in rotated order.
func TestSuiteRules(t *testing.T) {
	caps := map[string]int64{"w1": 3000, "w2": 1500, "w2-acks1": 1200, "w4": 600}
	cfg := suiteConfig{Out: t.TempDir(), Reps: 2, WarmupReps: 1, Caps: caps, Timeout: 30 * time.Second,
		Targets: []targetKind{kindKfake, kindNull}, Workloads: []string{"w1", "w2", "w3", "w2-acks1", "w4"}}
	var report bytes.Buffer
	s := newSuite(cfg, &report)
	s.start, s.logf = inProcessStarter(t), t.Logf
	w4 := s.ws["w4"]
	w4.load.WarmRecords = 500 // not w4's two seconds: this test is about the rules
	s.ws["w4"] = w4
	var seen []runRecord
	s.after = func(rr runRecord, c *cluster) {
		seen = append(seen, rr)
		if rr.Err != "" {
			t.Errorf("%s %s rep %d failed: %s", rr.Workload, rr.Target, rr.Rep, rr.Err)
			return
		}
		checkRun(t, s, rr, c)
	}
	if err := s.measure(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if want := 2 * 5 * 2; len(s.runs) != want {
		t.Fatalf("%d runs recorded, want %d (2 targets, 5 workloads, 2 repetitions)", len(s.runs), want)
	}
	if warm := len(seen) - len(s.runs); warm != 2*5 {
		t.Fatalf("%d warm-up runs, want 10", warm)
	}
	checkOrder(t, seen, cfg.Targets)
	s.report()
	for _, want := range []string{"## Issue 20", "w2 MB/s, 3 brokers RF=3 acks=all vs kfake", "acks=all vs acks=1", "## Each repetition"} {
		if !strings.Contains(report.String(), want) {
			t.Errorf("the report lacks %q", want)
		}
	}
}

// The transactional workloads (issue 14) under the same rules, on kfake
// (the null broker has no transactions): every workload that produces
// has a cap, and both consumers read all of w2-txn's committed topic.
func TestSuiteTxnWorkloads(t *testing.T) {
	caps, err := parseCaps("w2=1500")
	if err != nil {
		t.Fatal(err)
	}
	cfg := suiteConfig{Out: t.TempDir(), Reps: 1, WarmupReps: 0, Caps: caps, Timeout: 30 * time.Second,
		Targets: []targetKind{kindKfake}, Workloads: []string{"w2-txn", "w3-txn", "w3-rc"}}
	var report bytes.Buffer
	s := newSuite(cfg, &report)
	s.start, s.logf = inProcessStarter(t), t.Logf
	w := s.ws["w2-txn"]
	// Several transactions in a run this small: 1,500 records paced over
	// 150 ms, a commit every 10 ms.
	w.load.CommitEvery, w.load.Rate = 10*time.Millisecond, 10_000
	s.ws["w2-txn"] = w
	s.after = func(rr runRecord, c *cluster) {
		if rr.Err != "" {
			t.Errorf("%s %s rep %d failed: %s", rr.Workload, rr.Target, rr.Rep, rr.Err)
			return
		}
		checkRun(t, s, rr, c)
	}
	if err := s.measure(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if len(s.runs) != 3 {
		t.Fatalf("%d runs recorded, want 3", len(s.runs))
	}
	s.report()
	if !strings.Contains(report.String(), "## Issue 14") {
		t.Errorf("the report lacks the issue 14 ratios")
	}
}

// checkRun checks one finished run (its topic already deleted unless the
// next workload reads it).
func checkRun(t *testing.T, s *suite, rr runRecord, c *cluster) {
	t.Helper()
	w := s.ws[rr.Workload]
	ctx := testCtx(t)
	if w.reads != "" {
		want := s.cfg.Caps[w.reads] + s.ws[w.reads].load.WarmRecords
		if rr.Result.Records != want {
			t.Errorf("%s %s rep %d read %d records, want %d: the topic was not fresh", rr.Workload, rr.Target, rr.Rep, rr.Result.Records, want)
		}
	} else if rr.Result.Records != s.cfg.Caps[rr.Workload] {
		t.Errorf("%s %s rep %d timed %d records, want the cap %d", rr.Workload, rr.Target, rr.Rep, rr.Result.Records, s.cfg.Caps[rr.Workload])
	}
	if i := slices.Index(s.cfg.Workloads, rr.Workload); slices.ContainsFunc(s.cfg.Workloads[i+1:], func(n string) bool {
		return s.ws[n].load.Topic == w.load.Topic
	}) {
		return // a later workload reads the topic (w3 reads w2's, w3-txn and w3-rc w2-txn's)
	}
	if _, err := topicRecords(ctx, c.addrs, w.load.Topic); err == nil {
		t.Errorf("%s %s rep %d: topic %s still there after the run", rr.Workload, rr.Target, rr.Rep, w.load.Topic)
	}
	if n := c.dataLeft(w.load.Topic); n != 0 {
		t.Errorf("%s %s rep %d: %d files of topic %s left", rr.Workload, rr.Target, rr.Rep, n, w.load.Topic)
	}
}

// checkOrder: within each group, the warm-up comes first, then each
// repetition runs the targets in rotation order.
func checkOrder(t *testing.T, seen []runRecord, targets []targetKind) {
	t.Helper()
	lastRep := map[string]int{}
	var order = map[string][]targetKind{}
	for _, rr := range seen {
		if rr.Rep < lastRep[rr.Workload] {
			t.Fatalf("%s: rep %d ran after rep %d", rr.Workload, rr.Rep, lastRep[rr.Workload])
		}
		lastRep[rr.Workload] = rr.Rep
		key := fmt.Sprintf("%s/%d", rr.Workload, rr.Rep)
		order[key] = append(order[key], rr.Target)
	}
	for key, got := range order {
		var w string
		var rep int
		fmt.Sscanf(strings.Replace(key, "/", " ", 1), "%s %d", &w, &rep)
		if want := rotation(targets, rep); !slices.Equal(got, want) {
			t.Errorf("%s: targets ran in order %v, want %v", key, got, want)
		}
	}
}

// Every profiled workload is one the suite defines (a misspelt name would
// be skipped without a word), and w4, the small-request path, is among them.
func TestProfiledWorkloadsExist(t *testing.T) {
	ws := workloads(defaultCaps, time.Minute, scaleConfig{})
	for _, w := range profiledWorkloads {
		if _, ok := ws[w]; !ok {
			t.Errorf("profiled workload %q is not a workload of the suite", w)
		}
	}
	if !slices.Contains(profiledWorkloads, "w4") {
		t.Error("w4 is not profiled")
	}
}

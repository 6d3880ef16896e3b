package main

// The suite: issue 8's workloads against kbroker, kfake and the null broker,
// targets alternated (A B C A B C ...) for each repetition, medians and
// ratios printed as a markdown table.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

type suiteConfig struct {
	Kbroker    string        // bin/kbroker
	KbrokerB   string        // a second build, target kbroker-b (optional)
	PprofBin   string        // the pprofbroker build ("" = no profiles)
	Out        string        // results directory
	Reps       int           // repetitions of each target
	Duration   time.Duration // of each produce workload
	Targets    []targetKind
	Workloads  []string // w1, w2 (w3 runs with w2), w4, restart
	Segments   int      // segments for the restart measure
	W3Records  int64    // records w3 reads (w2's topic is topped up to it)
	Note       string   // printed in the report's header (the build, say)
	WarmMemory bool     // write and delete a file of the available memory first (warm.go)
}

// workload is one of issue 8's loads.
type workload struct {
	name    string
	brokers int
	load    loadConfig
}

func workloads(d time.Duration) map[string]workload {
	return map[string]workload{
		"w1": {"w1", 1, loadConfig{Topic: "w1", Partitions: 1, RF: 1, RecordBytes: 100, Acks: "1",
			Producers: 1, Duration: d, Warmup: time.Second, Linger: 10 * time.Millisecond, Mode: "produce"}},
		"w2": {"w2", 3, loadConfig{Topic: "w2", Partitions: 12, RF: 3, RecordBytes: 1024, Acks: "all",
			Idempotent: true, Producers: 1, Duration: d, Warmup: time.Second, Linger: 10 * time.Millisecond, Mode: "produce"}},
		"w3": {"w3", 3, loadConfig{Topic: "w2", Mode: "consume", Duration: 5 * time.Minute}},
		"w4": {"w4", 3, loadConfig{Topic: "w4", Partitions: 12, RF: 3, RecordBytes: 1024, Acks: "all",
			Idempotent: true, Producers: 1, Duration: d, Warmup: time.Second, Rate: 5000, Linger: 0, Mode: "e2e"}},
	}
}

// runRecord is one measured run, as written to results.json.
type runRecord struct {
	Workload string
	Target   targetKind
	Rep      int
	LoadAvg  string // of the machine when the run started
	Result   loadResult
	Err      string `json:",omitempty"`
}

type suite struct {
	cfg  suiteConfig
	ws   map[string]workload
	runs []runRecord
	out  io.Writer // the report (stdout and report.md)
}

func runSuite(ctx context.Context, cfg suiteConfig) error {
	if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
		return err
	}
	report, err := os.Create(filepath.Join(cfg.Out, "report.md"))
	if err != nil {
		return err
	}
	defer report.Close()
	s := &suite{cfg: cfg, ws: workloads(cfg.Duration), out: io.MultiWriter(os.Stdout, report)}
	s.header()
	if cfg.WarmMemory {
		if err := warmMemory(func(format string, args ...any) { fmt.Fprintf(s.out, "- "+format+"\n", args...) }); err != nil {
			return err
		}
	}
	groups := [][]string{{"w1"}, {"w2", "w3"}, {"w4"}}
	for _, g := range groups {
		if !slices.Contains(cfg.Workloads, g[0]) {
			continue
		}
		for rep := 1; rep <= cfg.Reps; rep++ {
			for _, t := range cfg.Targets {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				group := g
				if t == kindNullRF { // only w2's replication tells it from null
					if g[0] != "w2" {
						continue
					}
					group = []string{"w2"}
				}
				s.runGroup(ctx, group, t, rep)
			}
		}
	}
	s.table()
	s.targets()
	if err := s.writeJSON(); err != nil {
		return err
	}
	if slices.Contains(cfg.Workloads, "restart") && slices.Contains(cfg.Targets, kindKbroker) {
		if err := s.restart(ctx); err != nil {
			fmt.Fprintf(s.out, "\nrestart measure failed: %v\n", err)
		}
	}
	if cfg.PprofBin != "" {
		for _, w := range []string{"w1", "w2"} {
			if slices.Contains(cfg.Workloads, w) {
				if err := s.profile(ctx, w); err != nil {
					fmt.Fprintf(s.out, "\nprofile of %s failed: %v\n", w, err)
				}
			}
		}
	}
	fmt.Fprintf(s.out, "\nload average after: %s\n", loadAvg())
	return nil
}

func (s *suite) header() {
	fmt.Fprintf(s.out, "# kbroker benchmark, %s\n\n", time.Now().UTC().Format(time.RFC3339))
	fmt.Fprintf(s.out, "- machine: %d CPUs (%s), %s; load average before: %s\n", runtime.NumCPU(), cpuModel(), memTotal(), loadAvg())
	fmt.Fprintf(s.out, "- %d repetitions per target, targets alternated %v; produce workloads run %v each\n",
		s.cfg.Reps, s.cfg.Targets, s.cfg.Duration)
	fmt.Fprintf(s.out, "- kbroker binary: %s %s\n", s.cfg.Kbroker, s.cfg.Note)
	fmt.Fprintf(s.out, "- %s\n", pageReporting())
	fmt.Fprintf(s.out, "- command: %s\n\n", strings.Join(os.Args, " "))
}

// runGroup starts a fresh cluster of target t, runs the group's workloads
// on it in order, and stops it.
func (s *suite) runGroup(ctx context.Context, group []string, t targetKind, rep int) {
	w0 := s.ws[group[0]]
	dir := filepath.Join(s.cfg.Out, "runs", fmt.Sprintf("%s-%s-%d", group[0], t, rep))
	os.RemoveAll(dir)
	bin := s.cfg.Kbroker
	if t == kindKbrokerB {
		bin = s.cfg.KbrokerB
	}
	c, err := startCluster(ctx, startOpts{kind: t, brokers: w0.brokers, dir: dir, kbroker: bin})
	if err != nil {
		for _, w := range group {
			s.record(runRecord{Workload: w, Target: t, Rep: rep, Err: err.Error()})
		}
		return
	}
	defer func() {
		c.stop()
		os.RemoveAll(dir) // the data: gigabytes for w2
	}()
	for _, name := range group {
		w := s.ws[name]
		lc := w.load
		lc.Brokers, lc.Pids = c.addrs, c.pids()
		if name == "w3" {
			if err := s.topUp(ctx, c, s.ws["w2"].load, s.cfg.W3Records); err != nil {
				s.record(runRecord{Workload: name, Target: t, Rep: rep, Err: "topping up w2's topic: " + err.Error()})
				continue
			}
			lc.Records = s.cfg.W3Records
		}
		la := loadAvg()
		res, err := runLoad(ctx, lc)
		rr := runRecord{Workload: name, Target: t, Rep: rep, LoadAvg: la, Result: res}
		if err != nil {
			rr.Err = err.Error()
		}
		s.record(rr)
	}
}

// topUp produces, unmeasured, until the topic of lc holds want records, so
// that w3 reads the same volume from every target whatever w2 managed.
func (s *suite) topUp(ctx context.Context, c *cluster, lc loadConfig, want int64) error {
	adm, cl, err := adminClient(c.addrs)
	if err != nil {
		return err
	}
	ends, err := adm.ListEndOffsets(ctx, lc.Topic)
	cl.Close()
	if err != nil {
		return err
	}
	var have int64
	ends.Each(func(o kadm.ListedOffset) { have += o.Offset })
	if have >= want {
		return nil
	}
	lc.Brokers, lc.Records, lc.Duration, lc.Warmup = c.addrs, want-have, 0, 0
	res, err := runLoad(ctx, lc)
	if err == nil && res.Errors > 0 {
		err = fmt.Errorf("%d produce errors, first: %s", res.Errors, res.FirstError)
	}
	log.Printf("w3 %-7s: topped up w2's topic from %d to %d records", c.kind, have, have+res.Records)
	return err
}

func (s *suite) record(rr runRecord) {
	s.runs = append(s.runs, rr)
	if rr.Err != "" {
		log.Printf("%s %-7s rep %d: FAILED: %s", rr.Workload, rr.Target, rr.Rep, rr.Err)
		return
	}
	log.Printf("%s %-7s rep %d (load %s): %s", rr.Workload, rr.Target, rr.Rep, rr.LoadAvg, rr.Result)
}

func (s *suite) writeJSON() error {
	b, err := json.MarshalIndent(s.runs, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(s.cfg.Out, "results.json"), b, 0o644)
}

// metric is one row of the table.
type metric struct {
	name   string
	get    func(loadResult) float64
	format func(float64) string
	lower  bool // lower is better (for the reader; ratios are plain)
}

func num(f float64) string   { return fmt.Sprintf("%.0f", f) }
func num2(f float64) string  { return fmt.Sprintf("%.2f", f) }
func num1(f float64) string  { return fmt.Sprintf("%.1f", f) }
func msFmt(f float64) string { return fmtDur(time.Duration(f)) }
func mib(f float64) string   { return fmt.Sprintf("%.0f", f/(1<<20)) }

var (
	mRecs    = metric{"records/s", loadResult.RecPerSec, num, false}
	mCount   = metric{"records read", func(r loadResult) float64 { return float64(r.Records) }, num, false}
	mMB      = metric{"MB/s", loadResult.MBPerSec, num2, false}
	mAck50   = metric{"ack p50", func(r loadResult) float64 { return float64(r.AckP50) }, msFmt, true}
	mAck99   = metric{"ack p99", func(r loadResult) float64 { return float64(r.AckP99) }, msFmt, true}
	mAck999  = metric{"ack p99.9", func(r loadResult) float64 { return float64(r.AckP999) }, msFmt, true}
	mE2E50   = metric{"e2e p50", func(r loadResult) float64 { return float64(r.E2EP50) }, msFmt, true}
	mE2E99   = metric{"e2e p99", func(r loadResult) float64 { return float64(r.E2EP99) }, msFmt, true}
	mCPU     = metric{"broker CPU ms/MB", loadResult.CPUPerMB, num1, true}
	mHWM     = metric{"peak RSS MiB (VmHWM, max of brokers)", func(r loadResult) float64 { return float64(r.Usage.MaxHWM) }, mib, true}
	mAnon    = metric{"peak anon RSS MiB (max of brokers)", func(r loadResult) float64 { return float64(r.Usage.MaxAnon) }, mib, true}
	wMetrics = map[string][]metric{
		"w1": {mRecs, mMB, mAck50, mAck99, mAck999, mCPU, mHWM, mAnon},
		"w2": {mRecs, mMB, mAck50, mAck99, mAck999, mCPU, mHWM, mAnon},
		"w3": {mCount, mRecs, mMB, mCPU, mHWM, mAnon},
		"w4": {mRecs, mE2E50, mE2E99, mAck50, mAck99, mCPU, mHWM, mAnon},
	}
)

// median of the metric over the successful runs of w on t; ok false if none.
func (s *suite) median(w string, t targetKind, m metric) (float64, bool) {
	var vs []float64
	for _, rr := range s.runs {
		if rr.Workload == w && rr.Target == t && rr.Err == "" {
			vs = append(vs, m.get(rr.Result))
		}
	}
	if len(vs) == 0 {
		return 0, false
	}
	slices.Sort(vs)
	if len(vs)%2 == 1 {
		return vs[len(vs)/2], true
	}
	return (vs[len(vs)/2-1] + vs[len(vs)/2]) / 2, true
}

func (s *suite) okRuns(w string, t targetKind) int {
	n := 0
	for _, rr := range s.runs {
		if rr.Workload == w && rr.Target == t && rr.Err == "" {
			n++
		}
	}
	return n
}

func (s *suite) table() {
	desc := map[string]string{
		"w1": "1 partition, 100 B records, acks=1, RF=1, 1 broker",
		"w2": "12 partitions, 1 KiB records, acks=all (idempotent), RF=3, 3 brokers",
		"w3": "consume w2's topic from the start (topped up to a fixed volume), 3 brokers",
		"w4": "e2e at 5,000 records/s, 12 partitions, 1 KiB, acks=all (idempotent), RF=3, 3 brokers, linger 0",
	}
	fmt.Fprintf(s.out, "\n## Results (medians of %d runs)\n\n", s.cfg.Reps)
	cols := append([]string{"workload", "metric"}, targetNames(s.cfg.Targets)...)
	has := func(k targetKind) bool { return slices.Contains(s.cfg.Targets, k) }
	if has(kindKbroker) && has(kindKfake) {
		cols = append(cols, "kbroker/kfake")
	}
	if has(kindKbroker) && has(kindNull) {
		cols = append(cols, "kbroker/null")
	}
	if has(kindKbroker) && has(kindKbrokerB) {
		cols = append(cols, "kbroker/kbroker-b")
	}
	if has(kindKbroker) && has(kindNullRF) {
		cols = append(cols, "kbroker/null-rf")
	}
	fmt.Fprintf(s.out, "| %s |\n|%s\n", strings.Join(cols, " | "), strings.Repeat("---|", len(cols)))
	for _, w := range []string{"w1", "w2", "w3", "w4"} {
		if !s.ran(w) {
			continue
		}
		for i, m := range wMetrics[w] {
			label := ""
			if i == 0 {
				label = fmt.Sprintf("**%s** %s", w, desc[w])
			}
			row := []string{label, m.name}
			vals := map[targetKind]float64{}
			for _, t := range s.cfg.Targets {
				v, ok := s.median(w, t, m)
				if !ok {
					if s.attempted(w, t) {
						row = append(row, "failed")
					} else {
						row = append(row, "-")
					}
					continue
				}
				vals[t] = v
				cell := m.format(v)
				if n := s.okRuns(w, t); n < s.cfg.Reps {
					cell += fmt.Sprintf(" (%d/%d runs)", n, s.cfg.Reps)
				}
				row = append(row, cell)
			}
			for _, other := range []targetKind{kindKfake, kindNull, kindKbrokerB, kindNullRF} {
				if has(kindKbroker) && has(other) {
					row = append(row, ratio(vals, kindKbroker, other))
				}
			}
			fmt.Fprintf(s.out, "| %s |\n", strings.Join(row, " | "))
		}
	}
	s.failures()
}

// attempted says whether t ran w at all (null-rf runs only w2).
func (s *suite) attempted(w string, t targetKind) bool {
	return slices.ContainsFunc(s.runs, func(rr runRecord) bool { return rr.Workload == w && rr.Target == t })
}

func (s *suite) ran(w string) bool {
	return slices.ContainsFunc(s.runs, func(rr runRecord) bool { return rr.Workload == w })
}

func (s *suite) failures() {
	first := true
	for _, rr := range s.runs {
		if rr.Err == "" && rr.Result.Errors == 0 {
			continue
		}
		if first {
			fmt.Fprintf(s.out, "\nFailed runs or runs with client errors:\n\n")
			first = false
		}
		msg := rr.Err
		if msg == "" {
			msg = fmt.Sprintf("%d client errors, first: %s", rr.Result.Errors, rr.Result.FirstError)
		}
		fmt.Fprintf(s.out, "- %s %s rep %d: %s\n", rr.Workload, rr.Target, rr.Rep, msg)
	}
}

func ratio(vals map[targetKind]float64, a, b targetKind) string {
	va, oka := vals[a]
	vb, okb := vals[b]
	if !oka || !okb || vb == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx", va/vb)
}

func targetNames(ts []targetKind) []string {
	var out []string
	for _, t := range ts {
		out = append(out, string(t))
	}
	return out
}

// targets checks issue 8's targets that the table can decide.
func (s *suite) targets() {
	fmt.Fprintf(s.out, "\n## Issue 8 targets\n\n")
	check := func(name string, w string, m metric, other targetKind, factor float64, atLeast bool) {
		k, ok1 := s.median(w, kindKbroker, m)
		o, ok2 := s.median(w, other, m)
		if !ok1 || !ok2 {
			fmt.Fprintf(s.out, "- %s: not measured\n", name)
			return
		}
		limit := o * factor
		met := k <= limit
		cmp := "<="
		if atLeast {
			met, cmp = k >= limit, ">="
		}
		verdict := "MISSED"
		if met {
			verdict = "met"
		}
		fmt.Fprintf(s.out, "- %s: kbroker %s vs %s %.2fx %s = %s: %s (%.2fx)\n", name, m.format(k), cmp,
			factor, other, m.format(limit), verdict, k/o)
	}
	check("w1 records/s >= 0.95x null", "w1", mRecs, kindNull, 0.95, true)
	check("w1 broker CPU per MB <= 1.2x null", "w1", mCPU, kindNull, 1.2, false)
	check("w2 MB/s >= kfake (3 brokers)", "w2", mMB, kindKfake, 1, true)
	check("w2 brokers' CPU per MB <= 3x null", "w2", mCPU, kindNull, 3, false)
	s.replicationFloor()
	check("w3 MB/s >= 1.5x kfake", "w3", mMB, kindKfake, 1.5, true)
	check("w4 e2e p99 <= kfake", "w4", mE2E99, kindKfake, 1, false)
	var worst, worstAnon int64
	for _, rr := range s.runs {
		if rr.Workload == "w2" && rr.Target == kindKbroker && rr.Err == "" {
			worst = max(worst, rr.Result.Usage.MaxHWM)
			worstAnon = max(worstAnon, rr.Result.Usage.MaxAnon)
		}
	}
	if worst > 0 {
		verdict := "MISSED"
		if worst < 300<<20 {
			verdict = "met"
		}
		anonVerdict := "MISSED"
		if worstAnon < 300<<20 {
			anonVerdict = "met"
		}
		fmt.Fprintf(s.out, "- w2 each broker's RSS < 300 MiB: largest VmHWM of any broker in any run %s (includes mapped segment pages): %s; "+
			"largest RssAnon (page cache aside) %s: %s\n", fmtBytes(worst), verdict, fmtBytes(worstAnon), anonVerdict)
	}
}

// replicationFloor puts w2's CPU per MB beside null-rf's, the null broker
// writing every batch once per replica: what three page-cache copies of each
// byte cost on this machine with no protocol, network or validation work.
// Context for the 3x-null target, not a target itself.
func (s *suite) replicationFloor() {
	k, ok1 := s.median("w2", kindKbroker, mCPU)
	n, ok2 := s.median("w2", kindNull, mCPU)
	f, ok3 := s.median("w2", kindNullRF, mCPU)
	if !ok1 || !ok2 || !ok3 || n == 0 || f == 0 {
		return
	}
	fmt.Fprintf(s.out, "  - context: null-rf (the null broker writing each batch once per replica, nothing else) "+
		"costs %s ms/MB = %.2fx null; kbroker costs %.2fx null-rf\n", num1(f), f/n, k/f)
}

// pageReporting describes the guest's free page reporting, which decides
// what page-cache writes cost on a VM (BENCHMARKS.md, "Why w2's CPU per MB
// misses"): with it on, memory freed a few seconds ago is handed back to the
// host and each new page costs a host fault when touched again.
func pageReporting() string {
	b, err := os.ReadFile("/sys/module/page_reporting/parameters/page_reporting_order")
	if err != nil {
		return "free page reporting: not present (no page_reporting module parameters)"
	}
	order, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return "free page reporting: unreadable order " + strings.TrimSpace(string(b))
	}
	// Blocks above the buddy allocator's largest order (10) never exist, so
	// an order above it reports nothing.
	if order > 10 {
		return fmt.Sprintf("free page reporting: off (page_reporting_order=%d): freed memory stays with this VM", order)
	}
	return fmt.Sprintf("free page reporting: on (page_reporting_order=%d): freed memory goes back to the host, new page-cache pages cost a host fault", order)
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

func cpuModel() string {
	b, _ := os.ReadFile("/proc/cpuinfo")
	for line := range strings.SplitSeq(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}

func memTotal() string {
	b, _ := os.ReadFile("/proc/meminfo")
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			return fmt.Sprintf("%.0f GiB RAM", float64(parseKB(v))/(1<<30))
		}
	}
	return "? RAM"
}

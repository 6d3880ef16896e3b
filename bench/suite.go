package main

// The suite: kbroker against kfake, the null broker and null-rf, every
// target under the same rules (BENCHMARKS.md, "Rules for every target"):
//
//   - each workload produces a fixed number of records per repetition (the
//     cap), timed from the first of them to the last ack, after a warm-up
//     of a fixed number of records that is not counted;
//   - each target's cluster is started once per stage (1 broker for w1, 3
//     for the rest) and kept: its topic is created fresh for every
//     repetition and deleted after it, and the next repetition waits until
//     no broker lists it and no file of it is left;
//   - each group of workloads first runs WarmupReps unmeasured repetitions
//     on every target, then Reps measured ones, the targets alternated and
//     their order rotated by one each repetition;
//   - every target gets the same franz-go client settings (load.go);
//   - tables show medians, ratios are of medians.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

type suiteConfig struct {
	Kbroker    string           // bin/kbroker
	KbrokerB   string           // a second build, target kbroker-b (optional)
	PprofBin   string           // the pprofbroker build ("" = no profiles)
	Out        string           // results directory
	Reps       int              // measured repetitions of each target
	WarmupReps int              // unmeasured repetitions of each group on each target, first
	Caps       map[string]int64 // records per repetition, by produce workload
	Timeout    time.Duration    // of each run
	Targets    []targetKind
	Workloads  []string // w1, w2, w3 (reads w2's topic), w2-acks1, w4, restart, fetch-sessions, partitions and scale.go's
	// FetchSessionRecords fill the fetch-sessions topic (fetchsessions.go).
	FetchSessionRecords int64
	Segments            int    // segments for the restart measure
	Note                string // printed in the report's header (the build, say)
	WarmMemory          bool   // touch the available memory once first (warm.go)
	// ScramConns SCRAM connections set up, ScramConcurrency at a time
	// (scram-conns, secure.go).
	ScramConns, ScramConcurrency int
	Scale                        scaleConfig
}

// defaultCaps are the records per repetition: about 0.5 GB of values for
// w1 and 1 GB for w2 (the independent harness's 1,000,000), ten seconds
// at 5,000 records/s for w4.
// The connections runs and the consumers' topic have w2's volume.
var defaultCaps = map[string]int64{"w1": 5_000_000, "w2": 1_000_000, "w2-acks1": 1_000_000, "w2-durable": 1_000_000, "w2-txn": 1_000_000, "w4": 50_000,
	"conn-one": 1_000_000, "conn-idle": 1_000_000, "conn-many": 1_000_000, "cg-fill": 1_000_000,
	"qs-fill1": 300_000, "qs-fill4": 300_000}

// capFollows are the caps that follow another's unless given, so that the
// runs compared with each other have equal volumes.
var capFollows = map[string]string{"w2-acks1": "w2", "w2-durable": "w2", "w2-txn": "w2", "conn-idle": "conn-one", "conn-many": "conn-one", "qs-fill4": "qs-fill1"}

// parseCaps reads "w1=N,w2=N,..." over the defaults; a cap of capFollows
// follows its leader's unless given.
func parseCaps(s string) (map[string]int64, error) {
	caps := map[string]int64{}
	for k, v := range defaultCaps {
		caps[k] = v
	}
	given := map[string]bool{}
	for _, kv := range strings.Split(s, ",") {
		if kv = strings.TrimSpace(kv); kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		n, err := strconv.ParseInt(v, 10, 64)
		if _, known := defaultCaps[k]; !ok || !known || err != nil || n <= 0 {
			return nil, fmt.Errorf("--records: %q: want WORKLOAD=N with N > 0, WORKLOAD one of %s", kv,
				strings.Join(slices.Sorted(maps.Keys(defaultCaps)), ", "))
		}
		caps[k], given[k] = n, true
	}
	for f, leader := range capFollows {
		if given[leader] && !given[f] {
			caps[f] = caps[leader]
		}
	}
	return caps, nil
}

// warmRecords is the warm-up of a run of cap records at rate records/s (0:
// unpaced): 1% of the cap, at least 1,000 records (every partition led and
// written, connections and producer id set) and, for a paced run, at least
// two seconds of it: kbroker's acks=all latency on a topic created moments
// before settles within them (w4's p99 was 7-12 ms after a 0.2 s warm-up,
// 3.1-3.3 ms after 2 s).
func warmRecords(cap int64, rate float64) int64 {
	return max(1000, cap/100, int64(2*rate))
}

// workload is one load of the suite.
type workload struct {
	name    string
	brokers int
	reads   string // a consumer: the produce workload whose topic it reads
	load    loadConfig
	desc    string // the report's description (else wDesc's)
}

func workloads(caps map[string]int64, timeout time.Duration, sc scaleConfig) map[string]workload {
	w2 := loadConfig{Topic: "w2", Partitions: 12, RF: 3, RecordBytes: 1024, Acks: "all", Idempotent: true,
		Linger: 10 * time.Millisecond, Mode: "produce"}
	acks1 := w2
	acks1.Topic, acks1.Acks, acks1.Idempotent = "w2-acks1", "1", false
	txn := w2 // issue 14: w2 in transactions committed every 100 ms
	txn.Topic, txn.CommitEvery = "w2-txn", 100*time.Millisecond
	durable := w2
	durable.Topic, durable.TopicConfigs = "w2-durable", map[string]*string{"flush.messages": ptr("1")}
	w4 := w2
	w4.Topic, w4.Rate, w4.Linger, w4.Mode = "w4", 5000, 0, "e2e"
	ws := map[string]workload{
		"w1": {name: "w1", brokers: 1, load: loadConfig{Topic: "w1", Partitions: 1, RF: 1, RecordBytes: 100, Acks: "1",
			Linger: 10 * time.Millisecond, Mode: "produce"}},
		"w2":         {name: "w2", brokers: 3, load: w2},
		"w3":         {name: "w3", brokers: 3, reads: "w2", load: loadConfig{Topic: "w2", Mode: "consume"}},
		"w2-acks1":   {name: "w2-acks1", brokers: 3, load: acks1},
		"w2-durable": {name: "w2-durable", brokers: 3, load: durable},
		"w2-txn":     {name: "w2-txn", brokers: 3, load: txn},
		"w3-txn":     {name: "w3-txn", brokers: 3, reads: "w2-txn", load: loadConfig{Topic: "w2-txn", Mode: "consume-to-end"}},
		"w3-rc":      {name: "w3-rc", brokers: 3, reads: "w2-txn", load: loadConfig{Topic: "w2-txn", Mode: "consume-to-end", ReadCommitted: true}},
		"w4":         {name: "w4", brokers: 3, load: w4},
	}
	maps.Copy(ws, scaleWorkloads(sc))
	maps.Copy(ws, queueWorkloads())
	for name, w := range ws {
		w.load.Producers, w.load.Timeout = max(w.load.Producers, 1), timeout
		if w.reads == "" {
			w.load.Records = caps[name]
			w.load.WarmRecords = warmRecords(caps[name], w.load.Rate)
		}
		ws[name] = w
	}
	return ws
}

// groups are the workloads run back to back on one target in one
// repetition: w3 reads w2's topic before it is deleted, and w2-acks1 follows
// so that kbroker's acks=all and acks=1 runs are minutes apart at most, and
// w2-durable (durable acks) after them.
// Groups of one stage share the stage's clusters.
var groups = [][]string{{"w1"}, {"w2", "w3", "w2-acks1", "w2-durable", "w2-txn", "w3-txn", "w3-rc"}, {"w4"}, {"qs-fill1", "qs-share", "qs-share-2000", "qs-fill4", "qs-classic"},
	{"conn-one", "conn-idle", "conn-many"}, {"cg-fill", "cg-one", "cg-many"}}

// rotation is the order of the targets in repetition rep (1-based; the
// warm-up repetitions, rep <= 0, use the given order): rotated by one each
// repetition, so that no target always follows the same one. On this VM the
// memory the previous run freed decides much of what the next one pays.
func rotation(targets []targetKind, rep int) []targetKind {
	n := len(targets)
	if n == 0 || rep <= 1 {
		return slices.Clone(targets)
	}
	k := (rep - 1) % n
	return append(slices.Clone(targets[k:]), targets[:k]...)
}

// runsWorkload says whether target t runs workload w: null-rf runs only w2,
// where its replica writes tell it from null; the null broker has no
// consumer groups and is no peer for holding partitions.
func runsWorkload(t targetKind, w string) bool {
	switch {
	case w == "w2-durable":
		return t == kindKbroker || t == kindKbrokerB // flush.messages=1 means nothing to the others
	case t == kindNullRF, t == kindKbrokerSASLSSL:
		return w == "w2"
	case t == kindNull:
		return w != "partitions" && !strings.HasPrefix(w, "cg-") && !strings.HasPrefix(w, "qs-") && w != "w2-txn" && w != "w3-txn" && w != "w3-rc"
	}
	return true
}

// runRecord is one measured run, as written to results.json.
type runRecord struct {
	Workload string
	Target   targetKind
	Rep      int
	Position int    // 1-based place of the target in its repetition's rotation
	LoadAvg  string // of the machine when the run started
	Result   loadResult
	// Bystanders is the CPU the other targets' clusters, idle and kept
	// for their next repetition, used during the run, which took Wall
	// (topic creation and warm-up included).
	Bystanders time.Duration
	Wall       time.Duration
	// IdleKept is what the idle connections cost the kept cluster they
	// ran beside (conn-idle): less than on a fresh one (Result.Idle), as
	// a broker reuses memory that earlier runs freed.
	IdleKept idleCost `json:",omitempty"`
	Err      string   `json:",omitempty"`
}

type suite struct {
	cfg      suiteConfig
	ws       map[string]workload
	runs     []runRecord
	partRuns []partitionRun                                     // the partitions workload's measured repetitions
	walls    []stepWall                                         // how long each group of workloads took
	out      io.Writer                                          // the report (stdout and report.md)
	start    func(context.Context, startOpts) (*cluster, error) // startCluster; tests start in-process targets
	logf     func(format string, args ...any)                   // progress lines
	bins     func(t targetKind) string                          // the binary of a kbroker target
	after    func(rr runRecord, c *cluster)                     // tests: runs after each run, warm-ups too
}

func newSuite(cfg suiteConfig, out io.Writer) *suite {
	s := &suite{cfg: cfg, ws: workloads(cfg.Caps, cfg.Timeout, cfg.Scale), out: out, start: startCluster, logf: log.Printf}
	s.bins = func(t targetKind) string {
		if t == kindKbrokerB {
			return cfg.KbrokerB
		}
		return cfg.Kbroker
	}
	return s
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
	s := newSuite(cfg, io.MultiWriter(os.Stdout, report))
	s.header()
	if cfg.WarmMemory {
		if err := warmMemory(func(format string, args ...any) { fmt.Fprintf(s.out, "- "+format+"\n", args...) }); err != nil {
			return err
		}
	}
	if err := s.measure(ctx); err != nil {
		return err
	}
	s.report()
	if err := s.writeJSON(); err != nil {
		return err
	}
	s.extras(ctx)
	fmt.Fprintf(s.out, "\nload average after: %s\n", loadAvg())
	return nil
}

// extras are the kbroker-only measures after the comparison: the restart
// with many segments and the profiles.
func (s *suite) extras(ctx context.Context) {
	if s.enabled("restart") && slices.Contains(s.cfg.Targets, kindKbroker) {
		if err := s.restart(ctx); err != nil {
			fmt.Fprintf(s.out, "\nrestart measure failed: %v\n", err)
		}
	}
	if s.enabled("fetch-sessions") && slices.Contains(s.cfg.Targets, kindKbroker) {
		if err := s.fetchSessions(ctx); err != nil {
			fmt.Fprintf(s.out, "\nfetch-sessions measure failed: %v\n", err)
		}
	}
	if s.enabled("scram-conns") && s.cfg.ScramConns > 0 {
		if err := s.scramConnections(ctx); err != nil {
			fmt.Fprintf(s.out, "\nSCRAM connection measure failed: %v\n", err)
		}
	}
	if s.cfg.PprofBin == "" {
		return
	}
	for _, w := range profiledWorkloads {
		if s.enabled(w) && (s.ws[w].reads == "" || s.enabled(s.ws[w].reads)) {
			if err := s.profile(ctx, w); err != nil {
				fmt.Fprintf(s.out, "\nprofile of %s failed: %v\n", w, err)
			}
		}
	}
}

// profiledWorkloads are the workloads profiled with --pprof-bin: w4 for
// the small-request path (issue 20), where kbroker spends the most CPU per
// byte.
var profiledWorkloads = []string{"w1", "w2", "w4", "qs-share"}

func (s *suite) enabled(w string) bool { return slices.Contains(s.cfg.Workloads, w) }

// stageGroups are the enabled parts of the groups, by broker count in order
// of first appearance (1 broker, then 3).
func (s *suite) stageGroups() [][][]string {
	var stages [][][]string
	var sizes []int
	for _, g := range groups {
		var part []string
		for _, w := range g {
			if s.enabled(w) && (s.ws[w].reads == "" || s.enabled(s.ws[w].reads)) {
				part = append(part, w)
			}
		}
		if len(part) == 0 {
			continue
		}
		n := s.ws[part[0]].brokers
		i := slices.Index(sizes, n)
		if i < 0 {
			i = len(sizes)
			sizes, stages = append(sizes, n), append(stages, nil)
		}
		stages[i] = append(stages[i], part)
	}
	return stages
}

// measure runs every stage (the stage's clusters are started, its groups
// run, and the clusters are stopped), then the partitions workload.
func (s *suite) measure(ctx context.Context) error {
	for _, stage := range s.stageGroups() {
		if err := s.runStage(ctx, stage); err != nil {
			return err
		}
	}
	if s.enabled("partitions") {
		start := time.Now()
		err := s.partitions(ctx)
		s.walls = append(s.walls, stepWall{"partitions " + joinInts(s.cfg.Scale.PartitionCounts), time.Since(start)})
		return err
	}
	return nil
}

// stepWall is how long a group of workloads took, warm-ups included.
type stepWall struct {
	What string
	Wall time.Duration
}

func joinInts(ns []int) string {
	var out []string
	for _, n := range ns {
		out = append(out, strconv.Itoa(n))
	}
	return strings.Join(out, ", ")
}

// stage is the clusters of one stage, one per target, and why a target
// cannot run (its cluster did not start, or a topic of it was not deleted).
type stage struct {
	clusters map[targetKind]*cluster
	failed   map[targetKind]string
}

func (s *suite) runStage(ctx context.Context, gs [][]string) error {
	brokers := s.ws[gs[0][0]].brokers
	st := &stage{clusters: map[targetKind]*cluster{}, failed: map[targetKind]string{}}
	defer func() {
		for _, c := range st.clusters {
			c.stop()
			os.RemoveAll(c.dir)
		}
	}()
	for _, t := range s.cfg.Targets {
		if !slices.ContainsFunc(slices.Concat(gs...), func(w string) bool { return runsWorkload(t, w) }) {
			continue // null-rf in w1's stage
		}
		dir := filepath.Join(s.cfg.Out, "runs", fmt.Sprintf("%s-%dbrokers", t, brokers))
		os.RemoveAll(dir)
		c, err := s.start(ctx, startOpts{kind: t, brokers: brokers, dir: dir, kbroker: s.bins(t)})
		if err != nil {
			st.failed[t] = "starting the cluster: " + err.Error()
			continue
		}
		st.clusters[t] = c
	}
	for _, g := range gs {
		start := time.Now()
		for rep := 1 - s.cfg.WarmupReps; rep <= s.cfg.Reps; rep++ {
			for pos, t := range rotation(s.cfg.Targets, rep) {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				s.runGroup(ctx, st, g, t, rep, pos+1)
			}
		}
		s.walls = append(s.walls, stepWall{strings.Join(g, ", "), time.Since(start)})
	}
	return nil
}

// runGroup runs the group's workloads of target t in order on its cluster:
// each produce workload on a topic created fresh, the consumers that read
// it next, then the topic deleted. Repetitions rep <= 0 are the warm-up:
// run the same way, not recorded.
func (s *suite) runGroup(ctx context.Context, st *stage, g []string, t targetKind, rep, pos int) {
	steps := slices.DeleteFunc(slices.Clone(g), func(w string) bool { return !runsWorkload(t, w) })
	prevErr := ""
	for i, name := range steps {
		w := s.ws[name]
		rr := runRecord{Workload: name, Target: t, Rep: rep, Position: pos, Err: st.failed[t]}
		if w.reads != "" && prevErr != "" && rr.Err == "" {
			rr.Err = w.reads + " failed before it"
		}
		if rr.Err == "" {
			rr = s.runOne(ctx, st, name, rr)
		}
		readNext := i+1 < len(steps) && s.ws[steps[i+1]].reads == s.producerOf(name)
		if c := st.clusters[t]; c != nil && st.failed[t] == "" && !readNext {
			if err := deleteTopic(ctx, c.addrs, w.load.Topic, c.dataLeft); err != nil {
				// The rule is broken for every later run of t: say so there.
				st.failed[t] = fmt.Sprintf("the topic of %s %s was not deleted: %v", name, repName(rep, s.cfg.WarmupReps), err)
				if rr.Err == "" {
					rr.Err = st.failed[t]
				}
			}
		}
		if w.reads == "" {
			prevErr = rr.Err
		}
		s.record(rr, st.clusters[t])
	}
}

// producerOf is the produce workload whose topic w writes or reads.
func (s *suite) producerOf(w string) string {
	if r := s.ws[w].reads; r != "" {
		return r
	}
	return w
}

// runOne runs workload name on the target's cluster, measuring its
// brokers and, as bystanders, the other clusters of the stage.
func (s *suite) runOne(ctx context.Context, st *stage, name string, rr runRecord) runRecord {
	c := st.clusters[rr.Target]
	lc := s.ws[name].load
	lc.Brokers, lc.Pids = c.addrs, c.pids()
	if c.loadAddrs != nil { // a secured target: the load on its SASL_SSL listener
		lc.Brokers, lc.ClientOpts = c.loadAddrs, c.loadOpts
	}
	var others []int
	for t, o := range st.clusters {
		if t != rr.Target {
			others = append(others, o.pids()...)
		}
	}
	var fresh idleCost
	if lc.IdleConns > 0 {
		var err error
		if fresh, err = s.freshIdleCost(ctx, rr.Target, s.ws[name].brokers, lc.IdleConns); err != nil {
			rr.Err = "idle connections on a fresh cluster: " + err.Error()
			return rr
		}
	}
	bystanders := watchProcs(others)
	rr.LoadAvg = loadAvg()
	var syncsAtStart syncCounts
	var syncsErr error
	if len(c.metrics) > 0 {
		onTimed := lc.onTimed
		lc.onTimed = func() {
			syncsAtStart, syncsErr = scrapeSyncs(ctx, c.metrics)
			if onTimed != nil {
				onTimed()
			}
		}
	}
	start := time.Now()
	res, err := runLoad(ctx, lc)
	if len(c.metrics) > 0 && err == nil && syncsErr == nil {
		var end syncCounts
		if end, syncsErr = scrapeSyncs(ctx, c.metrics); syncsErr == nil {
			res.Syncs = end.minus(syncsAtStart)
			if len(res.Syncs.Events) > 0 {
				s.logf("%s %s: answered during the timed part: %v", name, rr.Target, res.Syncs.Events)
			}
		}
	}
	if syncsErr != nil {
		s.logf("%s %s: sync counters not read: %v", name, rr.Target, syncsErr)
	}
	rr.Bystanders, rr.Wall = bystanders.finish().CPU, time.Since(start)
	rr.Result = res
	if lc.IdleConns > 0 {
		rr.IdleKept, rr.Result.Idle = res.Idle, fresh
	}
	if err != nil {
		rr.Err = err.Error()
	}
	return rr
}

func repName(rep, warmups int) string {
	if rep <= 0 {
		return fmt.Sprintf("warm-up %d", rep+warmups)
	}
	return fmt.Sprintf("rep %d", rep)
}

func (s *suite) record(rr runRecord, c *cluster) {
	warm := rr.Rep <= 0
	if !warm {
		s.runs = append(s.runs, rr)
	}
	if s.after != nil {
		s.after(rr, c)
	}
	what := repName(rr.Rep, s.cfg.WarmupReps)
	if rr.Err != "" {
		s.logf("%s %-7s %s: FAILED: %s", rr.Workload, rr.Target, what, rr.Err)
		return
	}
	s.logf("%s %-7s %s (load %s): %s", rr.Workload, rr.Target, what, rr.LoadAvg, rr.Result)
}

// writeJSON writes the runs to results.json and the partitions workload's
// repetitions to partitions.json.
func (s *suite) writeJSON() error {
	if err := writeJSONFile(filepath.Join(s.cfg.Out, "results.json"), s.runs); err != nil {
		return err
	}
	if len(s.partRuns) == 0 {
		return nil
	}
	return writeJSONFile(filepath.Join(s.cfg.Out, "partitions.json"), s.partRuns)
}

func writeJSONFile(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

func (s *suite) header() {
	fmt.Fprintf(s.out, "# kbroker benchmark, %s\n\n", time.Now().UTC().Format(time.RFC3339))
	fmt.Fprintf(s.out, "- machine: %d CPUs (%s), %s; load average before: %s\n", runtime.NumCPU(), cpuModel(), memTotal(), loadAvg())
	fmt.Fprintf(s.out, "- targets %v, %d measured repetitions each after %d warm-up repetition(s), alternated, the order rotated by one each repetition\n",
		s.cfg.Targets, s.cfg.Reps, s.cfg.WarmupReps)
	var caps []string
	for _, w := range reportOrder {
		if _, capped := s.cfg.Caps[w]; capped && s.enabled(w) {
			caps = append(caps, fmt.Sprintf("%s %d (warm-up %d)", w, s.cfg.Caps[w], s.ws[w].load.WarmRecords))
		}
	}
	if len(caps) > 0 {
		fmt.Fprintf(s.out, "- records per repetition: %s; w3 reads all of w2's topic, cg-one and cg-many all of cg-fill's; each topic deleted after its repetition and created fresh for the next\n",
			strings.Join(caps, ", "))
	}
	if s.enabled("partitions") {
		sc := s.cfg.Scale
		fmt.Fprintf(s.out, "- partitions: %s partitions in topics of %d, RF %d, %d brokers, a fresh cluster each repetition; idle window %v, %d full Metadata requests, waits end at %v or after %v without progress\n",
			joinInts(sc.PartitionCounts), sc.PerTopic, partitionsRF, partitionsBrokers, sc.Idle, sc.MetadataRequests, sc.ReadyTimeout, sc.Stall)
	}
	fmt.Fprintf(s.out, "- client: franz-go, one producer; linger 10ms (w4: 0), batches up to %d B, %d records buffered, %d produce requests in flight per broker, no compression\n",
		clientBatchMaxBytes, clientMaxBuffered, clientMaxInflight)
	fmt.Fprintf(s.out, "- kbroker binary: %s %s\n", s.cfg.Kbroker, s.cfg.Note)
	fmt.Fprintf(s.out, "- %s\n", pageReporting())
	fmt.Fprintf(s.out, "- command: %s\n\n", strings.Join(os.Args, " "))
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

// ptr returns a pointer to v.
func ptr[T any](v T) *T { return &v }

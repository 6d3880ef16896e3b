package main

// The partitions workload (issue 20, part 3): what holding many partitions
// costs a 3-broker cluster. For each partition count (1,000 and 10,000 by
// default, in topics of 100 partitions, RF=3) and each target, one
// repetition on a fresh cluster:
//
//  1. the empty cluster's memory and descriptors (the baseline);
//  2. CreateTopics for every topic, ten topics a request; the time until
//     every answer is in, and until every broker, asked itself, lists every
//     partition led with RF replicas all in the ISR (kfake does not
//     replicate: its replicas and ISR are metadata, so its figure is its
//     create-to-listed time under its own RF semantics);
//  3. the brokers' CPU over an idle window, no client sending anything;
//  4. their RSS, descriptors against their open-file limit, memory maps;
//  5. N full Metadata requests (every topic), the brokers in turn;
//  6. one acks=all record to every partition, all acked;
//  7. kbroker only: a clean restart (SIGTERM) of one broker that is not the
//     active controller, until every partition it holds lists it in its
//     ISR again.
//
// The cluster is started fresh for each repetition and stopped after it,
// instead of keeping it and deleting the topics (rule 4): the broker's
// memory holding N partitions must not include what an earlier repetition
// left. A step that fails (a deadline, a stall, a broker that exited) ends
// the repetition with what failed, the brokers' descriptors against their
// limit and their logs' "too many open files" lines.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	partitionsRF      = 3
	partitionsBrokers = 3
	topicsPerCreate   = 10 // topics in one CreateTopics request
)

// topicSpec is one topic of a partitions step.
type topicSpec struct {
	name       string
	partitions int
}

// partitionLayout splits total partitions into topics of perTopic (the
// last one smaller when perTopic does not divide total).
func partitionLayout(total, perTopic int) []topicSpec {
	var out []topicSpec
	for i := 0; total > 0; i++ {
		n := min(perTopic, total)
		out = append(out, topicSpec{name: fmt.Sprintf("scale-%03d", i), partitions: n})
		total -= n
	}
	return out
}

func wantOf(specs []topicSpec) map[string]int {
	want := map[string]int{}
	for _, t := range specs {
		want[t.name] = t.partitions
	}
	return want
}

// partitionRun is one repetition of the partitions workload on one target.
type partitionRun struct {
	Target     targetKind
	Partitions int
	Topics     int
	Rep        int
	Position   int
	LoadAvg    string
	Wall       time.Duration

	Baseline []procHold // the brokers before any topic was created
	Create   time.Duration
	Ready    time.Duration

	IdleWindow time.Duration
	IdleCPU    time.Duration // all brokers together over IdleWindow
	Held       []procHold    // the brokers after the idle window

	MetaRequests     int
	MetaP50, MetaP99 time.Duration
	MetaBytes        int // size of one full Metadata response

	ProduceAll time.Duration // one acks=all record to every partition

	Restart *restartRun `json:",omitempty"`

	// EMFILE is, per broker, the lines of its log that say "too many open
	// files" by the end of the repetition (nil: no log, kfake): a broker
	// whose Metadata says ready may still have failed to open partitions.
	EMFILE []int

	// Err is the first step that failed; Diagnosis what the brokers held
	// then (descriptors against the limit, maps, log lines).
	Err       string `json:",omitempty"`
	Diagnosis string `json:",omitempty"`
}

// restartRun is the restart step.
type restartRun struct {
	Node     int32
	Stop     time.Duration // SIGTERM to exit
	Serving  time.Duration // exec to the broker answering Metadata
	InSync   time.Duration // exec to every partition it holds listing it in the ISR
	Replicas int           // partitions it holds
}

// IdleCPUPercent is the brokers' idle CPU as a share of one core.
func (r partitionRun) IdleCPUPercent() float64 {
	if r.IdleWindow <= 0 {
		return 0
	}
	return r.IdleCPU.Seconds() / r.IdleWindow.Seconds() * 100
}

// partitions runs the partitions workload: each count in turn, its warm-up
// and measured repetitions, the targets rotated as in every group.
func (s *suite) partitions(ctx context.Context) error {
	targets := slices.DeleteFunc(slices.Clone(s.cfg.Targets), func(t targetKind) bool { return !runsWorkload(t, "partitions") })
	for _, n := range s.cfg.Scale.PartitionCounts {
		for rep := 1 - s.cfg.WarmupReps; rep <= s.cfg.Reps; rep++ {
			for pos, t := range rotation(targets, rep) {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				pr := s.partitionRepetition(ctx, t, n, rep, pos+1)
				s.recordPartitions(pr)
			}
		}
	}
	return nil
}

func (s *suite) recordPartitions(pr partitionRun) {
	what := repName(pr.Rep, s.cfg.WarmupReps)
	if pr.Rep > 0 {
		s.partRuns = append(s.partRuns, pr)
	}
	if pr.Err != "" {
		s.logf("partitions %d %-7s %s: FAILED: %s; %s", pr.Partitions, pr.Target, what, pr.Err, pr.Diagnosis)
		return
	}
	s.logf("partitions %d %-7s %s (load %s): %s", pr.Partitions, pr.Target, what, pr.LoadAvg, pr.summary())
}

func (pr partitionRun) summary() string {
	s := fmt.Sprintf("created in %s, ready in %s; idle CPU %.1f%% of a core; metadata p50 %s p99 %s (%d KiB); "+
		"one record to every partition %s; largest broker RSS %s, %d fds",
		fmtDur(pr.Create), fmtDur(pr.Ready), pr.IdleCPUPercent(), fmtDur(pr.MetaP50), fmtDur(pr.MetaP99), pr.MetaBytes>>10,
		fmtDur(pr.ProduceAll), fmtBytes(maxHold(pr.Held, func(h procHold) int64 { return h.RSS })),
		maxHold(pr.Held, func(h procHold) int64 { return int64(h.FDs) }))
	if r := pr.Restart; r != nil {
		s += fmt.Sprintf("; restart of node %d: stop %s, serving %s, back in the ISR of its %d partitions %s",
			r.Node, fmtDur(r.Stop), fmtDur(r.Serving), r.Replicas, fmtDur(r.InSync))
	}
	return s
}

func maxHold(hs []procHold, f func(procHold) int64) int64 {
	var m int64
	for _, h := range hs {
		m = max(m, f(h))
	}
	return m
}

// partitionRepetition is one repetition on a fresh cluster of target t.
func (s *suite) partitionRepetition(ctx context.Context, t targetKind, n, rep, pos int) partitionRun {
	specs := partitionLayout(n, s.cfg.Scale.PerTopic)
	pr := partitionRun{Target: t, Partitions: n, Topics: len(specs), Rep: rep, Position: pos, LoadAvg: loadAvg()}
	start := time.Now()
	dir := filepath.Join(s.cfg.Out, "runs", fmt.Sprintf("partitions-%s-%d", t, n))
	os.RemoveAll(dir)
	c, err := s.start(ctx, startOpts{kind: t, brokers: partitionsBrokers, dir: dir, kbroker: s.bins(t)})
	if err != nil {
		pr.Err, pr.Wall = "starting the cluster: "+err.Error(), time.Since(start)
		return pr
	}
	p := newMetaPoller(c.addrs)
	pr.Baseline = readHolds(c.pids())
	err = s.partitionSteps(ctx, c, p, specs, &pr)
	pr.EMFILE = emfileLines(c)
	if err != nil {
		pr.Err = err.Error()
		pr.Diagnosis = diagnose(c) + "; logs and data kept in " + dir
	}
	p.Close()
	c.stop()
	pr.Wall = time.Since(start)
	if err == nil {
		os.RemoveAll(dir)
	}
	return pr
}

// partitionSteps runs steps 2-7, stopping at the first that fails.
func (s *suite) partitionSteps(ctx context.Context, c *cluster, p *metaPoller, specs []topicSpec, pr *partitionRun) error {
	sc := s.cfg.Scale
	want := wantOf(specs)
	t0 := time.Now()
	cctx, cancel := context.WithTimeout(ctx, sc.ReadyTimeout)
	err := createTopics(cctx, c.addrs, specs)
	cancel()
	if err != nil {
		return fmt.Errorf("creating %d topics: %w", len(specs), err)
	}
	pr.Create = time.Since(t0)
	ready, err := waitProgress(ctx, t0, sc.ReadyTimeout, sc.Stall, func() pollResult { return pollReady(ctx, c, p, want) })
	if err != nil {
		return fmt.Errorf("waiting for every partition led with a full ISR: %w", err)
	}
	pr.Ready = ready
	pr.IdleWindow, pr.IdleCPU = sc.Idle, idleCPU(ctx, c.pids(), sc.Idle)
	pr.Held = readHolds(c.pids())
	if err := metadataLatency(ctx, p, sc.MetadataRequests, pr); err != nil {
		return fmt.Errorf("full Metadata: %w", err)
	}
	if pr.ProduceAll, err = produceToEvery(ctx, c.addrs, specs, sc); err != nil {
		return fmt.Errorf("one acks=all record to every partition: %w", err)
	}
	if c.kind != kindKbroker && c.kind != kindKbrokerB {
		return nil
	}
	pr.Restart = &restartRun{}
	return restartOne(ctx, c, p, want, sc, pr.Restart)
}

// createTopics creates specs, up to topicsPerCreate topics of one size a
// request, one request after the other.
func createTopics(ctx context.Context, addrs []string, specs []topicSpec) error {
	adm, cl, err := adminClient(addrs)
	if err != nil {
		return err
	}
	defer cl.Close()
	adm.SetTimeoutMillis(60_000)
	for len(specs) > 0 {
		k := 1
		for k < min(topicsPerCreate, len(specs)) && specs[k].partitions == specs[0].partitions {
			k++
		}
		var names []string
		for _, t := range specs[:k] {
			names = append(names, t.name)
		}
		resp, err := adm.CreateTopics(ctx, int32(specs[0].partitions), partitionsRF, nil, names...)
		if err != nil {
			return err
		}
		for _, r := range resp.Sorted() {
			if r.Err != nil {
				return fmt.Errorf("topic %s: %w %s", r.Topic, r.Err, r.ErrMessage)
			}
		}
		specs = specs[k:]
	}
	return nil
}

// pollReady asks every broker; done when each lists every partition ready.
func pollReady(ctx context.Context, c *cluster, p *metaPoller, want map[string]int) pollResult {
	return pollEvery(ctx, c, p, func(md *kmsg.MetadataResponse) (int, bool, string) {
		n := countReady(md, want, partitionsRF)
		return n.FullISR, n.FullISR == n.Want, n.String()
	})
}

// pollEvery asks every broker for its Metadata and judges each with f
// (its progress, whether it is done, what it says); done when every broker
// is. A broker that has exited makes the poll fatal.
func pollEvery(ctx context.Context, c *cluster, p *metaPoller, f func(*kmsg.MetadataResponse) (int, bool, string)) pollResult {
	var r pollResult
	done := true
	for i := range c.addrs {
		if err := c.exited(i); err != nil {
			r.fatal = err
		}
		md, err := p.metadata(ctx, i)
		if err != nil {
			done = false
			r.detail = append(r.detail, fmt.Sprintf("broker %d: %v", i+1, err))
			continue
		}
		progress, ok, what := f(md)
		r.progress += progress
		done = done && ok
		r.detail = append(r.detail, fmt.Sprintf("broker %d: %s", i+1, what))
	}
	r.done = done && r.fatal == nil
	return r
}

// exited says whether broker process i has exited (nil for a running one
// and for in-process targets).
func (c *cluster) exited(i int) error {
	if i >= len(c.exits) {
		return nil
	}
	select {
	case <-c.exits[i]:
		return fmt.Errorf("broker %d exited (log %s)", i+1, c.dir)
	default:
		return nil
	}
}

// idleCPU is the CPU the processes used over d.
func idleCPU(ctx context.Context, pids []int, d time.Duration) time.Duration {
	w := watchProcs(pids)
	select {
	case <-time.After(d):
	case <-ctx.Done():
	}
	return w.finish().CPU
}

// metadataLatency sends n all-topics Metadata requests, the brokers in
// turn, and records the p50 and p99 of the times from each request's first
// byte to its response's last.
func metadataLatency(ctx context.Context, p *metaPoller, n int, pr *partitionRun) error {
	var ds []time.Duration
	for k := range n {
		t0 := time.Now()
		body, _, err := p.raw(ctx, k%len(p.addrs), 30*time.Second)
		if err != nil {
			return fmt.Errorf("request %d to broker %d: %w", k+1, k%len(p.addrs)+1, err)
		}
		ds = append(ds, time.Since(t0))
		pr.MetaBytes = len(body)
	}
	pr.MetaRequests = n
	pr.MetaP50, pr.MetaP99 = durQuantile(ds, 0.5), durQuantile(ds, 0.99)
	return nil
}

// durQuantile is the nearest-rank q-quantile of ds (0 when empty).
func durQuantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(ds))
	i := int(q*float64(len(s))+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// produceToEvery produces one record to every partition with the suite's
// acks=all producer settings and waits for every answer, failing at the
// deadline or when no answer has come for stall (franz-go retries a
// partition that cannot take the record for as long as it is let).
func produceToEvery(ctx context.Context, addrs []string, specs []topicSpec, sc scaleConfig) (time.Duration, error) {
	opts, err := producerOpts(loadConfig{Brokers: addrs, Acks: "all", Idempotent: true, Linger: 10 * time.Millisecond})
	if err != nil {
		return 0, err
	}
	cl, err := kgo.NewClient(append(opts, kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // before Close: the records still retried fail at once
	ph := &phase{}
	start := time.Now()
	total := 0
	for _, t := range specs {
		for p := range t.partitions {
			sent := time.Now()
			cl.Produce(ctx, &kgo.Record{Topic: t.name, Partition: int32(p), Value: []byte("one")},
				func(_ *kgo.Record, err error) { ph.done(sent, err) })
			total++
		}
	}
	flushed := make(chan error, 1)
	go func() { flushed <- cl.Flush(ctx) }()
	w := newProgressWatch(start, sc.ReadyTimeout, sc.Stall)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-flushed:
			took := time.Since(start)
			if err != nil {
				return 0, err
			}
			return took, ph.err()
		case <-tick.C:
		}
		if why := w.observe(time.Now(), int(ph.acked.Load()+ph.errs.Load())); why != "" {
			cancel()
			<-flushed
			return 0, fmt.Errorf("%s: %d of %d records acked, %d failed", why, ph.acked.Load(), total, ph.errs.Load())
		}
	}
}

// restartOne stops one broker that is not the active controller with
// SIGTERM, starts it again, and waits until every broker lists it in the
// ISR of every partition it holds.
func restartOne(ctx context.Context, c *cluster, p *metaPoller, want map[string]int, sc scaleConfig, rr *restartRun) error {
	i, node, err := restartVictim(ctx, c, p)
	if err != nil {
		return err
	}
	rr.Node = node
	t0 := time.Now()
	c.stopNode(i, syscall.SIGTERM)
	rr.Stop = time.Since(t0)
	p.drop(i)
	t1 := time.Now()
	if err := c.restartNode(i); err != nil {
		return fmt.Errorf("restarting broker %d: %w", node, err)
	}
	serving, err := waitProgress(ctx, t1, sc.ReadyTimeout, sc.Stall, func() pollResult {
		_, err := p.metadata(ctx, i)
		return pollResult{done: err == nil, fatal: c.exited(i), detail: []string{fmt.Sprint(err)}}
	})
	if err != nil {
		return fmt.Errorf("broker %d not answering Metadata after its restart: %w", node, err)
	}
	rr.Serving = serving
	rr.InSync, err = waitProgress(ctx, t1, sc.ReadyTimeout, sc.Stall, func() pollResult {
		return pollInSync(ctx, c, p, want, node, &rr.Replicas)
	})
	if err != nil {
		return fmt.Errorf("broker %d not back in the ISR of its partitions after its restart: %w", node, err)
	}
	return nil
}

// restartVictim picks the highest-numbered broker that is not the active
// controller (a broker's restart, not a controller failover) and returns its
// index in c.addrs and its node id.
func restartVictim(ctx context.Context, c *cluster, p *metaPoller) (int, int32, error) {
	md, err := p.metadata(ctx, 0)
	if err != nil {
		return 0, 0, err
	}
	for i := len(c.addrs) - 1; i >= 0; i-- {
		for _, b := range md.Brokers {
			if fmt.Sprintf("%s:%d", b.Host, b.Port) == c.addrs[i] && b.NodeID != md.ControllerID {
				return i, b.NodeID, nil
			}
		}
	}
	return 0, 0, fmt.Errorf("no broker of %v other than the controller %d in Metadata", c.addrs, md.ControllerID)
}

// pollInSync asks every broker; done when each lists node in the ISR of
// every partition node holds.
func pollInSync(ctx context.Context, c *cluster, p *metaPoller, want map[string]int, node int32, replicas *int) pollResult {
	return pollEvery(ctx, c, p, func(md *kmsg.MetadataResponse) (int, bool, string) {
		in, of := countInSync(md, want, node)
		*replicas = of
		return in, of > 0 && in == of, fmt.Sprintf("node %d in the ISR of %d of its %d partitions", node, in, of)
	})
}

// diagnose says what each broker holds (descriptors against its limit,
// memory maps against vm.max_map_count) and how many lines of its log say
// "too many open files".
func diagnose(c *cluster) string {
	var out []string
	for i, h := range readHolds(c.pids()) {
		out = append(out, fmt.Sprintf("broker %d %s", i+1, h))
	}
	for i, n := range emfileLines(c) {
		out = append(out, fmt.Sprintf("node-%d.log: %d lines say \"too many open files\"", i+1, n))
	}
	out = append(out, fmt.Sprintf("vm.max_map_count %d", maxMapCount()))
	return strings.Join(out, "; ")
}

// emfileLines counts, per broker, the lines of its log that say "too many
// open files"; nil when the target writes no broker logs (kfake).
func emfileLines(c *cluster) []int {
	var out []int
	for i := range c.pids() {
		n, err := countLogLines(filepath.Join(c.dir, fmt.Sprintf("node-%d.log", i+1)), "too many open files")
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		out = append(out, n) // unreadable otherwise: counted as 0
	}
	return out
}

// countLogLines counts the lines of path that contain substr (any case).
func countLogLines(path, substr string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	n := 0
	for line := range strings.SplitSeq(strings.ToLower(string(b)), "\n") {
		if strings.Contains(line, substr) {
			n++
		}
	}
	return n, nil
}

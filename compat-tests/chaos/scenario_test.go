package chaos

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// scenario is one run: a cluster, a workload, nemeses, a check.
type scenario struct {
	name    string
	nemeses []string
	brokers int // default 3
	// separateController: the quorum on a controller-only node.
	separateController bool
	// netns: needs network namespaces (partitions, slow links); skipped
	// where they cannot be made. Other scenarios use them when the suite
	// runs in full mode and they work, loopback otherwise.
	netns   bool
	acks1   bool
	unclean bool
	// share adds a share group reading the topic (issue 16), checked by
	// CheckShare.
	share  bool
	minISR int // default 2
	// powercut: the brokers journal their syncs for the power-loss
	// nemeses; durable: the topic has flush.messages=1 (durable acks).
	powercut, durable bool
	policy            Policy
	// txn runs the transactional workload (txn_workload_test.go) and
	// CheckTxn instead of the idempotent producers and Check.
	txn bool
	// duration of the nemesis schedule (default 30 s, -chaos.duration).
	duration time.Duration
}

const (
	chaosPartitions = 4
	chaosRF         = 3
)

// The scenarios of make chaos.
var fullScenarios = []scenario{
	{name: "leader-kill", nemeses: []string{"kill-leader", "lagging-leader-kill"}},
	{name: "random-pause", nemeses: []string{"pause-short", "pause-long"}},
	{name: "leader-partition", nemeses: []string{"partition-leader"}, netns: true},
	{name: "majority-split", nemeses: []string{"partition-split"}, netns: true, brokers: 5},
	{name: "rolling-restart", nemeses: []string{"rolling-restart"}},
	{name: "all-restart", nemeses: []string{"restart-all"}},
	{name: "slow-follower", nemeses: []string{"slow-follower"}, netns: true},
	{name: "controller-kill", nemeses: []string{"kill-controller"}},
	// A share group under broker kills and pauses: every produced record
	// accepted, none twice, redelivered only if not acknowledged before a
	// fault.
	{name: "share-group", nemeses: []string{"kill-leader", "kill-random", "pause-short"}, share: true},
	{name: "mixed", nemeses: []string{"kill-random", "pause-short", "pause-long", "kill-controller"}, separateController: true},
	{name: "stale-election-clean", nemeses: []string{"stale-election"}, separateController: true},
	// Power losses (issue 19): one broker at a time, each back in every ISR
	// before the next (KIP-966 keeps a replica that lost its unflushed
	// tail from leading); every broker at once with durable acks.
	{name: "power-loss", nemeses: []string{"power-loss"}, powercut: true},
	{name: "power-loss-all-durable", nemeses: []string{"power-loss-all"}, powercut: true, durable: true},
	// Configurations outside Kafka's promise: losses are figures, not failures.
	{name: "acks1-lagging-leader-kill", nemeses: []string{"lagging-leader-kill"}, acks1: true, minISR: 1,
		policy: Policy{AllowLoss: true, AllowDup: true, AllowReorder: true}},
	{name: "stale-election-unclean", nemeses: []string{"stale-election"}, separateController: true, unclean: true, minISR: 1,
		policy: Policy{AllowLoss: true, AllowVanish: true, AllowDup: true, AllowReorder: true}},
	// Kafka's default flush policy: every broker losing power at once
	// loses what was only in page caches.
	{name: "power-loss-all-default", nemeses: []string{"power-loss-all"}, powercut: true,
		policy: Policy{AllowLoss: true, AllowVanish: true, AllowDup: true, AllowReorder: true}},
}

// TestScenarios runs every scenario (make chaos).
func TestScenarios(t *testing.T) {
	needMode(t, "full")
	for _, sc := range fullScenarios {
		t.Run(sc.name, func(t *testing.T) { runScenario(t, sc) })
	}
}

// TestTxnScenarios runs the transactional workload under the nemeses of
// every scenario inside Kafka's promise (make chaos), the power losses of
// one broker and of all with durable acks included: no aborted record read
// committed, no committed record lost or duplicated, transactions all or
// nothing, watermarks never back (issue 14). The share group scenario is
// the idempotent workload's.
func TestTxnScenarios(t *testing.T) {
	needMode(t, "full")
	for _, sc := range fullScenarios {
		if sc.acks1 || sc.unclean || sc.share || sc.policy.AllowLoss {
			continue
		}
		sc.name, sc.txn = "txn-"+sc.name, true
		t.Run(sc.name, func(t *testing.T) { runScenario(t, sc) })
	}
}

// TestShortRun is the run inside make test: two nemeses, leader kills
// and random pauses, on loopback, well under two minutes.
func TestShortRun(t *testing.T) {
	needMode(t, "short")
	runScenario(t, scenario{name: "short", nemeses: []string{"kill-leader", "pause-short", "pause-long"}, duration: 30 * time.Second})
}

func runScenario(t *testing.T, sc scenario) {
	sc.brokers = cmpOr(sc.brokers, 3)
	sc.minISR = cmpOr(sc.minISR, 2)
	dur := duration(cmpOr(sc.duration, 30*time.Second))
	s := seed()
	dir := runDir(t, sc.name, s)
	run := "^TestScenarios$/^" + sc.name + "$"
	switch {
	case sc.name == "short":
		run = "^TestShortRun$"
	case sc.txn:
		run = "^TestTxnScenarios$/^" + sc.name + "$"
	}
	t.Logf("chaos %s: seed=%d, out %s (replay: KBROKER_CHAOS=%s go test -v -run '%s' ./compat-tests/chaos/ -seed=%d)",
		sc.name, s, dir, mode(), run, s)

	netns := sc.netns || (mode() == "full" && os.Geteuid() == 0)
	var flags []string
	if sc.share {
		flags = shareChaosFlags
	}
	if sc.txn {
		flags = append(flags, "--transaction.abort.timed.out.transaction.cleanup.interval.ms=1000")
	}
	c := startCluster(t, clusterOpts{brokers: sc.brokers, separateController: sc.separateController, netns: netns, runDir: dir, flags: flags,
		powercut: sc.powercut})
	topic := "chaos"
	configs := map[string]string{
		"min.insync.replicas":            strconv.Itoa(sc.minISR),
		"unclean.leader.election.enable": strconv.FormatBool(sc.unclean),
	}
	if sc.durable {
		configs["flush.messages"] = "1"
	}
	must(t, c.createTopic(topic, chaosPartitions, chaosRF, configs), "creating the topic")
	must(t, c.waitHealthy(topic, chaosPartitions, chaosRF, 60*time.Second), "cluster ready")

	h := NewHistory()
	e := &env{t: t, c: c, topic: topic, partitions: chaosPartitions, h: h}
	w := workload{topic: topic, partitions: chaosPartitions, producers: 3, consumers: 2,
		interval: 10 * time.Millisecond, inflight: 50, acks1: sc.acks1, deliveryTimeout: 5 * time.Second}
	tw := txnWorkload{topic: topic, partitions: chaosPartitions, producers: 3, consumers: 2, perTxn: 8,
		interval: 50 * time.Millisecond, abortEvery: 4, txnTimeout: 10 * time.Second, idPrefix: fmt.Sprintf("chaos-%d", s)}
	stopWorkload, err := startWorkload(sc, w, tw, c.seeds(), h)
	must(t, err, "starting the workload")
	var sr *shareRunning
	if sc.share {
		sw := shareWorkload{topic: topic, partitions: chaosPartitions, group: "chaos-share", members: 3, releaseEvery: 20, hold: 100 * time.Millisecond}
		sr, err = sw.start(c.seeds(), h)
		must(t, err, "starting the share workload")
	}

	time.Sleep(2 * time.Second)
	steps := Schedule(s, kinds(sc.nemeses...), dur, 2*time.Second, 5*time.Second)
	e.runSchedule(steps, dur)
	if err := e.healAll(); err != nil {
		t.Errorf("healing: %v", err)
	}
	time.Sleep(3 * time.Second) // produce on the healed cluster
	for msg, n := range stopWorkload() {
		t.Logf("workload error (%d times): %s", n, msg)
	}

	// Liveness: once healed, every partition must be led with a full ISR
	// again. The final read is tried either way (a partition with a leader
	// can be read), but without it there are no figures.
	var problems []string
	if err := c.waitHealthy(topic, chaosPartitions, chaosRF, 90*time.Second); err != nil {
		problems = append(problems, "the cluster did not heal: "+err.Error())
	}
	var finalErr error
	if sc.txn {
		finalErr = finalReadCommitted(c.seeds(), tw, h, 60*time.Second)
	} else {
		finalErr = finalRead(c.seeds(), topic, chaosPartitions, h, 60*time.Second)
	}
	if sr != nil {
		if err := drainShare(sr, c.seeds(), topic, h); err != nil {
			problems = append(problems, "share group: "+err.Error())
		}
	}
	if finalErr == nil && len(problems) == 0 {
		if err := c.checkConverged(topic, chaosPartitions, 60*time.Second); err != nil {
			problems = append(problems, err.Error())
		}
	}

	events := h.Events()
	histPath := filepath.Join(dir, "history.jsonl")
	if err := WriteHistory(histPath, events); err != nil {
		t.Errorf("writing the history: %v", err)
	}
	t.Logf("history: %s", histPath)
	summary, failures := checkHistory(sc, events)
	line := fmt.Sprintf("chaos %s seed=%d: %s", sc.name, s, summary)
	if sr != nil {
		sres := CheckShare(events)
		line += "; " + sres.Summary()
		failures = append(failures, sres.Failures...)
	}
	if finalErr != nil {
		line = fmt.Sprintf("chaos %s seed=%d: no figures: %v", sc.name, s, finalErr)
		failures = nil
		problems = append(problems, finalErr.Error())
	}
	fmt.Println(line)
	os.WriteFile(filepath.Join(dir, "summary.txt"), []byte(line+"\n"+strings.Join(append(failures, problems...), "\n")+"\n"), 0o644)
	for _, f := range failures {
		t.Errorf("chaos %s seed=%d: %s", sc.name, s, f)
	}
	for _, p := range problems {
		t.Errorf("chaos %s seed=%d: %s", sc.name, s, p)
	}
	if t.Failed() {
		t.Logf("broker logs: %s/node-*.log", dir)
	}
}

// startWorkload starts the scenario's workload and returns what stops it
// (with the errors its clients met, by message).
func startWorkload(sc scenario, w workload, tw txnWorkload, seeds []string, h *History) (func() map[string]int, error) {
	if sc.txn {
		r, err := tw.start(seeds, h)
		if err != nil {
			return nil, err
		}
		return func() map[string]int { r.stop(); return r.errs }, nil
	}
	r, err := w.start(seeds, h)
	if err != nil {
		return nil, err
	}
	return func() map[string]int { r.stop(30 * time.Second); return r.errs }, nil
}

// checkHistory runs the scenario's checker: its summary and failures.
func checkHistory(sc scenario, events []Event) (string, []string) {
	if sc.txn {
		res := CheckTxn(events)
		return res.Summary(), res.Failures
	}
	res := Check(events, sc.policy)
	return res.Summary(), res.Failures
}

func cmpOr[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

func must(t testing.TB, err error, what string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// checkConverged waits until every replica of every partition holds the
// same batches on disk, byte for byte.
func (c *cluster) checkConverged(topic string, partitions int32, d time.Duration) error {
	st, err := c.describe(topic)
	if err != nil {
		return err
	}
	return waitFor(d, "replicas to converge on disk", func() error {
		for p := range partitions {
			var ref []byte
			for i, id := range st[p].replicas {
				b, err := c.node(id).logBytes(topic, p)
				if err != nil {
					return err
				}
				if i == 0 {
					ref = b
				} else if !bytes.Equal(ref, b) {
					return fmt.Errorf("partition %d: node %d holds %d bytes of batches, node %d holds %d (or they differ)",
						p, st[p].replicas[0], len(ref), id, len(b))
				}
			}
		}
		return nil
	})
}

// logBytes returns the whole batches of a partition's segments on the
// node's disk, in offset order.
func (n *node) logBytes(topic string, partition int32) ([]byte, error) {
	files, err := filepath.Glob(filepath.Join(n.dataDir, fmt.Sprintf("%s-%d", topic, partition), "*.log"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var out []byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		out = append(out, wholeBatches(b)...)
	}
	return out, nil
}

// wholeBatches cuts a segment's bytes after its last whole batch (an
// active segment is preallocated: its tail is zeros).
func wholeBatches(b []byte) []byte {
	n := 0
	for len(b)-n >= 61 {
		size := int(int32(binary.BigEndian.Uint32(b[n+8:]))) + 12
		if size < 61 || n+size > len(b) || b[n+16] != 2 {
			break
		}
		n += size
	}
	return b[:n]
}

// drainShare lets the share group accept everything the producers were
// told was written, after the faults, and records where it settled.
func drainShare(sr *shareRunning, seeds []string, topic string, h *History) error {
	ends, err := settledEnds(seeds, topic, 30*time.Second)
	if err != nil {
		sr.stopAll()
		return err
	}
	var want []string
	for _, e := range h.Events() {
		if e.Type == Ok {
			want = append(want, e.Value)
		}
	}
	return sr.drain(seeds, want, ends, 90*time.Second)
}

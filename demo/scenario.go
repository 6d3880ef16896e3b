package demo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// Config says how scenarios start their clusters.
type Config struct {
	// Binary is the kbroker executable the brokers run.
	Binary string
	// Dir is where each run makes its temporary directory (node data and
	// node-N.log with each process's output); "" means os.TempDir().
	Dir string
	// Keep leaves that directory in place after the run.
	Keep bool
}

// Outcome is what a scenario observed, for tests and for the summary.
type Outcome struct {
	Scenario string        `json:"scenario"`
	Elapsed  time.Duration `json:"elapsed_ns"`
	// Acked counts the records producers got an acknowledgement for;
	// Lost, those of them missing from the partition at the end.
	Acked      int      `json:"acked"`
	Lost       int      `json:"lost"`
	LostValues []string `json:"lost_values,omitempty"`
	// Retried counts the records that were in flight when the leader
	// crashed and that the producer's retries got acknowledged by the new
	// leader (acksall).
	Retried int `json:"retried"`
	// Duplicates counts values found more than once at the end.
	Duplicates int `json:"duplicates"`
	// Refusals lists the errors brokers refused writes with, e.g.
	// NOT_ENOUGH_REPLICAS (mininsync), in order.
	Refusals []string `json:"refusals,omitempty"`
	// WrittenAfterStale lists the acknowledged records written after the
	// stale replica left the ISR (unclean): exactly the ones an unclean
	// election of that replica loses.
	WrittenAfterStale []string `json:"written_after_stale,omitempty"`
	// Redelivered counts the records a share group handed out more than
	// once (queue: those the killed consumer held).
	Redelivered int `json:"redelivered,omitempty"`
	// OldLeader led the partition before the crash, NewLeader at the end.
	OldLeader int32 `json:"old_leader"`
	NewLeader int32 `json:"new_leader"`
}

// Scenario is one lesson on its own throw-away cluster.
type Scenario struct {
	Name  string // as on the command line: acks1, acksall, mininsync, unclean, queue
	Title string // one line
	cfg   Config
	spec  clusterSpec
	topic topicSpec
	play  func(ctx context.Context, r *run) error
}

// topicSpec is the demo topic: one partition, replication factor 3.
type topicSpec struct {
	minISR  int
	unclean bool
}

// Names lists the scenarios in the order "kbroker demo" runs them.
func Names() []string { return []string{"acks1", "acksall", "mininsync", "unclean", "queue"} }

// New returns the scenario called name.
func New(name string, cfg Config) (*Scenario, error) {
	s := &Scenario{Name: name, cfg: cfg}
	switch name {
	case "acks1":
		s.Title = "acks=1: the leader acknowledges alone, and a crash loses what it acknowledged"
		s.spec, s.topic, s.play = clusterSpec{brokers: 3}, topicSpec{minISR: 1}, playAcks1
	case "acksall":
		s.Title = "acks=all: nothing acknowledged is lost in the same crash; the producer retries the rest"
		s.spec, s.topic, s.play = clusterSpec{brokers: 3}, topicSpec{minISR: 2}, playAcksAll
	case "mininsync":
		s.Title = "min.insync.replicas=2: writes are refused while only the leader is in sync"
		s.spec, s.topic, s.play = clusterSpec{brokers: 3, separateController: true}, topicSpec{minISR: 2}, playMinInsync
	case "unclean":
		s.Title = "unclean leader election: a stale replica leads, and acknowledged records are lost"
		s.spec, s.topic, s.play = clusterSpec{brokers: 3, separateController: true}, topicSpec{minISR: 1}, playUnclean
	case "queue":
		s.Title = "share groups (KIP-932): three consumers share one partition; one dies mid-batch and its records go to the others"
		s.spec, s.topic, s.play = clusterSpec{brokers: 3}, topicSpec{minISR: 2}, playQueue
	default:
		return nil, fmt.Errorf("unknown scenario %q: one of %s", name, strings.Join(Names(), ", "))
	}
	return s, nil
}

// RunError is a scenario that could not complete: the cluster did not do
// what the lesson needs, or the run was cancelled.
type RunError struct {
	Scenario string
	Err      error
	// Logs has the tail of each process's output, by node id.
	Logs map[int32]string
}

func (e *RunError) Error() string { return fmt.Sprintf("demo %s: %v", e.Scenario, e.Err) }
func (e *RunError) Unwrap() error { return e.Err }

// run is the state of one scenario run.
type run struct {
	*cluster
	narr   *Narrator
	topic  string
	minISR int // the topic's min.insync.replicas
	out    *Outcome
	lastSt partitionState // last partition state narrated
	haveSt bool
}

// Run plays the scenario on a cluster of its own, narrating to narr, and
// returns what it observed. The cluster is killed and its directory removed
// (unless Config.Keep) before Run returns, whatever happens.
func (s *Scenario) Run(ctx context.Context, narr *Narrator) (out Outcome, err error) {
	start := time.Now()
	out = Outcome{Scenario: s.Name, OldLeader: -1, NewLeader: -1}
	narr.Heading("%s: %s", s.Name, s.Title)
	dir, err := os.MkdirTemp(s.cfg.Dir, "kbroker-demo-"+s.Name+"-")
	if err != nil {
		return out, &RunError{Scenario: s.Name, Err: err}
	}
	defer func() {
		if !s.cfg.Keep {
			if rmErr := os.RemoveAll(dir); rmErr != nil && err == nil {
				err = &RunError{Scenario: s.Name, Err: rmErr}
			}
		}
	}()
	c, err := s.start(ctx, dir, narr)
	if err != nil {
		return out, s.runError(ctx, err, nil)
	}
	defer func() {
		if err != nil {
			err = s.runError(ctx, err, c)
		}
		c.kill()
		out.Elapsed = time.Since(start)
		where := "removed " + dir
		if s.cfg.Keep {
			where = "kept " + dir + " (data and node-N.log)"
		}
		narr.Say("cleanup: all %d processes killed, %s; %s took %.1fs", len(c.allNodes()), where, s.Name, out.Elapsed.Seconds())
	}()
	r := &run{cluster: c, narr: narr, out: &out, topic: "demo-" + s.Name, minISR: s.topic.minISR}
	if err := r.createTopic(ctx, s.topic); err != nil {
		return out, err
	}
	return out, s.play(ctx, r)
}

// runError explains why a run stopped: interrupted, or err with the tail
// of each process's output.
func (s *Scenario) runError(ctx context.Context, err error, c *cluster) error {
	if ctx.Err() != nil {
		return &RunError{Scenario: s.Name, Err: fmt.Errorf("interrupted: %w", context.Cause(ctx))}
	}
	e := &RunError{Scenario: s.Name, Err: err}
	if c != nil {
		e.Logs = c.logTails(4000)
	}
	return e
}

func (s *Scenario) start(ctx context.Context, dir string, narr *Narrator) (*cluster, error) {
	layout := "each broker is also a controller (combined mode, quorum of 3)"
	if s.spec.separateController {
		layout = fmt.Sprintf("plus a controller-only node %d holding the metadata quorum, so that brokers may all crash or stall without costing it", controllerID)
	}
	narr.Say("starting %d brokers (node ids 1-%d), %s; data in %s", s.spec.brokers, s.spec.brokers, layout, dir)
	c, err := startCluster(ctx, s.cfg.Binary, dir, s.spec)
	if err != nil {
		return nil, err
	}
	var addrs []string
	for _, n := range c.nodes {
		addrs = append(addrs, fmt.Sprintf("%d=%s", n.id, n.clientAddr))
	}
	narr.Say("cluster up: brokers %s; broker.session.timeout.ms=%d, replica.lag.time.max.ms=%d",
		strings.Join(addrs, " "), sessionTimeout.Milliseconds(), lagTimeMax.Milliseconds())
	return c, nil
}

func (c *cluster) logTails(max int) map[int32]string {
	out := map[int32]string{}
	for _, n := range c.allNodes() {
		out[n.id] = n.logTail(max)
	}
	return out
}

// createTopic creates the demo topic and waits for its full ISR.
func (r *run) createTopic(ctx context.Context, t topicSpec) error {
	adm, err := r.client()
	if err != nil {
		return err
	}
	defer adm.Close()
	configs := map[string]*string{
		"min.insync.replicas":            kadm.StringPtr(fmt.Sprint(t.minISR)),
		"unclean.leader.election.enable": kadm.StringPtr(fmt.Sprint(t.unclean)),
	}
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	resp, err := kadm.NewClient(adm).CreateTopic(cctx, 1, 3, configs, r.topic)
	if err = errors.Join(err, resp.Err); err != nil {
		return fmt.Errorf("creating topic %s: %w", r.topic, err)
	}
	r.narr.Say("created topic %s: 1 partition, replication factor 3, min.insync.replicas=%d, unclean.leader.election.enable=%v",
		r.topic, t.minISR, t.unclean)
	if _, err = r.waitPartition(ctx, 30*time.Second, "the full ISR", func(s partitionState) bool {
		return s.leader >= 0 && len(s.isr) == 3
	}); err != nil {
		return err
	}
	// Clients may ask any broker: wait until every one knows the topic.
	return poll(ctx, 30*time.Second, "every broker to know the topic", func() error {
		for _, n := range r.nodes {
			st, err := r.describeOn(ctx, n, r.topic)
			if err != nil {
				return err
			}
			if st.leader < 0 || len(st.isr) != 3 {
				return fmt.Errorf("node %d sees %v", n.id, st)
			}
		}
		return nil
	})
}

// waitPartition polls the partition's metadata until cond holds, narrating
// every change it sees on the way.
func (r *run) waitPartition(ctx context.Context, d time.Duration, what string, cond func(partitionState) bool) (partitionState, error) {
	var st partitionState
	err := poll(ctx, d, what, func() error {
		var err error
		if st, err = r.describe(ctx, r.topic); err != nil {
			return err
		}
		r.noteState(st)
		if !cond(st) {
			return fmt.Errorf("partition: %v", st)
		}
		return nil
	})
	return st, err
}

// noteState narrates st if it differs from the last state narrated.
func (r *run) noteState(st partitionState) {
	if r.haveSt && st.equal(r.lastSt) {
		return
	}
	r.lastSt, r.haveSt = st, true
	r.narr.Say("partition 0: %v", st)
}

// sayOffsets narrates the HW and each replica's log end offset.
func (r *run) sayOffsets(ctx context.Context, st partitionState) {
	r.narr.Say("%s", r.offsets(ctx, r.topic, st))
}

// account compares what producers were told with what the partition holds
// at the end: Acked, Lost, Duplicates. acks lists every acknowledged record;
// lost, those of them missing.
func (r *run) account(ctx context.Context, leader int32, acks []acked) (got map[string]int64, lost []acked, err error) {
	got, dups, err := r.readBack(ctx, r.topic, leader)
	if err != nil {
		return nil, nil, err
	}
	r.out.Acked = len(acks)
	r.out.Duplicates = len(dups)
	r.out.LostValues = nil
	for _, a := range acks {
		if _, ok := got[a.value]; !ok {
			lost = append(lost, a)
			r.out.LostValues = append(r.out.LostValues, a.value)
		}
	}
	r.out.Lost = len(lost)
	r.out.NewLeader = leader
	return got, lost, nil
}

// valueRange shows values compactly, in their order, a run of one prefix
// as its first and last: "late-000..late-009, during-000..during-009".
func valueRange(vals []string) string {
	if len(vals) == 0 {
		return "none"
	}
	var runs []string
	for i := 0; i < len(vals); {
		j := i + 1
		for j < len(vals) && prefix(vals[j]) == prefix(vals[i]) {
			j++
		}
		if j-i == 1 {
			runs = append(runs, vals[i])
		} else {
			runs = append(runs, vals[i]+".."+vals[j-1])
		}
		i = j
	}
	return strings.Join(runs, ", ")
}

func prefix(v string) string {
	if i := strings.LastIndexByte(v, '-'); i >= 0 {
		return v[:i]
	}
	return v
}

// offsetRange shows the offsets of acknowledged records: "10..59".
func offsetRange(acks []acked) string {
	if len(acks) == 0 {
		return "none"
	}
	return fmt.Sprintf("%d..%d", acks[0].offset, acks[len(acks)-1].offset)
}

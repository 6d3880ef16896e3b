package chaos

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// env is what nemeses act on.
type env struct {
	t          *testing.T
	c          *cluster
	topic      string
	partitions int32
	h          *History
}

// fault is an applied fault: what it was and how to undo it.
type fault struct {
	desc string
	heal func() error
}

// nemesis applies one kind of fault; s.Pick chooses its target.
type nemesis struct {
	Kind
	apply func(e *env, s Step) (fault, error)
}

// nemeses by name. Holds are relative to the cluster's timeouts: session
// 3 s (fenced), lag 4 s (out of the ISR).
var nemeses = map[string]nemesis{
	"kill-leader":         {Kind{"kill-leader", time.Second, 6 * time.Second}, killLeader},
	"kill-random":         {Kind{"kill-random", time.Second, 6 * time.Second}, killRandom},
	"kill-controller":     {Kind{"kill-controller", time.Second, 6 * time.Second}, killController},
	"pause-short":         {Kind{"pause-short", 300 * time.Millisecond, 2 * time.Second}, pauseRandom},
	"pause-long":          {Kind{"pause-long", 5 * time.Second, 10 * time.Second}, pauseRandom},
	"partition-leader":    {Kind{"partition-leader", 4 * time.Second, 10 * time.Second}, partitionLeader},
	"partition-split":     {Kind{"partition-split", 4 * time.Second, 10 * time.Second}, partitionSplit},
	"slow-follower":       {Kind{"slow-follower", 6 * time.Second, 12 * time.Second}, slowFollower},
	"restart-all":         {Kind{"restart-all", time.Second, 4 * time.Second}, restartAll},
	"rolling-restart":     {Kind{"rolling-restart", 0, 0}, rollingRestart},
	"stale-election":      {Kind{"stale-election", 5 * time.Second, 8 * time.Second}, staleElection},
	"lagging-leader-kill": {Kind{"lagging-leader-kill", 2 * time.Second, 5 * time.Second}, laggingLeaderKill},
	"power-loss":          {Kind{"power-loss", time.Second, 4 * time.Second}, powerLoss},
	"power-loss-all":      {Kind{"power-loss-all", time.Second, 4 * time.Second}, powerLossAll},
}

func kinds(names ...string) []Kind {
	var out []Kind
	for _, n := range names {
		nem, ok := nemeses[n]
		if !ok {
			panic("unknown nemesis " + n)
		}
		out = append(out, nem.Kind)
	}
	return out
}

// leaderOf returns partition (pick % partitions) and its state.
func (e *env) leaderOf(pick uint64) (int32, partitionState, error) {
	p := int32(pick % uint64(e.partitions))
	st, err := e.c.describe(e.topic)
	if err != nil {
		return p, partitionState{}, err
	}
	if st[p].leader < 0 {
		return p, st[p], fmt.Errorf("partition %d has no leader", p)
	}
	return p, st[p], nil
}

func killLeader(e *env, s Step) (fault, error) {
	p, st, err := e.leaderOf(s.Pick)
	if err != nil {
		return fault{}, err
	}
	n := e.c.node(st.leader)
	n.kill9()
	return fault{fmt.Sprintf("kill -9 node %d (leader of partition %d)", n.id, p), n.start}, nil
}

func killRandom(e *env, s Step) (fault, error) {
	n := e.c.nodes[s.Pick%uint64(len(e.c.nodes))]
	n.kill9()
	return fault{fmt.Sprintf("kill -9 node %d", n.id), n.start}, nil
}

func killController(e *env, _ Step) (fault, error) {
	id, err := e.c.activeController()
	if err != nil {
		return fault{}, err
	}
	n := e.c.node(id)
	n.kill9()
	return fault{fmt.Sprintf("kill -9 node %d (active controller)", id), n.start}, nil
}

func pauseRandom(e *env, s Step) (fault, error) {
	n := e.c.nodes[s.Pick%uint64(len(e.c.nodes))]
	n.Pause()
	return fault{fmt.Sprintf("SIGSTOP node %d for %v", n.id, s.Hold.Round(time.Millisecond)), func() error { n.Resume(); return nil }}, nil
}

func (e *env) lab() (*netLab, error) {
	if e.c.lab == nil {
		return nil, errors.New("needs network namespaces")
	}
	return e.c.lab, nil
}

// partitionLeader cuts a partition's leader from every other node
// (brokers and controllers); clients still reach it.
func partitionLeader(e *env, s Step) (fault, error) {
	lab, err := e.lab()
	if err != nil {
		return fault{}, err
	}
	p, st, err := e.leaderOf(s.Pick)
	if err != nil {
		return fault{}, err
	}
	var rest []int32
	for _, n := range e.c.all() {
		if n.id != st.leader {
			rest = append(rest, n.id)
		}
	}
	if err := lab.partition([]int32{st.leader}, rest); err != nil {
		return fault{}, err
	}
	return fault{fmt.Sprintf("partition node %d (leader of partition %d) from %v", st.leader, p, rest), lab.heal}, nil
}

// partitionSplit splits the nodes into a random minority and majority.
func partitionSplit(e *env, s Step) (fault, error) {
	lab, err := e.lab()
	if err != nil {
		return fault{}, err
	}
	var ids []int32
	for _, n := range e.c.all() {
		ids = append(ids, n.id)
	}
	rng := rand.New(rand.NewPCG(s.Pick, 1))
	rng.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	k := (len(ids) - 1) / 2
	minority, majority := ids[:k], ids[k:]
	if err := lab.partition(minority, majority); err != nil {
		return fault{}, err
	}
	return fault{fmt.Sprintf("partition minority %v from majority %v", minority, majority), lab.heal}, nil
}

// slowFollower rate-limits the link of one follower of a partition.
func slowFollower(e *env, s Step) (fault, error) {
	lab, err := e.lab()
	if err != nil {
		return fault{}, err
	}
	p, st, err := e.leaderOf(s.Pick)
	if err != nil {
		return fault{}, err
	}
	var followers []int32
	for _, r := range st.replicas {
		if r != st.leader {
			followers = append(followers, r)
		}
	}
	if len(followers) == 0 {
		return fault{}, fmt.Errorf("partition %d has no follower", p)
	}
	f := followers[(s.Pick>>32)%uint64(len(followers))]
	if err := lab.slow(f, "64kbit"); err != nil {
		return fault{}, err
	}
	return fault{fmt.Sprintf("slow link (tbf 64kbit) on node %d (follower of partition %d)", f, p), lab.unslow}, nil
}

func restartAll(e *env, s Step) (fault, error) {
	var wg sync.WaitGroup
	for _, n := range e.c.nodes {
		wg.Add(1)
		go func() { defer wg.Done(); n.kill9() }()
	}
	wg.Wait()
	return fault{fmt.Sprintf("kill -9 every broker, down %v", s.Hold.Round(time.Millisecond)), func() error {
		var errs []error
		for _, n := range e.c.nodes {
			errs = append(errs, n.start())
		}
		return errors.Join(errs...)
	}}, nil
}

// rollingRestart stops each broker cleanly (SIGTERM, controlled shutdown),
// starts it again and waits for every ISR to be full before the next one.
func rollingRestart(e *env, _ Step) (fault, error) {
	var errs []error
	for _, n := range e.c.nodes {
		n.stop()
		if err := n.start(); err != nil {
			return fault{}, err
		}
		if err := e.c.waitHealthy(e.topic, e.partitions, 3, 60*time.Second); err != nil {
			errs = append(errs, fmt.Errorf("after restarting %v: %w", n, err))
		}
	}
	return fault{"rolling restart of every broker (SIGTERM, start, wait for full ISRs)", func() error { return errors.Join(errs...) }}, nil
}

// staleElection makes one follower of a partition stale (paused past the
// lag time: it leaves the ISR), kills the two in-sync replicas and resumes
// the stale one: with unclean leader election it leads and what it missed
// is lost; without, the partition stays offline until a killed replica
// returns. Needs a separate controller (the brokers' deaths must not cost
// the quorum).
func staleElection(e *env, s Step) (fault, error) {
	p, st, err := e.leaderOf(s.Pick)
	if err != nil {
		return fault{}, err
	}
	var followers []int32
	for _, r := range st.replicas {
		if r != st.leader {
			followers = append(followers, r)
		}
	}
	if len(followers) < 2 {
		return fault{}, fmt.Errorf("partition %d: followers %v", p, followers)
	}
	stale := e.c.node(followers[(s.Pick>>32)%2])
	stale.Pause()
	err = waitFor(20*time.Second, "the paused follower to leave the ISR", func() error {
		cur, err := e.c.describe(e.topic)
		if err != nil {
			return err
		}
		if slices.Contains(cur[p].isr, stale.id) {
			return fmt.Errorf("isr %v", cur[p].isr)
		}
		return nil
	})
	if err != nil {
		stale.Resume()
		return fault{}, err
	}
	var killed []*node
	for _, r := range st.replicas {
		if r != stale.id {
			n := e.c.node(r)
			n.kill9()
			killed = append(killed, n)
		}
	}
	stale.Resume()
	return fault{fmt.Sprintf("node %d stale (paused out of the ISR of partition %d), in-sync %d and %d killed, stale resumed",
		stale.id, p, killed[0].id, killed[1].id),
		func() error {
			var errs []error
			for _, n := range killed {
				errs = append(errs, n.start())
			}
			return errors.Join(errs...)
		}}, nil
}

// laggingLeaderKill pauses a partition's followers for a second (less
// than the lag time: they stay in the ISR), kills the leader and resumes
// them: what only the leader had is gone. acks=all never acknowledged it
// (compat-tests lesson 2); acks=1 did (lesson 1).
func laggingLeaderKill(e *env, s Step) (fault, error) {
	p, st, err := e.leaderOf(s.Pick)
	if err != nil {
		return fault{}, err
	}
	var followers []*node
	for _, r := range st.replicas {
		if r != st.leader {
			followers = append(followers, e.c.node(r))
		}
	}
	for _, f := range followers {
		f.Pause()
	}
	time.Sleep(time.Second)
	leader := e.c.node(st.leader)
	leader.kill9()
	for _, f := range followers {
		f.Resume()
	}
	return fault{fmt.Sprintf("followers of partition %d paused 1 s, leader %d killed, followers resumed", p, leader.id), leader.start}, nil
}

// runSchedule applies the steps in order, each at its planned time or as
// soon as the previous one is healed; steps that would start after total
// (slow heals, rolling restarts) are dropped.
func (e *env) runSchedule(steps []Step, total time.Duration) {
	start := time.Now()
	for _, s := range steps {
		if time.Since(start) > total-s.Hold {
			e.logf("schedule: %s at %v dropped (the run is over)", s.Kind, s.At)
			continue
		}
		if d := time.Until(start.Add(s.At)); d > 0 {
			time.Sleep(d)
		}
		e.h.Add(Event{Proc: "nemesis", Type: NemesisStart, Info: s.Kind})
		f, err := nemeses[s.Kind].apply(e, s)
		if err != nil {
			e.logf("nemesis %s not applied: %v", s.Kind, err)
			e.h.Add(Event{Proc: "nemesis", Type: NemesisStop, Info: s.Kind + " not applied: " + err.Error()})
			continue
		}
		e.logf("nemesis: %s", f.desc)
		time.Sleep(s.Hold)
		if err := f.heal(); err != nil {
			e.logf("nemesis %s: heal: %v", s.Kind, err)
		}
		e.h.Add(Event{Proc: "nemesis", Type: NemesisStop, Info: f.desc})
		e.logf("nemesis: healed %s", s.Kind)
	}
}

func (e *env) logf(format string, args ...any) {
	e.t.Logf("%s "+format, append([]any{time.Now().Format("15:04:05.000")}, args...)...)
}

// healAll undoes every fault: links restored, every node running.
func (e *env) healAll() error {
	var errs []error
	if e.c.lab != nil {
		errs = append(errs, e.c.lab.heal(), e.c.lab.unslow())
	}
	for _, n := range e.c.all() {
		n.Resume()
		errs = append(errs, n.start())
	}
	return errors.Join(errs...)
}

// powerLoss cuts the power of one broker (kill -9, then its log dirs lose
// everything it had not synced: internal/powercut) and, at the end of the
// hold, starts it again and waits for every ISR to be full, so that the
// next cut is another single failure: within Kafka's promise (acks=all,
// min.insync.replicas=2), nothing acknowledged may be lost. The broker
// comes back unclean (KIP-966: it leaves the ISRs and ELRs until it caught
// up); a leader among the others is elected meanwhile.
func powerLoss(e *env, s Step) (fault, error) {
	n := e.c.nodes[s.Pick%uint64(len(e.c.nodes))]
	n.kill9()
	cut, err := n.losePageCache()
	if err != nil {
		return fault{}, err
	}
	return fault{fmt.Sprintf("power cut of node %d (%s), down %v", n.id, cut, s.Hold.Round(time.Millisecond)), func() error {
		if err := n.start(); err != nil {
			return err
		}
		return e.c.waitHealthy(e.topic, e.partitions, chaosRF, 90*time.Second)
	}}, nil
}

// powerLossAll cuts the power of every broker at once. With durable acks
// (flush.messages=1) nothing acknowledged may be lost; with Kafka's
// default flush policy the losses are figures.
func powerLossAll(e *env, s Step) (fault, error) {
	for _, n := range e.c.nodes {
		n.Signal(syscall.SIGKILL)
	}
	var cuts []string
	for _, n := range e.c.nodes {
		n.WaitExit(10 * time.Second)
		cut, err := n.losePageCache()
		if err != nil {
			return fault{}, err
		}
		cuts = append(cuts, fmt.Sprintf("node %d: %s", n.id, cut))
	}
	return fault{fmt.Sprintf("power cut of every broker (%s), down %v", strings.Join(cuts, "; "), s.Hold.Round(time.Millisecond)), func() error {
		var errs []error
		for _, n := range e.c.nodes {
			errs = append(errs, n.start())
		}
		return errors.Join(errs...)
	}}, nil
}

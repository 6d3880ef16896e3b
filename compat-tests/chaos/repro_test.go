package chaos

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// TestReproEmptyEpochLivelock is the minimal reproduction of a broker bug
// the all-restart scenario found, kept as a regression test (fixed in
// 4d22cf2): a replica that was leader at an epoch without appending
// anything (its leader-epoch cache ends with an entry at its log end
// offset) and then follows a leader that never had that epoch is told
// "diverging" (the leader's end offset for that epoch is our log end
// offset) on every fetch; truncating to its own log end offset was a no-op
// that left the stale epoch entry, so the next fetch diverged again: it
// never caught up and never rejoined the ISR. Kafka's UnifiedLog.truncateTo
// truncates the epoch cache even when the offset is at the log end
// ("Always truncate epoch cache since we may have a conflicting epoch entry
// at the end of the log from the leader").
func TestReproEmptyEpochLivelock(t *testing.T) {
	needMode(t, "full")
	dir := runDir(t, "repro-empty-epoch", 0)
	c := startCluster(t, clusterOpts{brokers: 3, runDir: dir})
	const topic = "repro"
	must(t, c.createTopic(topic, 1, 3, map[string]string{"min.insync.replicas": "2"}), "creating the topic")
	must(t, c.waitHealthy(topic, 1, 3, 60*time.Second), "full ISR")
	vals := make([]string, 10)
	for i := range vals {
		vals[i] = fmt.Sprintf("r-%d", i)
	}
	_, err := produceSync(c.seeds(), topic, 1, vals)
	must(t, err, "producing")
	must(t, c.waitHealthy(topic, 1, 3, 60*time.Second), "full ISR")
	st0 := c.mustDescribe(t, topic)
	r0, r1 := st0.replicas[0], st0.replicas[1]
	if st0.leader != r0 {
		t.Fatalf("leader %d is not the first replica of %v", st0.leader, st0.replicas)
	}

	// 1. r1 leads at a new epoch and appends nothing (no producer runs).
	c.node(r0).Pause()
	st1 := c.waitLeader(t, topic, func(s partitionState) bool { return s.leader == r1 })
	c.node(r0).Resume()
	must(t, c.waitHealthy(topic, 1, 3, 60*time.Second), fmt.Sprintf("node %d back in the ISR", r0))
	t.Logf("node %d led at epoch %d without an append", r1, st1.epoch)

	// 2. r1 loses the leadership to r0, which never had that epoch.
	c.node(r1).Pause()
	st2 := c.waitLeader(t, topic, func(s partitionState) bool { return s.leader == r0 && s.epoch > st1.epoch })
	c.node(r1).Resume()
	t.Logf("node %d leads at epoch %d; node %d resumed and follows it", r0, st2.epoch, r1)

	// 3. r1 should catch up (nothing to fetch even) and rejoin the ISR.
	err = waitFor(30*time.Second, fmt.Sprintf("node %d to rejoin the ISR", r1), func() error {
		s := c.mustDescribe(t, topic)
		if !slices.Contains(s.isr, r1) {
			return fmt.Errorf("leader %d epoch %d isr %v", s.leader, s.epoch, s.isr)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("a replica whose last leader epoch holds no record never rejoins the ISR after following a leader without that epoch: %v (logs: %s)", err, dir)
	}
}

func (c *cluster) mustDescribe(t *testing.T, topic string) partitionState {
	t.Helper()
	st, err := c.describe(topic)
	must(t, err, "describe")
	return st[0]
}

func (c *cluster) waitLeader(t *testing.T, topic string, cond func(partitionState) bool) partitionState {
	t.Helper()
	var st partitionState
	must(t, waitFor(30*time.Second, "the leader to change", func() error {
		s, err := c.describe(topic)
		if err != nil {
			return err
		}
		if st = s[0]; !cond(st) {
			return fmt.Errorf("leader %d epoch %d isr %v", st.leader, st.epoch, st.isr)
		}
		return nil
	}), "leader change")
	return st
}

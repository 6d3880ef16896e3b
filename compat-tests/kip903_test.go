package compat

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// KIP-903 with real processes. Follower C is kill -9'd and comes back with
// its partition directory wiped: empty, under a new broker epoch. It
// rejoins the ISR the honest way (by fetching), then stalls and leaves it.
// Now a fetch of C's previous incarnation reaches the leader, claiming C
// is caught up. Without broker epochs the leader would propose C for the
// ISR and the controller would accept (C is registered and unfenced):
// C, lacking the latest acknowledged records, would be in sync, and when
// the leader then dies, elected (it comes first in replica order) and
// those records lost. With KIP-903 the fetch carries the old epoch
// (Fetch v16 ReplicaState), the leader's AlterPartition v3 names it, and
// the controller refuses the expansion with INELIGIBLE_REPLICA.
//
// The late fetch is sent by the test, as C's old incarnation would have:
// real processes give no way to hold one of C's own fetches back until
// its next incarnation is registered and unfenced (the replication
// simulator plays that exact race, TestSimKIP903StaleExpansionOfARestartedReplica).
// It asks at the current log end, which makes the leader propose C; what
// KIP-903 judges is the broker epoch it carries. Everything else, the
// restart, the catch-up, the ISR changes, the election and the reads, is
// the real path. Against the binary before KIP-903 reached the wire, C is
// put back in the ISR here, and (past that check) elected when the leader
// dies, losing acknowledged records.
func TestRestartedFollowerNotReaddedOnItsOldIncarnationsFetch(t *testing.T) {
	needOwnCluster(t)
	t.Parallel()
	// A session long enough to hold C paused and unfenced while the leader
	// shrinks it out (lag 1.5 s) and hears the late fetch.
	c := startCluster(t, clusterOpts{brokers: 3, separateController: true, brokerOnly: true, flags: replicationFlags(
		"--broker.session.timeout.ms=8000", "--replica.lag.time.max.ms=1500")})
	adm := newAdmin(t, c.seeds())
	topic := newTopic(t, adm, 1, 3, map[string]*string{
		"min.insync.replicas":            kadm.StringPtr("2"),
		"unclean.leader.election.enable": kadm.StringPtr("false"),
	})
	c.waitTopicEverywhere(topic, 1, 3)
	st := c.waitPartition(topic, 0, 30*time.Second, "full ISR", func(s partitionState) bool { return len(s.isr) == 3 })
	leader := st.leader
	// C comes first among the followers in replica order: the election
	// after the leader's death would pick it if it were in sync.
	others := otherThan(st.replicas, leader)
	stale, inSync := others[0], others[1]
	ctx := ctxTimeout(t, 4*time.Minute)
	cl := newClient(t, c.seeds(), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordDeliveryTimeout(30*time.Second))
	early, err := produceValues(ctx, cl, topic, values("early", 20))
	must(t, err, "records every replica gets")
	c.waitConverged(topic, 0, 30*time.Second)
	oldEpoch := registeredEpoch(t, c.node(stale))
	id := topicID(t, adm, topic)

	// C dies and comes back empty with a new broker epoch (once its old
	// session has expired: a new incarnation of a live broker is a
	// duplicate registration). Registering takes it out of the ISR; it
	// fetches the records again and rejoins.
	earlyEnd := endOffsets(t, c.runningSeeds(), topic)[0]
	c.node(stale).kill9()
	must(t, os.RemoveAll(filepath.Join(c.node(stale).dataDir, topic+"-0")), "wiping the partition of node %d", stale)
	c.restart(c.node(stale))
	newEpoch := registeredEpoch(t, c.node(stale))
	if newEpoch == oldEpoch {
		t.Fatalf("node %d registered again at the same epoch %d", stale, oldEpoch)
	}
	c.waitPartition(topic, 0, 60*time.Second, "the restarted follower caught up and back in the ISR", func(s partitionState) bool {
		return len(s.isr) == 3 && c.node(stale).logEndOffset(t, topic, 0) >= earlyEnd
	})
	c.node(stale).Pause()
	c.waitPartition(topic, 0, 30*time.Second, "the stalled follower out of the ISR", func(s partitionState) bool {
		return len(s.isr) == 2 && !slices.Contains(s.isr, stale)
	})
	late, err := produceValues(ctx, cl, topic, values("late", 20))
	must(t, err, "records the stalled follower lacks")

	refusedBefore := ineligibleRefusals(c)
	lateFetch(t, c, topic, id, leader, stale, oldEpoch)
	waitFor(t, 15*time.Second, "the controller to refuse the stale expansion", func() error {
		if s, err := c.describe(topic, 0); err == nil && slices.Contains(s.isr, stale) {
			t.Fatalf("node %d (epoch %d, lacking %d acknowledged records) was put back in the ISR %v on a fetch of its epoch %d",
				stale, newEpoch, len(late), s.isr, oldEpoch)
		}
		if ineligibleRefusals(c) == refusedBefore {
			return fmt.Errorf("no INELIGIBLE_REPLICA refusal logged by the controller yet")
		}
		return nil
	})
	if s, err := c.describe(topic, 0); err != nil || slices.Contains(s.isr, stale) {
		t.Fatalf("ISR %v (%v) after the refusal", s.isr, err)
	}
	t.Logf("node %d at epoch %d: an expansion on its epoch-%d fetch refused with INELIGIBLE_REPLICA", stale, newEpoch, oldEpoch)

	// The leader dies; C wakes up but cannot fetch from it. The election
	// takes the in-sync follower, and every acknowledged record is there.
	c.node(leader).kill9()
	c.node(stale).Resume()
	now := c.waitPartition(topic, 0, 60*time.Second, "a new leader", func(s partitionState) bool { return s.leader >= 0 && s.leader != leader })
	got := c.readAllSettled(topic)
	for _, set := range []map[string]producedKey{early, late} {
		for v := range set {
			if _, ok := got[v]; !ok {
				st, _ := c.describe(topic, 0)
				t.Fatalf("acknowledged record %s lost (leader now %d, ISR %v)", v, st.leader, st.isr)
			}
		}
	}
	if now.leader != inSync {
		t.Errorf("node %d leads, not the in-sync follower %d", now.leader, inSync)
	}
	t.Logf("leader %d killed: node %d leads, all %d acknowledged records readable", leader, now.leader, len(early)+len(late))
	c.restart(c.node(leader))
	c.waitPartition(topic, 0, 60*time.Second, "all replicas in sync again", func(s partitionState) bool { return len(s.isr) == 3 })
	c.waitConverged(topic, 0, 60*time.Second)
}

var registeredRE = regexp.MustCompile(`msg="broker registered".*\bepoch=(\d+)`)

// registeredEpoch is the broker epoch the node's current process last
// registered with, from its log.
func registeredEpoch(t *testing.T, n *node) int64 {
	t.Helper()
	var epoch int64
	waitFor(t, 30*time.Second, fmt.Sprintf("node %d's registration", n.id), func() error {
		m := registeredRE.FindAllStringSubmatch(n.logs(), -1)
		if len(m) == 0 {
			return fmt.Errorf("no registration logged")
		}
		var err error
		epoch, err = strconv.ParseInt(m[len(m)-1][1], 10, 64)
		return err
	})
	return epoch
}

// ineligibleRefusals counts the AlterPartition changes the controller
// refused with INELIGIBLE_REPLICA.
func ineligibleRefusals(c *cluster) int {
	n := 0
	for _, line := range strings.Split(c.controller.logs(), "\n") {
		if strings.Contains(line, "AlterPartition refused") && strings.Contains(line, "INELIGIBLE_REPLICA") {
			n++
		}
	}
	return n
}

// lateFetch sends the leader the fetch replica id's incarnation at
// brokerEpoch would have sent having every record: Fetch v16, by topic
// id, with ReplicaState.
func lateFetch(t *testing.T, c *cluster, topic string, topicID [16]byte, leader, id int32, brokerEpoch int64) {
	t.Helper()
	st, err := c.describe(topic, 0)
	must(t, err, "metadata")
	seeds := []string{c.node(leader).clientAddr} // not the paused node
	end := endOffsets(t, seeds, topic)[0]
	req := rawFetch(topic, topicID, 0, end, 0, 0)
	req.SetVersion(16) // kgo sends the highest both ends know: 16
	req.ReplicaState.ID, req.ReplicaState.Epoch = id, brokerEpoch
	rp := &req.Topics[0].Partitions[0]
	rp.CurrentLeaderEpoch, rp.LastFetchedEpoch = st.epoch, st.epoch
	resp, err := newClient(t, seeds).Broker(int(leader)).Request(ctxTimeout(t, 10*time.Second), req)
	must(t, err, "the late fetch")
	fr := resp.(*kmsg.FetchResponse)
	if len(fr.Topics) != 1 || len(fr.Topics[0].Partitions) != 1 {
		t.Fatalf("late fetch answer %+v", fr)
	}
	if err := kerr.ErrorForCode(fr.Topics[0].Partitions[0].ErrorCode); err != nil {
		t.Fatalf("late fetch at %d: %v", end, err)
	}
}

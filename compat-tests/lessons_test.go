package compat

// The lessons of the design exercise, reproduced on a real 3-broker cluster:
// what acks, min.insync.replicas and unclean.leader.election.enable promise
// when brokers pause and crash.

import (
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Lesson 1: with acks=1 the leader acknowledges alone. Followers paused (for
// less than the lag time), records acked, leader killed, followers resumed: a
// follower leads without those records, which are lost; the old leader comes
// back, truncates, and every replica ends identical.
func TestLessonAcks1LosesAcknowledgedRecords(t *testing.T) {
	needOwnCluster(t)
	t.Parallel()
	c := startCluster(t, clusterOpts{brokers: 3, flags: replicationFlags()})
	adm := newAdmin(t, c.seeds())
	topic := newTopic(t, adm, 1, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("1")})
	c.waitTopicEverywhere(topic, 1, 3)
	st := c.waitPartition(topic, 0, 30*time.Second, "full ISR", func(s partitionState) bool { return len(s.isr) == 3 })
	ctx := ctxTimeout(t, 3*time.Minute)

	all := newClient(t, c.seeds())
	committed, err := produceValues(ctx, all, topic, values("committed", 20))
	must(t, err, "acks=all baseline")
	// The acks=1 producer knows only the leader and has its metadata and
	// connection before the followers stop: a metadata request sent to a
	// stopped broker would hang the produce for many seconds, long enough
	// for the leader to shrink the ISR to itself (replica.lag.time.max.ms),
	// and with only the killed leader in the ISR no follower may lead.
	one := newClient(t, []string{c.node(st.leader).clientAddr}, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	if _, err := produceValues(ctx, one, topic, values("warm", 1)); err != nil {
		t.Fatalf("acks=1 warm-up: %v", err)
	}
	followers := otherThan(st.replicas, st.leader)
	for _, f := range followers {
		c.node(f).Pause()
	}
	start := time.Now()
	acked1, err := produceValues(ctx, one, topic, values("acks1", 50))
	if took := time.Since(start); took > 3*time.Second {
		t.Logf("the acks=1 produce took %v: the leader may have shrunk the ISR meanwhile", took)
	}
	must(t, err, "acks=1 with followers paused")
	c.node(st.leader).kill9()
	for _, f := range followers {
		c.node(f).Resume()
	}
	next := c.waitPartition(topic, 0, 30*time.Second, "a follower to lead", func(s partitionState) bool {
		return s.leader >= 0 && s.leader != st.leader
	})
	t.Logf("leader %d killed; %d now leads at epoch %d", st.leader, next.leader, next.epoch)

	got := c.readAllSettled(topic)
	for v := range committed {
		if _, ok := got[v]; !ok {
			t.Fatalf("acks=all record %s lost", v)
		}
	}
	var lost []string
	for v := range acked1 {
		if _, ok := got[v]; !ok {
			lost = append(lost, v)
		}
	}
	// A follower may still get the first few: a fetch response the leader
	// sent just before the pause waits in the stopped process's socket buffer.
	if len(lost) == 0 {
		t.Fatalf("acks=1: none of %d records acknowledged by the leader alone was lost", len(acked1))
	}
	t.Logf("acks=1 lesson: %d records acknowledged by the leader alone, %d lost after it crashed", len(acked1), len(lost))

	c.restart(c.node(st.leader))
	c.waitPartition(topic, 0, 60*time.Second, "old leader back in the ISR", func(s partitionState) bool { return len(s.isr) == 3 })
	c.waitConverged(topic, 0, 60*time.Second)
}

// Lesson 2: acks=all with min.insync.replicas=2 and the same crash: nothing
// acknowledged is lost; the records the producer retries land on the new
// leader, once each (idempotence); replicas converge.
func TestLessonAcksAllLosesNothing(t *testing.T) {
	needOwnCluster(t)
	t.Parallel()
	c := startCluster(t, clusterOpts{brokers: 3, flags: replicationFlags()})
	adm := newAdmin(t, c.seeds())
	topic := newTopic(t, adm, 1, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")})
	c.waitTopicEverywhere(topic, 1, 3)
	st := c.waitPartition(topic, 0, 30*time.Second, "full ISR", func(s partitionState) bool { return len(s.isr) == 3 })
	ctx := ctxTimeout(t, 3*time.Minute)

	cl := newClient(t, c.seeds(), kgo.RecordDeliveryTimeout(90*time.Second))
	committed, err := produceValues(ctx, cl, topic, values("committed", 20))
	must(t, err, "baseline")

	followers := otherThan(st.replicas, st.leader)
	for _, f := range followers {
		c.node(f).Pause()
	}
	pending := values("inflight", 30)
	results := make(chan error, len(pending))
	acked := make(chan string, len(pending))
	for _, v := range pending {
		cl.Produce(ctx, &kgo.Record{Topic: topic, Value: []byte(v)}, func(r *kgo.Record, err error) {
			if err == nil {
				acked <- string(r.Value)
			}
			results <- err
		})
	}
	select {
	case v := <-acked:
		t.Fatalf("%s acknowledged while both followers were paused", v)
	case <-time.After(time.Second):
	}
	c.node(st.leader).kill9()
	for _, f := range followers {
		c.node(f).Resume()
	}
	for range pending {
		select {
		case err := <-results:
			if err != nil {
				t.Logf("a retried record failed: %v", err)
			}
		case <-ctx.Done():
			t.Fatal("producer did not finish")
		}
	}
	close(acked)
	got := c.readAllSettled(topic)
	n := 0
	for v := range acked {
		n++
		if _, ok := got[v]; !ok {
			t.Fatalf("acknowledged record %s lost", v)
		}
	}
	for v := range committed {
		if _, ok := got[v]; !ok {
			t.Fatalf("acknowledged record %s lost", v)
		}
	}
	if n == 0 {
		t.Fatal("no retried record was acknowledged by the new leader")
	}
	t.Logf("acks=all lesson: %d in-flight records retried and acknowledged by the new leader, none lost, none duplicated", n)
	c.restart(c.node(st.leader))
	c.waitPartition(topic, 0, 60*time.Second, "old leader back in the ISR", func(s partitionState) bool { return len(s.isr) == 3 })
	c.waitConverged(topic, 0, 60*time.Second)
}

// Lesson 3: a follower paused past replica.lag.time.max.ms leaves the ISR,
// then the two in-sync brokers crash, one after the other. All three brokers
// are down or paused at some point, so the metadata quorum runs on a separate
// controller-only node, as Kafka recommends: in combined mode the same faults
// would take the quorum down and no election could happen at all.
func TestLessonStaleReplica(t *testing.T) {
	needOwnCluster(t)
	for _, tc := range []struct {
		name    string
		minISR  string
		unclean string
	}{
		{"min2-clean", "2", "false"},
		{"min1-clean", "1", "false"},
		{"min1-unclean", "1", "true"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			staleReplicaLesson(t, tc.minISR, tc.unclean == "true")
		})
	}
}

func staleReplicaLesson(t *testing.T, minISR string, unclean bool) {
	c := startCluster(t, clusterOpts{brokers: 3, flags: replicationFlags(), separateController: true})
	adm := newAdmin(t, c.seeds())
	topic := newTopic(t, adm, 1, 3, map[string]*string{
		"min.insync.replicas":            kadm.StringPtr(minISR),
		"unclean.leader.election.enable": kadm.StringPtr(map[bool]string{true: "true", false: "false"}[unclean]),
	})
	c.waitTopicEverywhere(topic, 1, 3)
	st := c.waitPartition(topic, 0, 30*time.Second, "full ISR", func(s partitionState) bool { return len(s.isr) == 3 })
	ctx := ctxTimeout(t, 4*time.Minute)
	leader := st.leader
	followers := otherThan(st.replicas, leader)
	inSync, stale := followers[0], followers[1]

	cl := newClient(t, c.seeds(), kgo.RecordDeliveryTimeout(20*time.Second))
	early, err := produceValues(ctx, cl, topic, values("early", 20))
	must(t, err, "records every replica gets")
	c.waitConverged(topic, 0, 30*time.Second)

	c.node(stale).Pause()
	c.waitPartition(topic, 0, 30*time.Second, "the paused follower to leave the ISR", func(s partitionState) bool {
		return !slices.Contains(s.isr, stale) && len(s.isr) == 2
	})
	late, err := produceValues(ctx, cl, topic, values("late", 20))
	must(t, err, "records the stale follower misses")

	// First crash: the other in-sync follower.
	c.node(inSync).kill9()
	c.waitPartition(topic, 0, 30*time.Second, "the crashed follower to leave the ISR", func(s partitionState) bool {
		return len(s.isr) == 1 && s.isr[0] == leader
	})
	var during map[string]producedKey
	if minISR == "2" {
		code := rawProduceCode(t, c, topic, -1)
		if code != kerr.NotEnoughReplicas.Code {
			t.Fatalf("acks=all with ISR {%d} < min.insync.replicas=2: %v, want NOT_ENOUGH_REPLICAS", leader, kerr.ErrorForCode(code))
		}
		t.Logf("min.insync.replicas=2: writes refused with NOT_ENOUGH_REPLICAS while only the leader is in sync")
	} else {
		during, err = produceValues(ctx, cl, topic, values("during", 20))
		must(t, err, "acks=all with min.insync.replicas=1 and an ISR of one")
	}

	// Second crash: the leader. The stale follower comes back.
	c.node(leader).kill9()
	c.node(stale).Resume()
	if !unclean {
		// Offline until an in-sync replica returns, whatever the stale one does.
		c.waitPartition(topic, 0, 30*time.Second, "offline partition", func(s partitionState) bool { return s.leader == -1 })
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) {
			s, err := c.describe(topic, 0)
			if err == nil && s.leader != -1 {
				t.Fatalf("stale replica %d elected with unclean election disabled", s.leader)
			}
			time.Sleep(250 * time.Millisecond)
		}
		t.Logf("unclean.leader.election.enable=false: partition offline while only the stale replica is alive")
		c.restart(c.node(leader))
		if minISR == "2" {
			// KIP-966: the follower that left the ISR last, while it was
			// below min.insync.replicas, is an eligible leader replica; the
			// leader, back from a crash (no clean-shutdown epoch), may have
			// lost what it had not flushed and is not elected while an
			// eligible replica may still return.
			deadline := time.Now().Add(5 * time.Second)
			for time.Now().Before(deadline) {
				if s, err := c.describe(topic, 0); err == nil && s.leader != -1 {
					t.Fatalf("broker %d elected while eligible leader replica %d is down", s.leader, inSync)
				}
				time.Sleep(250 * time.Millisecond)
			}
			t.Logf("min.insync.replicas=2: partition offline, waiting for eligible leader replica %d", inSync)
			// It crashed too: back, it leaves the ELR, which is then empty,
			// and the last known leader leads again (Kafka 4.x's last resort).
			c.restart(c.node(inSync))
		}
		c.waitPartition(topic, 0, 60*time.Second, "the last in-sync replica to lead again", func(s partitionState) bool { return s.leader == leader })
		got := c.readAllSettled(topic)
		for _, set := range []map[string]producedKey{early, late, during} {
			for v := range set {
				if _, ok := got[v]; !ok {
					t.Fatalf("acknowledged record %s lost", v)
				}
			}
		}
		t.Logf("nothing lost: %d records", len(got))
	} else {
		c.waitPartition(topic, 0, 30*time.Second, "the stale replica elected uncleanly", func(s partitionState) bool { return s.leader == stale })
		got := c.readAllSettled(topic)
		for v := range early {
			if _, ok := got[v]; !ok {
				t.Fatalf("record %s, which the stale replica had, is missing", v)
			}
		}
		var lost []string
		for _, set := range []map[string]producedKey{late, during} {
			for v := range set {
				if _, ok := got[v]; ok {
					t.Fatalf("record %s survived, but the stale replica never had it", v)
				}
				lost = append(lost, v)
			}
		}
		slices.Sort(lost)
		t.Logf("unclean election: stale replica %d leads; %d acknowledged records lost: %s .. %s", stale, len(lost), lost[0], lost[len(lost)-1])
		c.restart(c.node(leader))
	}
	if !c.node(inSync).Running() {
		c.restart(c.node(inSync))
	}
	c.waitPartition(topic, 0, 60*time.Second, "all replicas in sync again", func(s partitionState) bool { return len(s.isr) == 3 })
	c.waitConverged(topic, 0, 60*time.Second)
}

// rawProduceCode sends one acks-level produce of a small batch and returns
// the partition's error code (no client retries hide it).
func rawProduceCode(t *testing.T, c *cluster, topic string, acks int16) int16 {
	t.Helper()
	cl := newClient(t, c.runningSeeds())
	b := rawBatch{producerID: -1, producerEpoch: -1, baseSequence: -1, timestamps: []int64{time.Now().UnixMilli()}}.encode()
	var code int16
	waitFor(t, 20*time.Second, "a produce answer from the leader", func() error {
		st, err := c.describe(topic, 0)
		if err != nil {
			return err
		}
		if _, err := cl.Request(ctxTimeout(t, 5*time.Second), kmsg.NewPtrMetadataRequest()); err != nil {
			return err
		}
		resp, err := cl.Broker(int(st.leader)).Request(ctxTimeout(t, 15*time.Second), produceRawReq(topic, 0, acks, b))
		if err != nil {
			return err
		}
		code = resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode
		if code == kerr.NotLeaderForPartition.Code || code == kerr.LeaderNotAvailable.Code {
			return kerr.ErrorForCode(code)
		}
		return nil
	})
	return code
}

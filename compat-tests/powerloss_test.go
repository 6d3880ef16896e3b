package compat

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Power-loss tests on real brokers (issue 19). A power cut is a kill -9
// followed by the loss of everything the broker had not synced, as its own
// fsync bookkeeping journal says (internal/powercut, node.powerCut).
//
// They take over a minute together, so make test leaves them out (it must
// stay under ten minutes): make powerloss runs them (KBROKER_POWERLOSS=1).

// needPowerLoss skips a power-loss test unless KBROKER_POWERLOSS is set.
func needPowerLoss(t *testing.T) {
	needOwnCluster(t)
	if os.Getenv("KBROKER_POWERLOSS") == "" {
		t.Skip("a power-loss test: make powerloss (KBROKER_POWERLOSS=1)")
	}
}

// elrState is what DescribeTopicPartitions says of a partition (KIP-966).
type elrState struct {
	leader              int32
	isr, elr, lastKnown []int32
}

func (s elrState) String() string {
	return fmt.Sprintf("leader %d isr %v elr %v last known leader %v", s.leader, s.isr, s.elr, s.lastKnown)
}

// describeELR asks any serving broker for partition 0 of topic with
// DescribeTopicPartitions, the API that carries the ELR.
func (c *cluster) describeELR(topic string) (elrState, error) {
	var lastErr error
	for _, n := range c.nodes {
		if !n.Serving() {
			continue
		}
		cl, err := kgo.NewClient(kgo.SeedBrokers(n.clientAddr))
		if err != nil {
			return elrState{}, err
		}
		req := kmsg.NewPtrDescribeTopicPartitionsRequest()
		req.Topics = []kmsg.DescribeTopicPartitionsRequestTopic{{Topic: topic}}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		resp, err := req.RequestWith(ctx, cl)
		cancel()
		cl.Close()
		if err != nil {
			lastErr = err
			continue
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			lastErr = fmt.Errorf("node %d: no partition in %+v", n.id, resp)
			continue
		}
		p := resp.Topics[0].Partitions[0]
		return elrState{leader: p.LeaderID, isr: sorted(p.ISR), elr: sorted(p.EligibleLeaderReplicas), lastKnown: p.LastKnownELR}, nil
	}
	return elrState{}, fmt.Errorf("no broker answered: %v", lastErr)
}

// logLine reports whether one line of logs holds every part.
func logLine(logs string, parts ...string) bool {
	for _, line := range strings.Split(logs, "\n") {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(line, p)
		}
		if all {
			return true
		}
	}
	return false
}

func (c *cluster) waitELR(topic string, d time.Duration, what string, cond func(elrState) bool) elrState {
	c.t.Helper()
	var st elrState
	waitFor(c.t, d, what, func() error {
		var err error
		if st, err = c.describeELR(topic); err != nil {
			return err
		}
		if !cond(st) {
			return fmt.Errorf("%v", st)
		}
		return nil
	})
	return st
}

// KIP-966's scenario (RF 3, min.insync.replicas 2): the ISR shrinks to the
// leader while the followers shut down (cleanly) one after the other; the
// leader loses power, with it every acknowledged record it had not synced
// (all of them: nothing flushes by default). It comes back, but it may not
// lead: the follower that left the ISR last is an eligible leader replica
// (it holds everything below the HW, which stopped when the ISR fell below
// 2), so the partition waits for it, says so and refuses writes. The
// follower returns and leads; nothing acknowledged is lost.
//
// The same run with eligible.leader.replicas.version at 0 (UpdateFeatures,
// as an operator may) is Kafka's model before KIP-966: the leader, last ISR
// member, is elected again and every other replica truncates to its empty
// log; that variant asserts the loss, so that the test proves the ELR is
// what saves the records.
func TestKIP966PowerLossOfTheLastISRMember(t *testing.T) {
	needPowerLoss(t)
	t.Run("elr", func(t *testing.T) { kip966Scenario(t, true) })
	t.Run("elr-off", func(t *testing.T) { kip966Scenario(t, false) })
}

func kip966Scenario(t *testing.T, elr bool) {
	c := startCluster(t, clusterOpts{brokers: 3, flags: replicationFlags(), separateController: true, powercut: true, metrics: true})
	adm := newAdmin(t, c.seeds())
	if !elr {
		must(t, updateFeature(t, c.seeds(), "eligible.leader.replicas.version", 0), "turning eligible leader replicas off")
	}
	topic := newTopic(t, adm, 1, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")})
	c.waitTopicEverywhere(topic, 1, 3)
	st := c.waitPartition(topic, 0, 30*time.Second, "full ISR", func(s partitionState) bool { return len(s.isr) == 3 })
	leader := st.leader
	others := otherThan(st.replicas, leader)
	eligible, last := others[0], others[1]
	ctx := ctxTimeout(t, 5*time.Minute)
	cl := newClient(t, c.seeds(), kgo.RecordDeliveryTimeout(30*time.Second))

	acked, err := produceValues(ctx, cl, topic, values("three", 30))
	must(t, err, "producing with three in-sync replicas")
	c.node(last).stop()
	c.waitPartition(topic, 0, 30*time.Second, "two in sync", func(s partitionState) bool {
		return slices.Equal(s.isr, sorted([]int32{leader, eligible}))
	})
	two, err := produceValues(ctx, cl, topic, values("two", 30))
	must(t, err, "producing with two in-sync replicas")
	c.node(eligible).stop()
	c.waitELR(topic, 30*time.Second, "the ISR down to the leader, the follower eligible if ELR is on", func(s elrState) bool {
		return s.leader == leader && slices.Equal(s.isr, []int32{leader}) && slices.Equal(s.elr, map[bool][]int32{true: {eligible}}[elr])
	})
	if code := rawProduceCode(t, c, topic, -1); code != kerr.NotEnoughReplicas.Code {
		t.Fatalf("acks=all with the ISR below min.insync.replicas: %v, want NOT_ENOUGH_REPLICAS", kerr.ErrorForCode(code))
	}
	for v, k := range two {
		acked[v] = k
	}

	before := c.node(leader).logEndOffset(t, topic, 0)
	c.node(leader).powerCut()
	after := c.node(leader).logEndOffset(t, topic, 0)
	if after >= before {
		t.Fatalf("the power cut kept the leader's unsynced log (end %d, was %d): the scenario would test nothing", after, before)
	}
	t.Logf("leader %d lost power: its log now ends at %d (was %d, %d acknowledged records)", leader, after, before, len(acked))
	if !elr {
		// Kafka before KIP-966: the fenced last ISR member stays in the ISR
		// and leads again, with what it kept.
		c.restart(c.node(leader))
		c.waitPartition(topic, 0, 60*time.Second, "the stale last ISR member to lead again", func(s partitionState) bool { return s.leader == leader })
		c.restart(c.node(eligible))
		c.restart(c.node(last))
		c.waitPartition(topic, 0, 90*time.Second, "every replica back in sync", func(s partitionState) bool { return len(s.isr) == 3 })
		got := c.readAllSettled(topic)
		lost := 0
		for v := range acked {
			if _, ok := got[v]; !ok {
				lost++
			}
		}
		if lost == 0 {
			t.Fatal("without eligible leader replicas nothing was lost: the scenario does not reach KIP-966's hole")
		}
		t.Logf("without eligible leader replicas: %d of %d acknowledged records lost (Kafka's hole before KIP-966)", lost, len(acked))
		return
	}
	// No broker is up to ask: the controller says when it fenced the leader.
	waitFor(t, 30*time.Second, "the controller to fence the leader", func() error {
		if !logLine(c.controller.logs(), "waiting for an eligible leader replica", "topic="+topic, fmt.Sprintf("previous_leader=%d", leader)) {
			return fmt.Errorf("the controller has not said the partition waits for an eligible leader replica")
		}
		return nil
	})

	c.restart(c.node(leader))
	c.waitELR(topic, 60*time.Second, "the leader back and out of the ELR", func(s elrState) bool {
		return s.leader == -1 && slices.Equal(s.elr, []int32{eligible}) && slices.Equal(s.lastKnown, []int32{leader})
	})
	waitFor(t, 60*time.Second, "the restarted leader serving", func() error {
		if !c.node(leader).Serving() {
			return fmt.Errorf("not serving")
		}
		return nil
	})
	hold := time.Now().Add(5 * time.Second)
	for time.Now().Before(hold) {
		if s, err := c.describeELR(topic); err == nil && s.leader != -1 {
			t.Fatalf("elected while the eligible leader replica is down: %v", s)
		}
		time.Sleep(250 * time.Millisecond)
	}
	waitFor(t, 30*time.Second, "the metric of partitions waiting for an ELR member", func() error {
		if v := scrape(t, c.node(leader))[`kbroker_offline_partitions_waiting{waiting_for="elr"}`]; v != 1 {
			return fmt.Errorf("kbroker_offline_partitions_waiting{waiting_for=\"elr\"} = %v", v)
		}
		return nil
	})
	refused := newClient(t, c.runningSeeds(), kgo.RecordDeliveryTimeout(3*time.Second))
	if err := refused.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("refused")}).FirstErr(); err == nil {
		t.Fatal("a write was acknowledged while the partition had no leader")
	}
	t.Logf("partition offline, waiting for eligible leader replica %d; writes refused", eligible)

	c.restart(c.node(eligible))
	c.waitPartition(topic, 0, 60*time.Second, "the eligible replica to lead", func(s partitionState) bool { return s.leader == eligible })
	if !logLine(c.controller.logs(), "partition led by an eligible leader replica", "topic="+topic, fmt.Sprintf("leader=%d", eligible)) {
		t.Fatal("the controller did not say the partition is led from its ELR")
	}
	c.restart(c.node(last))
	c.waitPartition(topic, 0, 90*time.Second, "every replica back in sync", func(s partitionState) bool { return len(s.isr) == 3 })
	got := c.readAllSettled(topic)
	var lost []string
	for v := range acked {
		if _, ok := got[v]; !ok {
			lost = append(lost, v)
		}
	}
	if len(lost) > 0 {
		slices.Sort(lost)
		t.Fatalf("%d acknowledged records lost: %v", len(lost), lost)
	}
	c.waitConverged(topic, 0, 60*time.Second)
	t.Logf("nothing lost: %d acknowledged records, all read back from %d", len(acked), eligible)
}

// Durable acks (flush.messages=1): an acks=all write is acknowledged once
// every ISR member has it on disk, so that all three replicas losing power
// at once lose nothing acknowledged. The same cut loses acknowledged
// records of a topic with Kafka's default flush policy (page cache only),
// which shows that the cut is real.
func TestDurableAcksSurvivePowerLossOfEveryReplica(t *testing.T) {
	needPowerLoss(t)
	c := startCluster(t, clusterOpts{brokers: 3, flags: replicationFlags(), powercut: true})
	adm := newAdmin(t, c.seeds())
	durable := newTopic(t, adm, 1, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2"), "flush.messages": kadm.StringPtr("1")})
	plain := uniqueTopic(t.Name() + "-default")
	resp, err := adm.CreateTopic(ctxTimeout(t, 30*time.Second), 1, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}, plain)
	must(t, err, "creating %s", plain)
	must(t, resp.Err, "creating %s", plain)
	for _, topic := range []string{durable, plain} {
		c.waitTopicEverywhere(topic, 1, 3)
	}
	ctx := ctxTimeout(t, 5*time.Minute)
	producers := map[string]*steadyProducer{}
	for _, topic := range []string{durable, plain} {
		cl := newClient(t, c.seeds(), kgo.DefaultProduceTopic(topic), kgo.RecordDeliveryTimeout(5*time.Second))
		producers[topic] = startSteadyProducer(t, ctx, cl, topic, 200)
	}
	powerCutAll(c.nodes...)
	for _, n := range c.nodes {
		c.restart(n)
	}
	c.waitServing(90 * time.Second)
	// The producers stop only now: a write in flight at the cut waits for
	// metadata until a broker answers (and counts if acknowledged then).
	acked := map[string][]string{}
	for topic, p := range producers {
		acked[topic], _ = p.finish()
	}
	lost := map[string]int{}
	for _, topic := range []string{durable, plain} {
		c.waitPartition(topic, 0, 90*time.Second, topic+" led again", func(s partitionState) bool { return s.leader >= 0 })
		got := c.readAllSettled(topic)
		for _, v := range acked[topic] {
			if _, ok := got[v]; !ok {
				lost[topic]++
			}
		}
		t.Logf("%s: %d acknowledged, %d read back, %d acknowledged lost", topic, len(acked[topic]), len(got), lost[topic])
	}
	if lost[durable] > 0 {
		t.Fatalf("durable acks lost %d acknowledged records in the power cut", lost[durable])
	}
	if lost[plain] == 0 {
		t.Fatalf("the default flush policy lost nothing in the power cut: the cut dropped nothing, the test proves nothing")
	}
}

// A disk that fails fsync takes the broker down (a failed log dir halts
// it, as Kafka does without directory assignment): the controller fences it
// and elects another leader, writes go on there, nothing acknowledged is
// lost, and the broker rejoins once its disk works again.
func TestFailedLogDirMovesLeadership(t *testing.T) {
	needPowerLoss(t)
	c := startCluster(t, clusterOpts{brokers: 3, flags: replicationFlags(), powercut: true})
	adm := newAdmin(t, c.seeds())
	topic := newTopic(t, adm, 1, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2"), "flush.messages": kadm.StringPtr("1")})
	c.waitTopicEverywhere(topic, 1, 3)
	st := c.waitPartition(topic, 0, 30*time.Second, "full ISR", func(s partitionState) bool { return len(s.isr) == 3 })
	ctx := ctxTimeout(t, 4*time.Minute)
	cl := newClient(t, c.seeds(), kgo.DefaultProduceTopic(topic))
	p := startSteadyProducer(t, ctx, cl, "v", 50)

	failing := c.node(st.leader)
	must(t, os.WriteFile(failing.failSyncIf, nil, 0o644), "failing the disk")
	if !failing.WaitExit(30 * time.Second) {
		t.Fatalf("broker %d still runs after its disk failed", failing.id)
	}
	if logs := failing.logs(); !strings.Contains(logs, "halting: log dir failed") || !strings.Contains(logs, "broker failed") {
		t.Fatalf("broker %d exited without saying its log dir failed:\n%s", failing.id, tail(logs, 4096))
	}
	moved := c.waitPartition(topic, 0, 30*time.Second, "another leader", func(s partitionState) bool {
		return s.leader >= 0 && s.leader != failing.id
	})
	t.Logf("broker %d halted on its failed disk; %d leads", failing.id, moved.leader)
	n := len(p.acknowledged())
	waitFor(t, 60*time.Second, "writes on the new leader", func() error {
		if got := len(p.acknowledged()); got < n+50 {
			return fmt.Errorf("%d acknowledged since", got-n)
		}
		return nil
	})
	acked, err := p.finish()
	must(t, err, "producing through the failover")

	must(t, os.Remove(failing.failSyncIf), "repairing the disk")
	c.restart(failing)
	c.waitPartition(topic, 0, 90*time.Second, "the broker back in the ISR", func(s partitionState) bool { return len(s.isr) == 3 })
	got := c.readAllSettled(topic)
	for _, v := range acked {
		if _, ok := got[v]; !ok {
			t.Fatalf("acknowledged record %s lost", v)
		}
	}
	c.waitConverged(topic, 0, 60*time.Second)
	t.Logf("nothing lost: %d acknowledged records", len(acked))
}

// updateFeature sets a cluster feature's level with UpdateFeatures (a
// safe downgrade when it lowers it).
func updateFeature(t *testing.T, seeds []string, name string, level int16) error {
	t.Helper()
	req := kmsg.NewPtrUpdateFeaturesRequest()
	u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
	u.Feature, u.MaxVersionLevel, u.UpgradeType = name, level, 2
	req.FeatureUpdates, req.TimeoutMillis = []kmsg.UpdateFeaturesRequestFeatureUpdate{u}, 15000
	resp, err := req.RequestWith(ctxTimeout(t, 30*time.Second), newClient(t, seeds))
	if err != nil {
		return err
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return err
	}
	for _, r := range resp.Results {
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			return err
		}
	}
	return nil
}

package compat

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A follower paused past replica.lag.time.max.ms leaves the ISR and joins it
// again once resumed and caught up; a broker killed and restarted with its
// data catches up and rejoins too; every replica ends byte-identical.
func TestFollowerLeavesAndRejoinsISR(t *testing.T) {
	needOwnCluster(t)
	t.Parallel()
	c := startCluster(t, clusterOpts{brokers: 3, flags: replicationFlags()})
	adm := newAdmin(t, c.seeds())
	topic := newTopic(t, adm, 1, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")})
	c.waitTopicEverywhere(topic, 1, 3)
	st := c.waitPartition(topic, 0, 30*time.Second, "full ISR", func(s partitionState) bool { return len(s.isr) == 3 })
	ctx := ctxTimeout(t, 3*time.Minute)
	cl := newClient(t, c.seeds())

	follower := otherThan(st.replicas, st.leader)[0]
	c.node(follower).Pause()
	_, err := produceValues(ctx, cl, topic, values("while-paused", 20))
	must(t, err, "acks=all with one follower paused")
	c.waitPartition(topic, 0, 30*time.Second, "paused follower out of the ISR", func(s partitionState) bool {
		return !slices.Contains(s.isr, follower)
	})
	c.node(follower).Resume()
	c.waitPartition(topic, 0, 30*time.Second, "resumed follower back in the ISR", func(s partitionState) bool { return len(s.isr) == 3 })

	other := otherThan(st.replicas, st.leader, follower)[0]
	c.node(other).kill9()
	_, err = produceValues(ctx, cl, topic, values("while-down", 50))
	must(t, err, "acks=all with one broker down")
	c.restart(c.node(other))
	c.waitPartition(topic, 0, 60*time.Second, "restarted broker back in the ISR", func(s partitionState) bool { return len(s.isr) == 3 })
	c.waitConverged(topic, 0, 30*time.Second)
}

// A 3-broker cluster keeps serving acks=all produce and fetch with any one
// broker down; killing the active controller moves it and elections still
// happen.
func TestServesWithAnyBrokerDownAndControllerFailover(t *testing.T) {
	needOwnCluster(t)
	t.Parallel()
	c := startCluster(t, clusterOpts{brokers: 3, flags: replicationFlags()})
	adm := newAdmin(t, c.seeds())
	topic := newTopic(t, adm, 3, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")})
	ctx := ctxTimeout(t, 4*time.Minute)
	total := 0
	for _, down := range c.nodes {
		c.waitTopicEverywhere(topic, 3, 3)
		down.kill9()
		seeds := c.runningSeeds()
		cl := newClient(t, seeds, kgo.DefaultProduceTopic(topic), kgo.RecordDeliveryTimeout(60*time.Second))
		for i := range 30 {
			must(t, cl.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprintf("down-%d-%d", down.id, i))}).FirstErr(),
				"produce with broker %d down", down.id)
		}
		total += 30
		got := readAll(t, seeds, topic)
		if len(got) != total {
			t.Fatalf("with broker %d down: read %d records, want %d", down.id, len(got), total)
		}
		c.restart(down)
		c.waitServing(60 * time.Second)
		for p := int32(0); p < 3; p++ {
			c.waitPartition(topic, p, 60*time.Second, "full ISR", func(s partitionState) bool { return len(s.isr) == 3 })
		}
	}

	// Kill the active controller: another takes over and moves the
	// leaderships the dead node held (each of the three partitions has a
	// different preferred leader, so it held one).
	active := activeController(t, c)
	var led []int32
	for p := int32(0); p < 3; p++ {
		st := c.waitPartition(topic, p, 30*time.Second, "leader", func(s partitionState) bool { return s.leader >= 0 })
		if st.leader == active {
			led = append(led, p)
		}
	}
	c.node(active).kill9()
	next := int32(-1)
	waitFor(t, 30*time.Second, "a new active controller", func() error {
		next = activeController(t, c)
		if next == active || next < 0 {
			return fmt.Errorf("active controller still %d", next)
		}
		return nil
	})
	for _, p := range led {
		c.waitPartition(topic, p, 30*time.Second, "re-election by the new controller", func(s partitionState) bool {
			return s.leader >= 0 && s.leader != active
		})
	}
	t.Logf("active controller %d killed; %d took over and re-elected partitions %v", active, next, led)
	cl := newClient(t, c.runningSeeds(), kgo.DefaultProduceTopic(topic))
	for i := range 10 {
		must(t, cl.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprintf("after-failover-%d", i))}).FirstErr(), "produce after controller failover")
	}
}

// activeController asks a live broker which node is the active controller
// (Metadata's controller id is the active controller in combined mode).
func activeController(t *testing.T, c *cluster) int32 {
	t.Helper()
	cl := newClient(t, c.runningSeeds())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req := kmsg.NewPtrDescribeClusterRequest()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return -1
	}
	return resp.ControllerID
}

// Idempotent producer state is replicated: after the leader dies, the new
// leader recognises a batch the old one acknowledged and answers it with the
// original offset instead of writing it twice; a gap is still refused.
func TestProducerStateSurvivesLeaderChange(t *testing.T) {
	needOwnCluster(t)
	t.Parallel()
	c := startCluster(t, clusterOpts{brokers: 3, flags: replicationFlags()})
	adm := newAdmin(t, c.seeds())
	topic := newTopic(t, adm, 1, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")})
	c.waitTopicEverywhere(topic, 1, 3)
	cl := newClient(t, c.seeds())
	ctx := ctxTimeout(t, 2*time.Minute)
	init, err := kmsg.NewPtrInitProducerIDRequest().RequestWith(ctx, cl)
	must(t, err, "InitProducerId")
	now := time.Now().UnixMilli()
	mk := func(seq int32) []byte {
		return rawBatch{producerID: init.ProducerID, producerEpoch: init.ProducerEpoch, baseSequence: seq, timestamps: []int64{now, now}}.encode()
	}
	first, second := mk(0), mk(2)
	send := func(b []byte) kmsg.ProduceResponseTopicPartition {
		t.Helper()
		var out kmsg.ProduceResponseTopicPartition
		waitFor(t, 30*time.Second, "a produce answer from the leader", func() error {
			st, err := c.describe(topic, 0)
			if err != nil || st.leader < 0 {
				return fmt.Errorf("no leader (%v)", err)
			}
			cl := newClient(t, c.runningSeeds())
			if _, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl); err != nil {
				return err
			}
			resp, err := cl.Broker(int(st.leader)).Request(ctx, produceRawReq(topic, 0, -1, b))
			if err != nil {
				return err
			}
			out = resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0]
			if out.ErrorCode == kerr.NotLeaderForPartition.Code {
				return kerr.NotLeaderForPartition
			}
			return nil
		})
		return out
	}
	if p := send(first); p.ErrorCode != 0 || p.BaseOffset != 0 {
		t.Fatalf("first batch: %v at %d", kerr.ErrorForCode(p.ErrorCode), p.BaseOffset)
	}
	if p := send(second); p.ErrorCode != 0 || p.BaseOffset != 2 {
		t.Fatalf("second batch: %v at %d", kerr.ErrorForCode(p.ErrorCode), p.BaseOffset)
	}
	old := c.waitPartition(topic, 0, 10*time.Second, "leader", func(s partitionState) bool { return s.leader >= 0 })
	c.node(old.leader).kill9()
	c.waitPartition(topic, 0, 30*time.Second, "a new leader", func(s partitionState) bool {
		return s.leader >= 0 && s.leader != old.leader
	})
	if p := send(second); p.ErrorCode != 0 || p.BaseOffset != 2 {
		t.Fatalf("resent batch on the new leader: %v at %d, want a duplicate answered with offset 2", kerr.ErrorForCode(p.ErrorCode), p.BaseOffset)
	}
	if p := send(mk(7)); p.ErrorCode != kerr.OutOfOrderSequenceNumber.Code {
		t.Fatalf("gap on the new leader: %v, want OUT_OF_ORDER_SEQUENCE_NUMBER", kerr.ErrorForCode(p.ErrorCode))
	}
	if p := send(mk(4)); p.ErrorCode != 0 || p.BaseOffset != 4 {
		t.Fatalf("next batch on the new leader: %v at %d", kerr.ErrorForCode(p.ErrorCode), p.BaseOffset)
	}
}

// A broker stopped with SIGTERM hands its leaderships away before it exits
// (controlled shutdown): producers with acks=all see no failure and the
// partition has a new leader by the time the process is gone, without
// waiting for a session timeout.
func TestControlledShutdownMovesLeadership(t *testing.T) {
	needOwnCluster(t)
	t.Parallel()
	// A long session timeout: only a controlled shutdown can move the
	// leadership quickly.
	c := startCluster(t, clusterOpts{brokers: 3, flags: replicationFlags("--broker.session.timeout.ms=60000", "--broker.heartbeat.interval.ms=500")})
	adm := newAdmin(t, c.seeds())
	topic := newTopic(t, adm, 1, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")})
	c.waitTopicEverywhere(topic, 1, 3)
	st := c.waitPartition(topic, 0, 30*time.Second, "full ISR", func(s partitionState) bool { return len(s.isr) == 3 })
	cl := newClient(t, c.seeds(), kgo.DefaultProduceTopic(topic), kgo.RecordDeliveryTimeout(60*time.Second))
	ctx := ctxTimeout(t, 2*time.Minute)
	prod := startSteadyProducer(t, ctx, cl, "cs", 20)
	start := time.Now()
	c.node(st.leader).stop()
	took := time.Since(start)
	next, err := c.describe(topic, 0)
	must(t, err, "describe")
	if next.leader == st.leader || next.leader < 0 {
		t.Fatalf("after the clean stop (took %v) the leader is %d", took, next.leader)
	}
	if took > 30*time.Second {
		t.Fatalf("controlled shutdown took %v", took)
	}
	acked, err := prod.finish()
	must(t, err, "acks=all produce across the controlled shutdown")
	got := c.readAllSettled(topic)
	for _, v := range acked {
		if _, ok := got[v]; !ok {
			t.Fatalf("acknowledged %s lost", v)
		}
	}
	t.Logf("controlled shutdown of leader %d took %v; %d leads; %d records acked, none lost", st.leader, took, next.leader, len(acked))
}

// Kafka's split layout: a controller-only node and brokers with
// process.roles=broker and no controller listener; the brokers follow the
// metadata log as non-voters, also across a restart.
func TestBrokerOnlyNodes(t *testing.T) {
	needOwnCluster(t)
	t.Parallel()
	c := startCluster(t, clusterOpts{brokers: 2, separateController: true, brokerOnly: true, flags: replicationFlags()})
	adm := newAdmin(t, c.seeds())
	topic := newTopic(t, adm, 2, 2, nil)
	c.waitTopicEverywhere(topic, 2, 2)
	produceN(t, c.seeds(), topic, 50, "a")
	c.nodes[1].stop()
	c.restart(c.nodes[1])
	c.waitServing(60 * time.Second)
	c.waitTopicEverywhere(topic, 2, 2)
	produceN(t, c.seeds(), topic, 50, "b")
	consumeN(t, c.seeds(), topic, 100, time.Minute)
}

// The last broker of a cluster, stopped after the other two are gone, has
// no controller to grant its controlled shutdown: as Kafka's, it gives up
// after a while and shuts down anyway, flushing its logs and writing their
// clean-shutdown markers (it once waited 23 minutes until killed). Its next
// start is a clean one: it registers with the epoch the marker holds.
func TestLastBrokerStopsCleanlyWithoutQuorum(t *testing.T) {
	needOwnCluster(t)
	t.Parallel()
	c := startCluster(t, clusterOpts{brokers: 3, flags: replicationFlags()})
	adm := newAdmin(t, c.seeds())
	topic := newTopic(t, adm, 3, 3, nil)
	c.waitTopicEverywhere(topic, 3, 3)
	cl := newClient(t, c.seeds(), kgo.DefaultProduceTopic(topic))
	for i := range 30 {
		must(t, cl.ProduceSync(ctxTimeout(t, 30*time.Second), kgo.StringRecord(fmt.Sprintf("v%d", i))).FirstErr(), "produce")
	}
	cl.Close()
	c.node(1).stop()
	c.node(2).stop()
	last := c.node(3)
	marker := filepath.Join(last.dataDir, ".kafka_cleanshutdown")
	start := time.Now()
	last.Signal(syscall.SIGTERM)
	if !last.WaitExit(60 * time.Second) {
		last.Signal(syscall.SIGQUIT) // its goroutines, in the output below
		last.WaitExit(5 * time.Second)
		t.Fatalf("the last broker did not exit within 60 s of SIGTERM")
	}
	took := time.Since(start)
	b, err := os.ReadFile(marker)
	must(t, err, "the clean-shutdown marker of the last broker")
	t.Logf("last broker exited %v after SIGTERM; marker %s", took, b)

	for _, n := range c.nodes {
		c.restart(n)
	}
	c.waitServing(60 * time.Second)
	re := regexp.MustCompile(`broker registered" component=controller node=3 epoch=\d+ previous_clean_shutdown_epoch=(-?\d+)`)
	m := re.FindAllStringSubmatch(last.logs(), -1)
	if len(m) == 0 {
		t.Fatalf("node 3 did not log its registration")
	}
	if m[len(m)-1][1] == "-1" {
		t.Fatalf("node 3 came back unclean (previous_clean_shutdown_epoch=-1) after exiting in %v", took)
	}
}

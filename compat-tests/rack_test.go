package compat

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/protocol"
)

// Racks (issue 17): rack-aware placement, racks in Metadata and
// DescribeCluster, and fetching from the closest replica (KIP-392).

var testRacks = map[int32]string{1: "a", 2: "b", 3: "c"}

func rackFlags(id int32) []string { return []string{"--broker.rack=" + testRacks[id]} }

// Three brokers in racks a, b, c: an RF=3 topic has one replica per rack;
// Metadata and DescribeCluster show the racks; a consumer with
// client.rack=b reads only from the rack-b broker (its consumer-bytes
// metrics prove it, the leaders only name it as preferred read replica),
// and reads every acknowledged record exactly once across a leader change.
func TestRackAwareFollowerFetching(t *testing.T) {
	t.Parallel()
	needOwnCluster(t)
	c := startCluster(t, clusterOpts{brokers: 3, metrics: true, nodeFlags: rackFlags,
		flags: replicationFlags("--replica.selector.class=org.apache.kafka.common.replica.RackAwareReplicaSelector",
			"--min.insync.replicas=2")})
	admin := newClient(t, c.seeds())
	ctx := ctxTimeout(t, 3*time.Minute)

	md, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, admin)
	must(t, err, "metadata")
	for _, b := range md.Brokers {
		if b.Rack == nil || *b.Rack != testRacks[b.NodeID] {
			t.Errorf("Metadata: broker %d rack %v, want %q", b.NodeID, b.Rack, testRacks[b.NodeID])
		}
	}
	dc, err := kmsg.NewPtrDescribeClusterRequest().RequestWith(ctx, admin)
	must(t, err, "describe cluster")
	if len(dc.Brokers) != 3 {
		t.Fatalf("DescribeCluster: %d brokers", len(dc.Brokers))
	}
	for _, b := range dc.Brokers {
		if b.Rack == nil || *b.Rack != testRacks[b.NodeID] {
			t.Errorf("DescribeCluster: broker %d rack %v, want %q", b.NodeID, b.Rack, testRacks[b.NodeID])
		}
	}

	adm := newAdmin(t, c.seeds())
	topic := newTopic(t, adm, 6, 3, nil)
	c.waitTopicEverywhere(topic, 6, 3)
	leaders := map[int32]int32{}
	for p := range int32(6) {
		st, err := c.describe(topic, p)
		must(t, err, "describe %d", p)
		racks := map[string]bool{}
		for _, id := range st.replicas {
			racks[testRacks[id]] = true
		}
		if len(racks) != 3 {
			t.Fatalf("partition %d: replicas %v span racks %v, want a, b and c", p, st.replicas, racks)
		}
		leaders[p] = st.leader
	}

	// Round robin: every partition, those led outside rack b too, gets records
	// (the default sticky partitioner puts small records in one partition).
	producer := newClient(t, c.seeds(), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	prod := startSteadyProducer(t, ctx, producer, "rack", 50)
	consumer := newSessionConsumer(t, c.seeds(), topic, kgo.Rack("b"))
	consumer.await(prod.acknowledged(), time.Minute)

	// A leader change: the leader of a partition led outside rack b
	// shuts down (its leaderships move), while records flow.
	var victim *node
	for p := range int32(6) {
		if leaders[p] != 2 {
			victim = c.node(leaders[p])
			break
		}
	}
	if victim == nil {
		t.Fatal("every partition is led in rack b: no leader change to make away from the consumer's replica")
	}
	served := func(n *node) (leader, follower, preferred float64) {
		m := scrape(t, n)
		return m[fmt.Sprintf(`kbroker_consumer_fetch_bytes_total{replica="leader",topic=%q}`, topic)],
			m[fmt.Sprintf(`kbroker_consumer_fetch_bytes_total{replica="follower",topic=%q}`, topic)],
			m[fmt.Sprintf(`kbroker_fetch_preferred_replica_total{topic=%q}`, topic)]
	}
	checkOnlyRackB := func(when string) {
		t.Helper()
		for _, n := range c.nodes {
			if !n.Running() {
				continue
			}
			l, f, pref := served(n)
			switch {
			case n.id == 2 && f == 0:
				t.Errorf("%s: the rack-b broker served no consumer bytes as a follower (leader %v)", when, l)
			case n.id != 2 && l+f > 0:
				t.Errorf("%s: broker %d (rack %s) served the rack-b consumer %v bytes", when, n.id, testRacks[n.id], l+f)
			case n.id != 2 && when == "before the leader change" && pref == 0:
				t.Errorf("%s: broker %d never named a preferred read replica", when, n.id)
			}
		}
	}
	checkOnlyRackB("before the leader change")
	victim.stop()
	waitFor(t, 30*time.Second, "new leaders", func() error {
		for p := range int32(6) {
			st, err := c.describe(topic, p)
			if err != nil {
				return err
			}
			if st.leader == victim.id || st.leader < 0 {
				return fmt.Errorf("partition %d led by %d", p, st.leader)
			}
		}
		return nil
	})
	waitFor(t, 30*time.Second, "more records after the change", func() error {
		if n := len(prod.acknowledged()); n < 150 {
			return fmt.Errorf("%d acked", n)
		}
		return nil
	})
	acked, err := prod.finish()
	if err != nil && !kerr.IsRetriable(err) {
		t.Fatalf("producer: %v", err)
	}
	consumer.await(acked, time.Minute)
	checkOnlyRackB("after the leader change")
	t.Logf("%d records read exactly once from the rack-b replica across broker %d's shutdown", len(acked), victim.id)
}

// A follower serving consumers learns each HW move at once: its session's
// long poll on the leader answers a changed HW without waiting for data or
// replica.fetch.wait.max.ms (5 s here). A record acknowledged with acks=all
// reaches a consumer reading from a follower well within that.
func TestFollowerLearnsHighWatermarkPromptly(t *testing.T) {
	needOwnCluster(t)
	flags := replicationFlags("--replica.selector.class=org.apache.kafka.common.replica.RackAwareReplicaSelector")
	for i, f := range flags {
		if f == "--replica.fetch.wait.max.ms=200" {
			flags[i] = "--replica.fetch.wait.max.ms=5000"
		}
	}
	c := startCluster(t, clusterOpts{brokers: 3, metrics: true, nodeFlags: rackFlags, flags: append(flags, "--replica.lag.time.max.ms=30000")})
	admin := newClient(t, c.seeds())
	topic := createAssigned(t, admin, 1, 2, 3) // led in rack a; rack b holds a follower
	c.waitTopicEverywhere(topic, 1, 3)
	producer := newClient(t, c.seeds(), kgo.DefaultProduceTopic(topic))
	consumer := newSessionConsumer(t, c.seeds(), topic, kgo.Rack("b"))
	ctx := ctxTimeout(t, 2*time.Minute)
	var all []string
	for i := range 8 {
		v := fmt.Sprintf("prompt-%d", i)
		all = append(all, v)
		must(t, producer.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(), "produce %s", v)
		start := time.Now()
		consumer.await(all, time.Minute)
		if took := time.Since(start); i > 0 && took > 2*time.Second {
			t.Errorf("record %d reached the rack-b consumer %v after its ack (replica.fetch.wait.max.ms is 5 s)", i, took)
		}
	}
	served := scrape(t, c.node(2))[fmt.Sprintf(`kbroker_consumer_fetch_bytes_total{replica="follower",topic=%q}`, topic)]
	if served == 0 {
		t.Fatal("the rack-b follower served no consumer bytes: the test measured the leader")
	}
	checkFollowerFetchErrors(t, c, topic)
}

// checkFollowerFetchErrors sends raw requests for partition 0 of topic
// (led by broker 1, followed by broker 2) as Kafka answers them: a Fetch
// below v11 to the follower gets NOT_LEADER_OR_FOLLOWER, a v11 one records;
// the leader sends a v11 fetch with rack b to broker 2 without records;
// ListOffsets stays on the leader. The requests go at the versions given
// (kbroker's own protocol client; franz-go would raise them).
func checkFollowerFetchErrors(t *testing.T, c *cluster, topic string) {
	t.Helper()
	ctx := ctxTimeout(t, 30*time.Second)
	clients := map[int]*protocol.Client{}
	for _, id := range []int{1, 2} {
		clients[id] = protocol.NewClient(c.node(int32(id)).clientAddr, "compat-raw")
		defer clients[id].Close()
	}
	fetch := func(broker int, version int16, rack string) kmsg.FetchResponseTopicPartition {
		t.Helper()
		req := kmsg.NewPtrFetchRequest()
		req.SetVersion(version)
		req.ReplicaID, req.MaxBytes, req.Rack = -1, 1<<20, rack
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.PartitionMaxBytes = 1 << 20
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := clients[broker].Request(ctx, req)
		must(t, err, "fetch v%d from broker %d", version, broker)
		fr := resp.(*kmsg.FetchResponse)
		if len(fr.Topics) != 1 || len(fr.Topics[0].Partitions) != 1 {
			t.Fatalf("fetch v%d from broker %d: %+v", version, broker, fr)
		}
		return fr.Topics[0].Partitions[0]
	}
	if p := fetch(2, 10, ""); p.ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Errorf("Fetch v10 from a follower: error %v, want NOT_LEADER_OR_FOLLOWER", kerr.ErrorForCode(p.ErrorCode))
	}
	if p := fetch(2, 11, ""); p.ErrorCode != 0 || len(p.RecordBatches) == 0 {
		t.Errorf("Fetch v11 from a follower: error %v, %d bytes, want records", kerr.ErrorForCode(p.ErrorCode), len(p.RecordBatches))
	}
	if p := fetch(1, 11, "b"); p.ErrorCode != 0 || p.PreferredReadReplica != 2 || len(p.RecordBatches) != 0 {
		t.Errorf("Fetch v11 with rack b from the leader: error %v, preferred %d, %d bytes; want replica 2, no records",
			kerr.ErrorForCode(p.ErrorCode), p.PreferredReadReplica, len(p.RecordBatches))
	}
	lo := kmsg.NewPtrListOffsetsRequest()
	lo.ReplicaID = -1
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = topic
	lp := kmsg.NewListOffsetsRequestTopicPartition()
	lp.Timestamp = -1
	lt.Partitions = append(lt.Partitions, lp)
	lo.Topics = append(lo.Topics, lt)
	resp, err := clients[2].Request(ctx, lo)
	must(t, err, "list offsets from broker 2")
	if code := resp.(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0].ErrorCode; code != kerr.NotLeaderForPartition.Code {
		t.Errorf("ListOffsets from a follower: error %v, want NOT_LEADER_OR_FOLLOWER", kerr.ErrorForCode(code))
	}
}

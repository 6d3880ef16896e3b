package compat

import (
	"bytes"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Replication throttles (issue 17): a reassignment throttled as
// kafka-reassign-partitions --throttle sets it up moves at the throttled
// rate, not at disk speed, and loses nothing.

// throttleReassignment fills a one-partition topic on {1,2,3} with size
// bytes, reassigns it to {2,3,4} with throttle (the configs
// kafka-reassign-partitions --throttle would set) and returns how long the
// move took; the moved copy must be byte for byte the leader's.
func throttleReassignment(t *testing.T, c *cluster, size int, throttle func(adm *kadm.Client, topic string)) (string, time.Duration) {
	t.Helper()
	adm := newAdmin(t, c.seeds())
	ctx := ctxTimeout(t, 4*time.Minute)
	topic := uniqueTopic("throttle")
	createTopicAssigned(t, c.seeds(), topic, []int32{1, 2, 3}, nil)
	t.Cleanup(func() { adm.DeleteTopics(ctxTimeout(t, 10*time.Second), topic) })
	c.waitTopicEverywhere(topic, 1, 3)
	cl := newClient(t, c.seeds(), kgo.DefaultProduceTopic(topic), kgo.ProducerBatchCompression(kgo.NoCompression()))
	value := randomValue(64 << 10)
	for range size / len(value) {
		cl.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Errorf("filling the partition: %v", err)
			}
		})
	}
	must(t, cl.Flush(ctx), "filling the partition")
	throttle(adm, topic)

	start := time.Now()
	reassign := kadm.AlterPartitionAssignmentsReq{}
	reassign.Assign(topic, 0, []int32{2, 3, 4})
	res, err := adm.AlterPartitionAssignments(ctx, reassign)
	must(t, err, "AlterPartitionAssignments")
	must(t, res.Error(), "AlterPartitionAssignments")
	c.waitPartition(topic, 0, 3*time.Minute, "replicas {2,3,4} with a full ISR", func(s partitionState) bool {
		return slices.Equal(sorted(s.replicas), []int32{2, 3, 4}) && slices.Equal(s.isr, []int32{2, 3, 4})
	})
	took := time.Since(start)
	moved, leader := c.node(4).logBytes(t, topic, 0), c.node(2).logBytes(t, topic, 0)
	if len(moved) < size || !bytes.Equal(moved, leader) {
		t.Fatalf("the moved replica holds %d bytes, broker 2 %d: they differ or fall short of %d", len(moved), len(leader), size)
	}
	return topic, took
}

// moveBackUnthrottled removes the throttle configs (as
// kafka-reassign-partitions --verify does once a move is done) and moves
// the partition back to {1,2,3}: at disk speed, far below throttled.
func moveBackUnthrottled(t *testing.T, c *cluster, topic string, remove func(adm *kadm.Client)) time.Duration {
	t.Helper()
	adm := newAdmin(t, c.seeds())
	remove(adm)
	start := time.Now()
	reassign := kadm.AlterPartitionAssignmentsReq{}
	reassign.Assign(topic, 0, []int32{1, 2, 3})
	res, err := adm.AlterPartitionAssignments(ctxTimeout(t, time.Minute), reassign)
	must(t, err, "AlterPartitionAssignments")
	must(t, res.Error(), "AlterPartitionAssignments")
	c.waitPartition(topic, 0, time.Minute, "replicas {1,2,3} with a full ISR", func(s partitionState) bool {
		return slices.Equal(sorted(s.replicas), []int32{1, 2, 3}) && slices.Equal(s.isr, []int32{1, 2, 3})
	})
	return time.Since(start)
}

func alterBroker(t *testing.T, adm *kadm.Client, broker int32, key, value string) {
	t.Helper()
	alterBrokerConfig(t, adm, broker, kadm.AlterConfig{Name: key, Value: &value})
}

// alterBrokerConfig makes one IncrementalAlterConfigs change of a
// broker's dynamic configs and checks the answer.
func alterBrokerConfig(t *testing.T, adm *kadm.Client, broker int32, c kadm.AlterConfig) {
	t.Helper()
	res, err := adm.AlterBrokerConfigs(ctxTimeout(t, 30*time.Second), []kadm.AlterConfig{c}, broker)
	must(t, err, "AlterBrokerConfigs %s", c.Name)
	for _, r := range res {
		must(t, r.Err, "AlterBrokerConfigs %s on %d: %s", c.Name, broker, r.ErrMessage)
	}
}

func alterTopic(t *testing.T, adm *kadm.Client, topic, key, value string) {
	t.Helper()
	res, err := adm.AlterTopicConfigs(ctxTimeout(t, 30*time.Second), []kadm.AlterConfig{{Name: key, Value: &value}}, topic)
	must(t, err, "AlterTopicConfigs %s", key)
	for _, r := range res {
		must(t, r.Err, "AlterTopicConfigs %s: %s", key, r.ErrMessage)
	}
}

// The acceptance: a 60 MiB partition moved to a new broker with a 2 MiB/s
// follower throttle takes about 30 s (an unthrottled move of it takes a
// second or two here), and the new copy is the leader's, byte for byte.
func TestReassignmentFollowerThrottle(t *testing.T) {
	needOwnCluster(t)
	t.Parallel()
	const size, rate = 60 * mib, 2 * mib
	c := startCluster(t, clusterOpts{brokers: 4, flags: replicationFlags()})
	topic, took := throttleReassignment(t, c, size, func(adm *kadm.Client, topic string) {
		alterBroker(t, adm, 4, "follower.replication.throttled.rate", strconv.Itoa(rate))
		alterTopic(t, adm, topic, "follower.replication.throttled.replicas", "0:4")
	})
	want := time.Duration(float64(size) / rate * float64(time.Second))
	if took < want*8/10 || took > want*14/10 {
		t.Errorf("the throttled move of %d MiB took %v, want about %v at %d MiB/s", size/mib, took, want, rate/mib)
	}
	back := moveBackUnthrottled(t, c, topic, func(adm *kadm.Client) {
		alterBrokerConfig(t, adm, 4, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: "follower.replication.throttled.rate"})
		alterTopic(t, adm, topic, "follower.replication.throttled.replicas", "")
	})
	if back > want/3 {
		t.Errorf("the unthrottled move back took %v, not far below the throttled %v", back, took)
	}
	t.Logf("moved %d MiB at a %d MiB/s follower throttle in %v (%.2f MiB/s); back unthrottled in %v",
		size/mib, rate/mib, took.Round(100*time.Millisecond), float64(size)/mib/took.Seconds(), back.Round(100*time.Millisecond))
}

// The leader side: the same move throttled by the leader's
// leader.replication.throttled.rate (the topic's
// leader.replication.throttled.replicas naming the existing replicas, as
// kafka-reassign-partitions sets them); the in-sync followers keep up.
func TestReassignmentLeaderThrottle(t *testing.T) {
	needOwnCluster(t)
	t.Parallel()
	const size, rate = 20 * mib, 2 * mib
	c := startCluster(t, clusterOpts{brokers: 4, flags: replicationFlags()})
	_, took := throttleReassignment(t, c, size, func(adm *kadm.Client, topic string) {
		for _, b := range []int32{1, 2, 3} {
			alterBroker(t, adm, b, "leader.replication.throttled.rate", strconv.Itoa(rate))
		}
		alterTopic(t, adm, topic, "leader.replication.throttled.replicas", "0:1,0:2,0:3")
	})
	want := time.Duration(float64(size) / rate * float64(time.Second))
	if took < want*7/10 || took > want*16/10 {
		t.Errorf("the leader-throttled move of %d MiB took %v, want about %v", size/mib, took, want)
	}
	t.Logf("moved %d MiB at a %d MiB/s leader throttle in %v (%.2f MiB/s)", size/mib, rate/mib,
		took.Round(100*time.Millisecond), float64(size)/mib/took.Seconds())
}

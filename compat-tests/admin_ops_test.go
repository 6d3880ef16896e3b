package compat

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Altering min.insync.replicas on a live topic switches acks=all produce
// between NOT_ENOUGH_REPLICAS and success with one broker down, no restart.
func TestAlterMinISRLive(t *testing.T) {
	needOwnCluster(t)
	t.Parallel()
	c := startCluster(t, clusterOpts{brokers: 3, flags: replicationFlags()})
	adm := newAdmin(t, c.seeds())
	topic := newTopic(t, adm, 1, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")})
	c.waitTopicEverywhere(topic, 1, 3)
	st := c.waitPartition(topic, 0, 30*time.Second, "full ISR", func(s partitionState) bool { return len(s.isr) == 3 })
	down := otherThan(st.replicas, st.leader)[0]
	c.node(down).kill9()
	c.waitPartition(topic, 0, 30*time.Second, "ISR without the dead broker", func(s partitionState) bool { return len(s.isr) == 2 })
	alter := func(v string) {
		t.Helper()
		resp, err := newAdmin(t, c.runningSeeds()).AlterTopicConfigs(ctxTimeout(t, 20*time.Second),
			[]kadm.AlterConfig{{Op: kadm.SetConfig, Name: "min.insync.replicas", Value: kadm.StringPtr(v)}}, topic)
		must(t, err, "alter")
		for _, r := range resp {
			must(t, r.Err, "alter %s", r.Name)
		}
	}
	for _, tc := range []struct {
		minISR string
		want   *kerr.Error
	}{{"3", kerr.NotEnoughReplicas}, {"2", nil}, {"3", kerr.NotEnoughReplicas}, {"1", nil}} {
		alter(tc.minISR)
		var code int16
		waitFor(t, 20*time.Second, "the new min.insync.replicas to apply", func() error {
			code = rawProduceCode(t, c, topic, -1)
			if (tc.want == nil && code != 0) || (tc.want != nil && code != tc.want.Code) {
				return fmt.Errorf("min.insync.replicas=%s: %v", tc.minISR, kerr.ErrorForCode(code))
			}
			return nil
		})
		t.Logf("min.insync.replicas=%s with ISR of 2: %v", tc.minISR, kerr.ErrorForCode(code))
	}
}

// Retention by size and time deletes old segments and moves the log start;
// DeleteRecords moves it too; a consumer at a deleted offset gets
// OFFSET_OUT_OF_RANGE and resets by its policy.
func TestRetentionAndDeleteRecords(t *testing.T) {
	tg := singleNode(t, "--log.retention.check.interval.ms=200")
	adm := newAdmin(t, tg.seeds)
	topic := newTopic(t, adm, 1, 1, map[string]*string{"segment.bytes": kadm.StringPtr("16384")})
	cl := newClient(t, tg.seeds, kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(0), kgo.MaxBufferedRecords(1),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	ctx := ctxTimeout(t, time.Minute)
	old := time.Now().Add(-2 * time.Hour)
	for i := range 300 {
		r := &kgo.Record{Value: make([]byte, 200), Timestamp: old}
		must(t, cl.ProduceSync(ctx, r).FirstErr(), "produce %d", i)
	}
	startOf := func() int64 {
		starts, err := adm.ListStartOffsets(ctxTimeout(t, 5*time.Second), topic)
		must(t, err, "ListStartOffsets")
		o, _ := starts.Lookup(topic, 0)
		return o.Offset
	}
	if s := startOf(); s != 0 {
		t.Fatalf("log start %d before any retention", s)
	}
	// Size: keep about 32 KiB.
	resp, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.bytes", Value: kadm.StringPtr("32768")}}, topic)
	must(t, err, "alter retention.bytes")
	must(t, resp[0].Err, "alter retention.bytes")
	var bySize int64
	waitFor(t, 20*time.Second, "retention.bytes to delete segments", func() error {
		if bySize = startOf(); bySize == 0 {
			return errors.New("log start still 0")
		}
		return nil
	})
	// Time: the records are two hours old.
	resp, err = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
		{Op: kadm.DeleteConfig, Name: "retention.bytes"},
		{Op: kadm.SetConfig, Name: "retention.ms", Value: kadm.StringPtr("3600000")},
	}, topic)
	must(t, err, "alter retention.ms")
	must(t, resp[0].Err, "alter retention.ms")
	var byTime int64
	waitFor(t, 20*time.Second, "retention.ms to delete every rolled segment", func() error {
		if byTime = startOf(); byTime <= bySize {
			return fmt.Errorf("log start %d", byTime)
		}
		return nil
	})
	t.Logf("log start moved to %d by retention.bytes, then %d by retention.ms", bySize, byTime)

	// DeleteRecords moves it to the HW.
	del, err := adm.DeleteRecords(ctx, kadm.Offsets{topic: {0: {Topic: topic, Partition: 0, At: 300}}})
	must(t, err, "DeleteRecords")
	dr, _ := del.Lookup(topic, 0)
	must(t, dr.Err, "DeleteRecords")
	if dr.LowWatermark != 300 || startOf() != 300 {
		t.Fatalf("after DeleteRecords: low watermark %d, log start %d, want 300", dr.LowWatermark, startOf())
	}

	// A consumer at a deleted offset: OFFSET_OUT_OF_RANGE, then its reset policy.
	id := topicID(t, adm, topic)
	raw, err := rawFetch(topic, id, 0, 5, 0, 1).RequestWith(ctx, newClient(t, tg.seeds))
	must(t, err, "fetch")
	if code := raw.Topics[0].Partitions[0].ErrorCode; code != kerr.OffsetOutOfRange.Code {
		t.Fatalf("fetch below the log start: %v, want OFFSET_OUT_OF_RANGE", kerr.ErrorForCode(code))
	}
	must(t, cl.ProduceSync(ctx, &kgo.Record{Value: []byte("after")}).FirstErr(), "produce")
	consumer := newClient(t, tg.seeds, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(5)}}),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	fs := consumer.PollFetches(ctx)
	recs := fs.Records()
	if len(recs) != 1 || string(recs[0].Value) != "after" || recs[0].Offset != 300 {
		t.Fatalf("consumer reset: got %d records (first %+v)", len(recs), recs)
	}
}

// Growing a topic from 3 to 6 partitions: producers and group consumers pick
// up the new ones.
func TestCreatePartitionsPickedUp(t *testing.T) {
	tg := singleNode(t, groupFlags...)
	adm := newAdmin(t, tg.seeds)
	topic := newTopic(t, adm, 3, 1, nil)
	group := uniqueTopic("grow")
	m := startMember(t, tg.seeds, group, topic, "m", kgo.MetadataMaxAge(time.Second), kgo.MetadataMinAge(250*time.Millisecond))
	waitFor(t, 30*time.Second, "3 partitions assigned", func() error {
		if n := len(m.partitions()); n != 3 {
			return fmt.Errorf("%d assigned", n)
		}
		return nil
	})
	ctx := ctxTimeout(t, time.Minute)
	resp, err := adm.CreatePartitions(ctx, 3, topic)
	must(t, err, "CreatePartitions")
	must(t, resp[topic].Err, "CreatePartitions")
	waitFor(t, 30*time.Second, "6 partitions assigned", func() error {
		if n := len(m.partitions()); n != 6 {
			return fmt.Errorf("%d assigned", n)
		}
		return nil
	})
	p := newClient(t, tg.seeds, kgo.DefaultProduceTopic(topic), kgo.MetadataMaxAge(time.Second), kgo.MetadataMinAge(250*time.Millisecond),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	seen := map[int32]bool{}
	waitFor(t, 30*time.Second, "records in the new partitions", func() error {
		r := &kgo.Record{Value: []byte("x")}
		if err := p.ProduceSync(ctx, r).FirstErr(); err != nil {
			return err
		}
		seen[r.Partition] = true
		for i := int32(3); i < 6; i++ {
			if !seen[i] {
				return fmt.Errorf("nothing in partition %d yet", i)
			}
		}
		return nil
	})
	waitFor(t, 30*time.Second, "the group consumer reading the new partitions", func() error {
		got := map[int32]bool{}
		for _, r := range m.consumed() {
			got[r.Partition] = true
		}
		for i := int32(3); i < 6; i++ {
			if !got[i] {
				return fmt.Errorf("nothing consumed from partition %d", i)
			}
		}
		return nil
	})
}

// ElectLeaders moves leadership back to the preferred replica.
func TestElectPreferredLeader(t *testing.T) {
	needOwnCluster(t)
	t.Parallel()
	c := startCluster(t, clusterOpts{brokers: 3, flags: replicationFlags()})
	adm := newAdmin(t, c.seeds())
	topic := newTopic(t, adm, 1, 3, nil)
	c.waitTopicEverywhere(topic, 1, 3)
	st := c.waitPartition(topic, 0, 30*time.Second, "full ISR", func(s partitionState) bool { return len(s.isr) == 3 })
	preferred := st.replicas[0]
	if st.leader != preferred {
		t.Fatalf("new partition led by %d, not its preferred replica %d", st.leader, preferred)
	}
	c.node(preferred).kill9()
	c.waitPartition(topic, 0, 30*time.Second, "another leader", func(s partitionState) bool { return s.leader >= 0 && s.leader != preferred })
	c.restart(c.node(preferred))
	c.waitPartition(topic, 0, 60*time.Second, "the preferred replica back in the ISR", func(s partitionState) bool { return len(s.isr) == 3 })
	if s, _ := c.describe(topic, 0); s.leader == preferred {
		t.Fatal("leadership went back on its own with auto.leader.rebalance.enable=false")
	}
	res, err := newAdmin(t, c.runningSeeds()).ElectLeaders(ctxTimeout(t, 20*time.Second), kadm.ElectPreferredReplica, kadm.TopicsSet{topic: {0: {}}})
	must(t, err, "ElectLeaders")
	for _, ps := range res {
		for _, r := range ps {
			must(t, r.Err, "ElectLeaders %s-%d", r.Topic, r.Partition)
		}
	}
	c.waitPartition(topic, 0, 20*time.Second, "the preferred replica leading again", func(s partitionState) bool { return s.leader == preferred })
}

// With auto.leader.rebalance.enable, leadership goes back to the preferred
// replica on its own once it is in sync again.
func TestAutoLeaderRebalance(t *testing.T) {
	needOwnCluster(t)
	t.Parallel()
	flags := replicationFlags()
	for i, f := range flags {
		if f == "--auto.leader.rebalance.enable=false" {
			flags[i] = "--auto.leader.rebalance.enable=true"
		}
	}
	c := startCluster(t, clusterOpts{brokers: 3, flags: append(flags, "--leader.imbalance.check.interval.seconds=1")})
	adm := newAdmin(t, c.seeds())
	topic := newTopic(t, adm, 1, 3, nil)
	c.waitTopicEverywhere(topic, 1, 3)
	st := c.waitPartition(topic, 0, 30*time.Second, "full ISR", func(s partitionState) bool { return len(s.isr) == 3 })
	preferred := st.replicas[0]
	c.node(preferred).kill9()
	c.waitPartition(topic, 0, 30*time.Second, "another leader", func(s partitionState) bool { return s.leader >= 0 && s.leader != preferred })
	c.restart(c.node(preferred))
	c.waitPartition(topic, 0, 60*time.Second, "the preferred replica leading again on its own", func(s partitionState) bool {
		return s.leader == preferred
	})
}

// Topic configs take effect without a restart: max.message.bytes,
// message.timestamp.type (LogAppendTime stamps the broker's time) and the
// CreateTime bounds (message.timestamp.after.max.ms); an unknown or invalid
// value is refused with INVALID_CONFIG and a message.
func TestDynamicTopicConfigs(t *testing.T) {
	tg := singleNode(t)
	adm := newAdmin(t, tg.seeds)
	topic := newTopic(t, adm, 1, 1, nil)
	ctx := ctxTimeout(t, time.Minute)
	cl := newClient(t, tg.seeds)
	alter := func(name, value string) error {
		t.Helper()
		resp, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: name, Value: kadm.StringPtr(value)}}, topic)
		if err != nil {
			return err
		}
		return resp[0].Err
	}
	produce := func(b []byte) kmsg.ProduceResponseTopicPartition {
		t.Helper()
		resp, err := produceRawReq(topic, 0, 1, b).RequestWith(ctx, cl)
		must(t, err, "produce")
		return resp.Topics[0].Partitions[0]
	}
	now := time.Now().UnixMilli()
	big := rawBatch{producerID: -1, producerEpoch: -1, baseSequence: -1, timestamps: []int64{now}, keys: [][]byte{make([]byte, 3000)}}.encode()
	if p := produce(big); p.ErrorCode != 0 {
		t.Fatalf("3 KB batch under the default max.message.bytes: %v", kerr.ErrorForCode(p.ErrorCode))
	}
	must(t, alter("max.message.bytes", "2000"), "alter max.message.bytes")
	if p := produce(big); p.ErrorCode != kerr.MessageTooLarge.Code {
		t.Fatalf("3 KB batch with max.message.bytes=2000: %v, want MESSAGE_TOO_LARGE", kerr.ErrorForCode(p.ErrorCode))
	}

	future := rawBatch{producerID: -1, producerEpoch: -1, baseSequence: -1, timestamps: []int64{now + 2*3600*1000}}.encode()
	if p := produce(future); p.ErrorCode != kerr.InvalidTimestamp.Code {
		t.Fatalf("a record two hours ahead (after.max.ms default 1h): %v, want INVALID_TIMESTAMP", kerr.ErrorForCode(p.ErrorCode))
	}
	must(t, alter("message.timestamp.type", "LogAppendTime"), "alter message.timestamp.type")
	old := rawBatch{producerID: -1, producerEpoch: -1, baseSequence: -1, timestamps: []int64{1000}}.encode()
	p := produce(old)
	if p.ErrorCode != 0 || p.LogAppendTime < now {
		t.Fatalf("LogAppendTime produce: %v, log append time %d (want >= %d)", kerr.ErrorForCode(p.ErrorCode), p.LogAppendTime, now)
	}
	recs := consumeAll(t, tg.seeds, topic, p.BaseOffset+1)
	last := recs[len(recs)-1]
	if last.Timestamp.UnixMilli() != p.LogAppendTime {
		t.Fatalf("fetched timestamp %d, want the log append time %d", last.Timestamp.UnixMilli(), p.LogAppendTime)
	}

	for _, bad := range [][2]string{{"retention.ms", "soon"}, {"no.such.config", "1"}, {"cleanup.policy", "shred"}} {
		err := alter(bad[0], bad[1])
		if !errorsIs(err, kerr.InvalidConfig) {
			t.Fatalf("%s=%s: %v, want INVALID_CONFIG", bad[0], bad[1], err)
		}
	}
}

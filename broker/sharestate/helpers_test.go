package sharestate

import (
	"context"
	"errors"
	"iter"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/internal/coordkit"
	"github.com/kbroker/kbroker/internal/faketime"
	"github.com/kbroker/kbroker/internal/sharetest"
)

// memLog is an in-memory __share_group_state partition.
type memLog struct{ sharetest.MemLog }

// all returns the records from the log start, for a reload.
func (l *memLog) all() iter.Seq2[LoggedRecord, error] {
	recs := l.Records()
	return func(yield func(LoggedRecord, error) bool) {
		for _, r := range recs {
			if !yield(LoggedRecord{Offset: r.Offset, Record: r.Record}, nil) {
				return
			}
		}
	}
}

var errDisk = errors.New("disk on fire")

// env is a coordinator with one partition, led, and a manual clock.
type env struct {
	t     *testing.T
	clock *faketime.Clock
	log   *memLog
	c     *Coordinator
	opts  Options
}

func newEnv(t *testing.T, tweak func(*Options)) *env {
	t.Helper()
	clock := faketime.New(time.Unix(1_700_000_000, 0))
	opts := Options{NumPartitions: 1, Clock: coordkit.Clock{Now: clock.Now, AfterFunc: clock.AfterFunc}, UpdatesPerSnapshot: 3}
	if tweak != nil {
		tweak(&opts)
	}
	e := &env{t: t, clock: clock, log: &memLog{}, opts: opts}
	e.c = NewCoordinator(opts)
	if err := e.c.BecomeLeader(0, e.log, e.log.all()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.c.Close)
	return e
}

// reload is a failover: a new coordinator replays the log.
func (e *env) reload() {
	e.t.Helper()
	e.c.Close()
	e.c = NewCoordinator(e.opts)
	if err := e.c.BecomeLeader(0, e.log, e.log.all()); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(e.c.Close)
}

var (
	topicA = [16]byte{0xa}
	topicB = [16]byte{0xb}
)

func (e *env) initialize(group string, topic [16]byte, p, stateEpoch int32, start int64) int16 {
	req := kmsg.NewPtrInitializeShareGroupStateRequest()
	req.GroupID = group
	t := kmsg.NewInitializeShareGroupStateRequestTopic()
	t.TopicID = topic
	tp := kmsg.NewInitializeShareGroupStateRequestTopicPartition()
	tp.Partition, tp.StateEpoch, tp.StartOffset = p, stateEpoch, start
	t.Partitions = append(t.Partitions, tp)
	req.Topics = append(req.Topics, t)
	return e.c.InitializeShareGroupState(context.Background(), req).Topics[0].Partitions[0].ErrorCode
}

func (e *env) write(group string, topic [16]byte, p, stateEpoch, leaderEpoch int32, start int64, batches ...StateBatch) int16 {
	req := kmsg.NewPtrWriteShareGroupStateRequest()
	req.Version = 1
	req.GroupID = group
	t := kmsg.NewWriteShareGroupStateRequestTopic()
	t.TopicID = topic
	tp := kmsg.NewWriteShareGroupStateRequestTopicPartition()
	tp.Partition, tp.StateEpoch, tp.LeaderEpoch, tp.StartOffset = p, stateEpoch, leaderEpoch, start
	for _, b := range batches {
		sb := kmsg.NewWriteShareGroupStateRequestTopicPartitionStateBatch()
		sb.FirstOffset, sb.LastOffset, sb.DeliveryState, sb.DeliveryCount = b.FirstOffset, b.LastOffset, b.DeliveryState, b.DeliveryCount
		tp.StateBatches = append(tp.StateBatches, sb)
	}
	t.Partitions = append(t.Partitions, tp)
	req.Topics = append(req.Topics, t)
	return e.c.WriteShareGroupState(context.Background(), req).Topics[0].Partitions[0].ErrorCode
}

func (e *env) read(group string, topic [16]byte, p, leaderEpoch int32) kmsg.ReadShareGroupStateResponseTopicPartition {
	req := kmsg.NewPtrReadShareGroupStateRequest()
	req.GroupID = group
	t := kmsg.NewReadShareGroupStateRequestTopic()
	t.TopicID = topic
	tp := kmsg.NewReadShareGroupStateRequestTopicPartition()
	tp.Partition, tp.LeaderEpoch = p, leaderEpoch
	t.Partitions = append(t.Partitions, tp)
	req.Topics = append(req.Topics, t)
	return e.c.ReadShareGroupState(context.Background(), req).Topics[0].Partitions[0]
}

func (e *env) summary(group string, topic [16]byte, p int32) kmsg.ReadShareGroupStateSummaryResponseTopicPartition {
	req := kmsg.NewPtrReadShareGroupStateSummaryRequest()
	req.Version = 1
	req.GroupID = group
	t := kmsg.NewReadShareGroupStateSummaryRequestTopic()
	t.TopicID = topic
	tp := kmsg.NewReadShareGroupStateSummaryRequestTopicPartition()
	tp.Partition = p
	t.Partitions = append(t.Partitions, tp)
	req.Topics = append(req.Topics, t)
	return e.c.ReadShareGroupStateSummary(context.Background(), req).Topics[0].Partitions[0]
}

func (e *env) delete(group string, topic [16]byte, p int32) int16 {
	req := kmsg.NewPtrDeleteShareGroupStateRequest()
	req.GroupID = group
	t := kmsg.NewDeleteShareGroupStateRequestTopic()
	t.TopicID = topic
	tp := kmsg.NewDeleteShareGroupStateRequestTopicPartition()
	tp.Partition = p
	t.Partitions = append(t.Partitions, tp)
	req.Topics = append(req.Topics, t)
	return e.c.DeleteShareGroupState(context.Background(), req).Topics[0].Partitions[0].ErrorCode
}

func batchesOf(rp kmsg.ReadShareGroupStateResponseTopicPartition) []StateBatch {
	out := []StateBatch{}
	for _, b := range rp.StateBatches {
		out = append(out, StateBatch{b.FirstOffset, b.LastOffset, b.DeliveryState, b.DeliveryCount})
	}
	return out
}

func sb(first, last int64, state int8, count int16) StateBatch {
	return StateBatch{FirstOffset: first, LastOffset: last, DeliveryState: state, DeliveryCount: count}
}

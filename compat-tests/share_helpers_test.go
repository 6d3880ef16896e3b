package compat

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/internal/testsupport"
)

// shareFlags make share group tests react in seconds: locks and sessions
// as short as a second (the group sets its own values).
var shareFlags = []string{
	"--group.share.min.record.lock.duration.ms=1000",
	"--group.share.min.session.timeout.ms=2000",
	"--group.share.min.heartbeat.interval.ms=200",
	"--group.share.heartbeat.interval.ms=500",
	"--group.initial.rebalance.delay.ms=0",
}

// Acknowledgement types of ShareFetch and ShareAcknowledge.
const (
	shareAccept  int8 = 1
	shareRelease int8 = 2
	shareReject  int8 = 3
)

// setShareConfigs sets a share group's GROUP configs.
func setShareConfigs(t *testing.T, cl *kgo.Client, group string, kvs ...string) {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	for i := 0; i+1 < len(kvs); i += 2 {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value = kvs[i], kmsg.StringPtr(kvs[i+1])
		res.Configs = append(res.Configs, c)
	}
	req.Resources = append(req.Resources, res)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	must(t, err, "IncrementalAlterConfigs of group %s", group)
	if err := kerr.ErrorForCode(resp.Resources[0].ErrorCode); err != nil {
		t.Fatalf("group %s configs: %v", group, err)
	}
}

// shareMember speaks the share group protocol by hand, so that a test
// knows exactly which records it acquired and acknowledged: it heartbeats
// to the group coordinator and fetches one partition from its leader in a
// share session, opening a new session (epoch 0) whenever the leader moved
// or the broker it fetched from went away.
type shareMember struct {
	t         *testing.T
	cl        *kgo.Client
	group, id string
	topic     string
	topicID   [16]byte
	partition int32

	memberEpoch int32
	leader      int32 // the broker of the current session, -1: none
	session     int32 // the session's next epoch
}

func newShareMember(t *testing.T, seeds []string, group, id, topic string, partition int32) *shareMember {
	t.Helper()
	m := &shareMember{t: t, cl: newClient(t, seeds), group: group, id: id, topic: topic, partition: partition, leader: -1}
	ctx := ctxTimeout(t, 30*time.Second)
	td, err := kadm.NewClient(m.cl).ListTopics(ctx, topic)
	must(t, err, "metadata of %s", topic)
	m.topicID = td[topic].ID
	m.join(ctx)
	return m
}

// join heartbeats with epoch 0 until the member holds the partition
// (the share state is initialized before partitions are assigned).
func (m *shareMember) join(ctx context.Context) {
	m.t.Helper()
	epoch := int32(0)
	for {
		resp, err := m.heartbeat(ctx, epoch)
		if err == nil && resp.ErrorCode == 0 {
			epoch = resp.MemberEpoch
			if resp.Assignment != nil && len(resp.Assignment.TopicPartitions) > 0 {
				return
			}
		}
		if ctx.Err() != nil {
			m.t.Fatalf("%s never assigned (last: %v)", m.id, err)
		}
		testsupport.Sleep(ctx, 100*time.Millisecond) // the coordinator's assignment comes with a later heartbeat
	}
}

func (m *shareMember) heartbeat(ctx context.Context, epoch int32) (*kmsg.ShareGroupHeartbeatResponse, error) {
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.GroupID, req.MemberID, req.MemberEpoch = m.group, m.id, epoch
	if epoch == 0 {
		req.SubscribedTopicNames = []string{m.topic}
	}
	resp, err := req.RequestWith(ctx, m.cl)
	if err == nil && resp.ErrorCode == 0 {
		m.memberEpoch = resp.MemberEpoch
	}
	if err == nil && resp.ErrorCode != 0 {
		err = kerr.ErrorForCode(resp.ErrorCode)
	}
	return resp, err
}

// partitionLeader asks the cluster for the partition's leader.
func (m *shareMember) partitionLeader(ctx context.Context) (int32, error) {
	md, err := kadm.NewClient(m.cl).Metadata(ctx, m.topic)
	if err != nil {
		return -1, err
	}
	p, ok := md.Topics[m.topic].Partitions[m.partition]
	if !ok || p.Leader < 0 {
		return -1, fmt.Errorf("%s-%d has no leader", m.topic, m.partition)
	}
	return p.Leader, nil
}

// shareAck is one acknowledgement batch.
type shareAck struct {
	first, last int64
	typ         int8
}

// fetched is what one ShareFetch handed out: offset -> delivery count.
type fetched map[int64]int16

// fetch acquires up to max records (and piggy-backs acks), at most one
// attempt; the error says why nothing came back (the caller retries with
// fetchRetrying). An acknowledgement error is returned as ackErr.
func (m *shareMember) fetch(ctx context.Context, max int32, acks ...shareAck) (got fetched, ackErr, err error) {
	if m.leader < 0 {
		if m.leader, err = m.partitionLeader(ctx); err != nil {
			return nil, nil, err
		}
		m.session = 0
	}
	if m.session == 0 && len(acks) > 0 {
		return nil, nil, errors.New("acknowledgements need an open session")
	}
	req := kmsg.NewPtrShareFetchRequest()
	req.GroupID, req.MemberID, req.ShareSessionEpoch = &m.group, &m.id, m.session
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.MaxRecords, req.BatchSize = 500, 1, 1<<20, max, max
	req.ShareAcquireMode = 1 // record limit: at most max
	rp := kmsg.NewShareFetchRequestTopicPartition()
	rp.Partition, rp.PartitionMaxBytes = m.partition, 1<<20
	for _, a := range acks {
		rp.AcknowledgementBatches = append(rp.AcknowledgementBatches, kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{
			FirstOffset: a.first, LastOffset: a.last, AcknowledgeTypes: []int8{a.typ}})
	}
	req.Topics = []kmsg.ShareFetchRequestTopic{{TopicID: m.topicID, Partitions: []kmsg.ShareFetchRequestTopicPartition{rp}}}
	resp, err := req.RequestWith(ctx, m.cl.Broker(int(m.leader)))
	if err != nil {
		m.leader = -1
		return nil, nil, err
	}
	if resp.ErrorCode != 0 {
		m.leader = -1
		return nil, nil, kerr.ErrorForCode(resp.ErrorCode)
	}
	m.session++
	got = fetched{}
	for _, tp := range resp.Topics {
		for _, p := range tp.Partitions {
			if p.AcknowledgeErrorCode != 0 {
				ackErr = kerr.ErrorForCode(p.AcknowledgeErrorCode)
			}
			if p.ErrorCode != 0 {
				m.leader = -1
				return got, ackErr, kerr.ErrorForCode(p.ErrorCode)
			}
			for _, ar := range p.AcquiredRecords {
				for o := ar.FirstOffset; o <= ar.LastOffset; o++ {
					got[o] = ar.DeliveryCount
				}
			}
		}
	}
	return got, ackErr, nil
}

// acknowledge sends acks in a ShareAcknowledge of the current session.
func (m *shareMember) acknowledge(ctx context.Context, acks ...shareAck) error {
	if m.leader < 0 || m.session == 0 {
		return errors.New("no open share session")
	}
	req := kmsg.NewPtrShareAcknowledgeRequest()
	req.GroupID, req.MemberID, req.ShareSessionEpoch = &m.group, &m.id, m.session
	rp := kmsg.NewShareAcknowledgeRequestTopicPartition()
	rp.Partition = m.partition
	for _, a := range acks {
		rp.AcknowledgementBatches = append(rp.AcknowledgementBatches, kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{
			FirstOffset: a.first, LastOffset: a.last, AcknowledgeTypes: []int8{a.typ}})
	}
	req.Topics = []kmsg.ShareAcknowledgeRequestTopic{{TopicID: m.topicID, Partitions: []kmsg.ShareAcknowledgeRequestTopicPartition{rp}}}
	resp, err := req.RequestWith(ctx, m.cl.Broker(int(m.leader)))
	if err != nil {
		m.leader = -1
		return err
	}
	if resp.ErrorCode != 0 {
		m.leader = -1
		return kerr.ErrorForCode(resp.ErrorCode)
	}
	m.session++
	for _, tp := range resp.Topics {
		for _, p := range tp.Partitions {
			if p.ErrorCode != 0 {
				return kerr.ErrorForCode(p.ErrorCode)
			}
		}
	}
	return nil
}

// fetchRetrying fetches until records come or ctx ends, riding out leader
// and coordinator moves (each failure opens a new session).
func (m *shareMember) fetchRetrying(ctx context.Context, max int32) fetched {
	m.t.Helper()
	for {
		got, _, err := m.fetch(ctx, max)
		if len(got) > 0 {
			return got
		}
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			testsupport.Sleep(ctx, 200*time.Millisecond) // a leader or coordinator is moving
		}
	}
}

// acknowledgeRetrying acknowledges until the broker answers for the
// partition; false when the share session was lost (the records' locks
// went with it: they come back to the group) or ctx ended.
func (m *shareMember) acknowledgeRetrying(ctx context.Context, acks ...shareAck) error {
	for {
		err := m.acknowledge(ctx, acks...)
		var ke *kerr.Error
		switch {
		case err == nil:
			return nil
		case errors.As(err, &ke) && !ke.Retriable, ctx.Err() != nil, m.leader < 0:
			return err
		}
		testsupport.Sleep(ctx, 200*time.Millisecond)
	}
}

// offsetsFor ranges the offsets of a fetch as acknowledgement batches.
func offsetsFor(got fetched, typ int8) []shareAck {
	var offs []int64
	for o := range got {
		offs = append(offs, o)
	}
	slices.Sort(offs)
	var out []shareAck
	for _, o := range offs {
		if n := len(out); n > 0 && out[n-1].last+1 == o {
			out[n-1].last = o
			continue
		}
		out = append(out, shareAck{o, o, typ})
	}
	return out
}

// sortedAcks orders acknowledgement batches by offset, as a request must.
func sortedAcks(acks []shareAck) []shareAck {
	slices.SortFunc(acks, func(x, y shareAck) int { return cmp.Compare(x.first, y.first) })
	return acks
}

// shareStartOffset is DescribeShareGroupOffsets' start offset of a
// partition (and its lag), or an error.
func shareStartOffset(ctx context.Context, cl *kgo.Client, group, topic string, partition int32) (start, lag int64, err error) {
	req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	req.Groups = []kmsg.DescribeShareGroupOffsetsRequestGroup{{GroupID: group,
		Topics: []kmsg.DescribeShareGroupOffsetsRequestGroupTopic{{Topic: topic, Partitions: []int32{partition}}}}}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return 0, 0, err
	}
	for _, g := range resp.Groups {
		if g.ErrorCode != 0 {
			return 0, 0, kerr.ErrorForCode(g.ErrorCode)
		}
		for _, t := range g.Topics {
			for _, p := range t.Partitions {
				if p.ErrorCode != 0 {
					return 0, 0, kerr.ErrorForCode(p.ErrorCode)
				}
				return p.StartOffset, p.Lag, nil
			}
		}
	}
	return 0, 0, errors.New("partition not described")
}

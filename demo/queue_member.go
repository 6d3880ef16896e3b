package demo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/record"
)

// shareMember is a share consumer (KIP-932) speaking the share protocol
// by hand, so that the demo can say exactly which records the broker
// handed it and which it acknowledged: it heartbeats to the group
// coordinator and fetches partition 0 from its leader in a share session.
// Its client is its own: closing it drops its connections, as a consumer
// process that dies does.
type shareMember struct {
	name, group, topic string
	topicID            [16]byte
	cl                 *kgo.Client
	memberEpoch        int32
	leader             int32
	session            int32 // the share session's next epoch
}

// delivered is one record a share fetch handed out.
type delivered struct {
	offset int64
	value  string
	count  int16 // delivery count
}

func (c *cluster) newShareMember(ctx context.Context, name, group, topic string) (*shareMember, error) {
	cl, err := c.client()
	if err != nil {
		return nil, err
	}
	m := &shareMember{name: name, group: group, topic: topic, cl: cl, leader: -1}
	md := kmsg.NewPtrMetadataRequest()
	md.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr(topic)}}
	resp, err := md.RequestWith(ctx, cl)
	if err != nil || len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 {
		cl.Close()
		return nil, fmt.Errorf("metadata of %s: %v", topic, err)
	}
	m.topicID = resp.Topics[0].TopicID
	return m, nil
}

// join heartbeats until the member is assigned the partition (the group
// coordinator initializes the share state first).
func (m *shareMember) join(ctx context.Context) error {
	return poll(ctx, 30*time.Second, m.name+" to be assigned the partition", func() error {
		req := kmsg.NewPtrShareGroupHeartbeatRequest()
		req.GroupID, req.MemberID, req.MemberEpoch = m.group, m.name, m.memberEpoch
		if m.memberEpoch == 0 {
			req.SubscribedTopicNames = []string{m.topic}
		}
		resp, err := req.RequestWith(ctx, m.cl)
		if err != nil {
			return err
		}
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			return err
		}
		m.memberEpoch = resp.MemberEpoch
		if resp.Assignment == nil || len(resp.Assignment.TopicPartitions) == 0 {
			return errors.New("not assigned yet")
		}
		return nil
	})
}

// fetch asks the partition's leader for at most max records, waiting up
// to a second for some.
func (m *shareMember) fetch(ctx context.Context, c *cluster, max int32) ([]delivered, error) {
	if m.leader < 0 {
		st, err := c.describe(ctx, m.topic)
		if err != nil {
			return nil, err
		}
		m.leader, m.session = st.leader, 0
	}
	req := kmsg.NewPtrShareFetchRequest()
	req.GroupID, req.MemberID, req.ShareSessionEpoch = &m.group, &m.name, m.session
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.MaxRecords, req.BatchSize = 1000, 1, 1<<20, max, max
	req.ShareAcquireMode = 1 // record limit: at most max
	req.Topics = []kmsg.ShareFetchRequestTopic{{TopicID: m.topicID, Partitions: []kmsg.ShareFetchRequestTopicPartition{{Partition: 0, PartitionMaxBytes: 1 << 20}}}}
	resp, err := req.RequestWith(ctx, m.cl.Broker(int(m.leader)))
	if err == nil {
		err = kerr.ErrorForCode(resp.ErrorCode)
	}
	if err != nil {
		m.leader = -1
		return nil, err
	}
	m.session++
	var out []delivered
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				m.leader = -1
				return nil, err
			}
			vals := batchValues(p.Records)
			for _, ar := range p.AcquiredRecords {
				for o := ar.FirstOffset; o <= ar.LastOffset; o++ {
					out = append(out, delivered{offset: o, value: vals[o], count: ar.DeliveryCount})
				}
			}
		}
	}
	return out, nil
}

// accept acknowledges records (offsets ascending) as processed.
func (m *shareMember) accept(ctx context.Context, recs []delivered) error {
	req := kmsg.NewPtrShareAcknowledgeRequest()
	req.GroupID, req.MemberID, req.ShareSessionEpoch = &m.group, &m.name, m.session
	rp := kmsg.ShareAcknowledgeRequestTopicPartition{Partition: 0}
	for _, r := range recs {
		if n := len(rp.AcknowledgementBatches); n > 0 && rp.AcknowledgementBatches[n-1].LastOffset+1 == r.offset {
			rp.AcknowledgementBatches[n-1].LastOffset = r.offset
			continue
		}
		rp.AcknowledgementBatches = append(rp.AcknowledgementBatches, kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{
			FirstOffset: r.offset, LastOffset: r.offset, AcknowledgeTypes: []int8{1}}) // ACCEPT
	}
	req.Topics = []kmsg.ShareAcknowledgeRequestTopic{{TopicID: m.topicID, Partitions: []kmsg.ShareAcknowledgeRequestTopicPartition{rp}}}
	resp, err := req.RequestWith(ctx, m.cl.Broker(int(m.leader)))
	if err == nil {
		err = kerr.ErrorForCode(resp.ErrorCode)
	}
	if err != nil {
		m.leader = -1
		return err
	}
	m.session++
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return err
			}
		}
	}
	return nil
}

// batchValues decodes the values of record batches by offset.
func batchValues(data []byte) map[int64]string {
	out := map[int64]string{}
	it := record.Batches(data)
	for it.Next() {
		recs, err := record.Records(it.Batch())
		for err == nil && recs.Next() {
			out[recs.Offset()] = string(recs.Record().Value)
		}
	}
	return out
}

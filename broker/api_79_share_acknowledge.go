package broker

// ShareAcknowledge (key 79), v0-v2: KIP-932 acknowledgements outside a
// fetch (ACCEPT, RELEASE, REJECT, GAP; RENEW in v2 with IsRenewAck). It
// shares the member's share session with ShareFetch: epoch n continues it
// (0 is INVALID_SHARE_SESSION_EPOCH), -1 closes it, the member's other
// records then released after the acknowledgements. Each partition is
// answered once its state is written: INVALID_RECORD_STATE for records the
// member does not hold (the partition unchanged), NOT_LEADER_OR_FOLLOWER
// with CurrentLeader and NodeEndpoints when this broker does not lead it.
// v2 answers AcquisitionLockTimeoutMillis. Authorization: READ on the
// group, READ on each topic.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/broker/sharepartition"
	"github.com/kbroker/kbroker/protocol"
)

func (b *Broker) handleShareAcknowledge(_ context.Context, req *protocol.Request) protocol.Response {
	r := req.Body.(*kmsg.ShareAcknowledgeRequest)
	if code := b.shareRequestInvalid(req, r.GroupID, r.MemberID); code != 0 {
		return refuse(req, code)
	}
	return protocol.Response{Later: func(ctx context.Context) kmsg.Response {
		return b.shares.acknowledge(ctx, req, r)
	}}
}

// acknowledge serves a ShareAcknowledge on the connection's writer.
func (s *shares) acknowledge(ctx context.Context, req *protocol.Request, r *kmsg.ShareAcknowledgeRequest) kmsg.Response {
	resp := r.ResponseKind().(*kmsg.ShareAcknowledgeResponse)
	group, member := derefString(r.GroupID), derefString(r.MemberID)
	if r.Version >= 2 {
		resp.AcquisitionLockTimeoutMillis = int32(s.config(group).RecordLockDuration.Milliseconds())
	}
	key := sharepartition.SessionKey{Group: group, Member: member}
	final, closed, code := s.parts.Sessions().AcknowledgeContext(key, r.ShareSessionEpoch)
	if code != 0 {
		resp.ErrorCode = code
		return resp
	}
	var acks []*partitionAck
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			acks = append(acks, &partitionAck{tp: sharepartition.TopicIDPartition{TopicID: t.TopicID, Partition: p.Partition},
				batches: ackBatchesOf(p.AcknowledgementBatches, func(b kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch) (int64, int64, []int8) {
					return b.FirstOffset, b.LastOffset, b.AcknowledgeTypes
				})})
		}
	}
	s.acknowledgeAll(ctx, req, group, member, acks, r.Version >= 2 && r.IsRenewAck)
	if final {
		s.releaseClosed(ctx, key, closed)
	}
	leaders := map[int32]bool{}
	for _, a := range acks {
		p := kmsg.NewShareAcknowledgeResponseTopicPartition()
		p.Partition, p.ErrorCode = a.tp.Partition, a.code
		p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch = -1, -1
		if a.code == kerr.NotLeaderForPartition.Code && a.leader.id >= 0 {
			p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch = a.leader.id, a.leader.epoch
			leaders[a.leader.id] = true
		}
		if n := len(resp.Topics); n == 0 || resp.Topics[n-1].TopicID != a.tp.TopicID {
			rt := kmsg.NewShareAcknowledgeResponseTopic()
			rt.TopicID = a.tp.TopicID
			resp.Topics = append(resp.Topics, rt)
		}
		last := &resp.Topics[len(resp.Topics)-1]
		last.Partitions = append(last.Partitions, p)
	}
	for _, le := range leaderEndpoints(s.b, s.b.view(), leaders, req.Conn.Listener) {
		ne := kmsg.NewShareAcknowledgeResponseNodeEndpoint()
		ne.NodeID, ne.Host, ne.Port, ne.Rack = le.id, le.host, le.port, le.rack
		resp.NodeEndpoints = append(resp.NodeEndpoints, ne)
	}
	return resp
}

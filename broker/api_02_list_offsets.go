package broker

// ListOffsets (key 2), v1-v9.
//
// Timestamps: -1 latest (the HW for consumers, the last stable offset for
// read_committed ones (IsolationLevel 1); the log end for replicas), -2
// earliest (log start), -3 the record with the largest timestamp (KIP-734),
// -4 earliest local and -5 earliest pending upload (both the log start: no
// tiered storage), or a time: the first offset whose record timestamp is >=
// it, found through the time index, or -1 when there is none (read_committed:
// none at or beyond the last stable offset). Answers carry
// the leader epoch of the offset (v4+). Only the leader answers
// (NOT_LEADER_OR_FOLLOWER), and CurrentLeaderEpoch is checked. Needs DESCRIBE
// on each topic (TOPIC_AUTHORIZATION_FAILED).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/protocol"
	"github.com/kbroker/kbroker/replication"
	"github.com/kbroker/kbroker/security/acl"
)

func (b *Broker) handleListOffsets(_ context.Context, req *protocol.Request) protocol.Response {
	r := req.Body.(*kmsg.ListOffsetsRequest)
	resp := r.ResponseKind().(*kmsg.ListOffsetsResponse)
	view := b.view()
	fromReplica := r.ReplicaID >= 0
	iso := replication.Isolation(r.IsolationLevel)
	for _, rt := range r.Topics {
		denied := b.topicAllowed(req, acl.OpDescribe, rt.Topic)
		out := kmsg.NewListOffsetsResponseTopic()
		out.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			op := kmsg.NewListOffsetsResponseTopicPartition()
			op.Partition = rp.Partition
			op.Timestamp, op.Offset, op.LeaderEpoch = -1, -1, -1
			part, code := b.heldPartition(view, rt.Topic, rp.Partition)
			if denied != 0 {
				part, code = nil, denied
			}
			op.ErrorCode = code
			if part != nil {
				res, err := part.ListOffsetAt(iso, rp.Timestamp, rp.CurrentLeaderEpoch, fromReplica)
				op.ErrorCode = errorCode(err)
				if err == nil {
					op.Offset, op.Timestamp, op.LeaderEpoch = res.Offset, res.Timestamp, res.LeaderEpoch
				}
			}
			out.Partitions = append(out.Partitions, op)
		}
		resp.Topics = append(resp.Topics, out)
	}
	return protocol.Response{Body: resp}
}

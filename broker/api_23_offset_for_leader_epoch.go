package broker

// OffsetForLeaderEpoch (key 23), v2-v4.
//
// For each partition: the largest leader epoch <= the one asked for in this
// replica's epoch history, and the offset where it ended (the log end for the
// current epoch). Consumers use it to detect truncation after an unclean
// leader change (KIP-320); followers may use it instead of DivergingEpoch.
// Only the leader answers consumers; a request naming a replica id (v3+) may
// be answered by any replica. CurrentLeaderEpoch is checked.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/protocol"
)

func (b *Broker) handleOffsetForLeaderEpoch(_ context.Context, req *protocol.Request) protocol.Response {
	r := req.Body.(*kmsg.OffsetForLeaderEpochRequest)
	resp := r.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	view := b.view()
	fromFollower := r.Version >= 3 && r.ReplicaID >= 0
	for _, rt := range r.Topics {
		denied := b.offsetForLeaderEpochDenied(req, fromFollower, rt.Topic)
		out := kmsg.NewOffsetForLeaderEpochResponseTopic()
		out.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			op := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			op.Partition = rp.Partition
			op.LeaderEpoch, op.EndOffset = -1, -1
			part, code := b.heldPartition(view, rt.Topic, rp.Partition)
			if denied != 0 {
				part, code = nil, denied
			}
			op.ErrorCode = code
			if part != nil {
				res, err := part.EndOffsetForEpoch(rp.LeaderEpoch, rp.CurrentLeaderEpoch, fromFollower)
				op.ErrorCode = errorCode(err)
				if err == nil {
					op.LeaderEpoch, op.EndOffset = res.Epoch, res.EndOffset
				}
			}
			out.Partitions = append(out.Partitions, op)
		}
		resp.Topics = append(resp.Topics, out)
	}
	return protocol.Response{Body: resp}
}

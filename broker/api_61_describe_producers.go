package broker

// DescribeProducers (key 61), v0.
//
// The producers a partition's leader tracks: id, epoch, last sequence and
// timestamp, the epoch of the coordinator that wrote their last
// transaction marker, and the first offset of their open transaction (-1:
// none), which holds the last stable offset back. Only the leader answers.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/protocol"
	"github.com/kbroker/kbroker/replication"
	"github.com/kbroker/kbroker/security/acl"
)

func (b *Broker) handleDescribeProducers(_ context.Context, req *protocol.Request) protocol.Response {
	r := req.Body.(*kmsg.DescribeProducersRequest)
	resp := r.ResponseKind().(*kmsg.DescribeProducersResponse)
	view := b.view()
	for _, rt := range r.Topics {
		denied := b.topicAllowed(req, acl.OpRead, rt.Topic)
		out := kmsg.NewDescribeProducersResponseTopic()
		out.Topic = rt.Topic
		for _, idx := range rt.Partitions {
			op := kmsg.NewDescribeProducersResponseTopicPartition()
			op.Partition = idx
			part, code := b.heldPartition(view, rt.Topic, idx)
			if denied != 0 {
				code = denied
			}
			switch {
			case code != 0:
				op.ErrorCode = code
			case part.Role() != replication.RoleLeader:
				op.ErrorCode = kerr.NotLeaderForPartition.Code
			default:
				for _, e := range part.Log().Producers() {
					ap := kmsg.NewDescribeProducersResponseTopicPartitionActiveProducer()
					ap.ProducerID, ap.ProducerEpoch = e.ProducerID, int32(e.Epoch)
					ap.LastSequence, ap.LastTimestamp = e.LastSeq(), e.LastTimestamp
					ap.CoordinatorEpoch, ap.CurrentTxnStartOffset = e.CoordinatorEpoch, e.CurrentTxnFirstOffset
					op.ActiveProducers = append(op.ActiveProducers, ap)
				}
			}
			out.Partitions = append(out.Partitions, op)
		}
		resp.Topics = append(resp.Topics, out)
	}
	return protocol.Response{Body: resp}
}

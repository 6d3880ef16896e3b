package broker

// DeleteRecords (key 21), v0-v2.
//
// Moves each partition's log start offset (an offset of -1 means the high
// watermark); whole segments below it are deleted, reads below it get
// OFFSET_OUT_OF_RANGE. Only up to the HW (OFFSET_OUT_OF_RANGE beyond); only
// on the leader (NOT_LEADER_OR_FOLLOWER). The answer's low watermark is the
// leader's new log start; followers follow it from their next fetch (Kafka
// waits for them; kbroker answers once the leader has moved).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/protocol"
	"github.com/kbroker/kbroker/security/acl"
)

func (b *Broker) handleDeleteRecords(_ context.Context, req *protocol.Request) protocol.Response {
	r := req.Body.(*kmsg.DeleteRecordsRequest)
	resp := r.ResponseKind().(*kmsg.DeleteRecordsResponse)
	view := b.view()
	for _, rt := range r.Topics {
		denied := b.topicAllowed(req, acl.OpDelete, rt.Topic)
		out := kmsg.NewDeleteRecordsResponseTopic()
		out.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			op := kmsg.NewDeleteRecordsResponseTopicPartition()
			op.Partition, op.LowWatermark = rp.Partition, -1
			part, code := b.heldPartition(view, rt.Topic, rp.Partition)
			if denied != 0 {
				part, code = nil, denied
			}
			op.ErrorCode = code
			if part != nil {
				low, err := part.DeleteRecordsBefore(rp.Offset)
				op.ErrorCode, op.LowWatermark = errorCode(err), low
				if err == nil {
					b.logger.Info("records deleted", "topic", rt.Topic, "partition", rp.Partition, "log_start_offset", low)
				}
			}
			out.Partitions = append(out.Partitions, op)
		}
		resp.Topics = append(resp.Topics, out)
	}
	return protocol.Response{Body: resp}
}

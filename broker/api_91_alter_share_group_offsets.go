package broker

// AlterShareGroupOffsets (key 91), v0: sets the share-partition start
// offset of share-partitions of an empty share group (NON_EMPTY_GROUP
// otherwise), initializing their state at a new state epoch, which fences
// the share-partition leaders' older state. Served by the share-group
// coordinator (broker/share; NOT_COORDINATOR elsewhere). Authorization:
// READ on the group, READ on each topic (TOPIC_AUTHORIZATION_FAILED on its
// partitions; the others go on).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/protocol"
	"github.com/kbroker/kbroker/security/acl"
)

func (b *Broker) handleAlterShareGroupOffsets(_ context.Context, req *protocol.Request) protocol.Response {
	r := req.Body.(*kmsg.AlterShareGroupOffsetsRequest)
	if code := b.groupAllowed(req, acl.OpRead, r.GroupID); code != 0 {
		return refuse(req, code)
	}
	keep := *r
	var denied []kmsg.AlterShareGroupOffsetsResponseTopic
	keep.Topics, denied = partitionByAuthorized(r.Topics,
		func(t kmsg.AlterShareGroupOffsetsRequestTopic) int16 { return b.topicAllowed(req, acl.OpRead, t.Topic) },
		func(t kmsg.AlterShareGroupOffsetsRequestTopic, code int16) kmsg.AlterShareGroupOffsetsResponseTopic {
			out := kmsg.NewAlterShareGroupOffsetsResponseTopic()
			out.Topic = t.Topic
			for _, p := range t.Partitions {
				out.Partitions = append(out.Partitions, kmsg.AlterShareGroupOffsetsResponseTopicPartition{Partition: p.Partition, ErrorCode: code})
			}
			return out
		})
	return protocol.Response{Later: func(ctx context.Context) kmsg.Response {
		resp := b.shares.groups.AlterShareGroupOffsets(ctx, &keep)
		resp.Topics = append(resp.Topics, denied...)
		return resp
	}}
}

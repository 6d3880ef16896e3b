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
	keep.Topics = nil
	var denied []kmsg.AlterShareGroupOffsetsResponseTopic
	for _, t := range r.Topics {
		if code := b.topicAllowed(req, acl.OpRead, t.Topic); code != 0 {
			out := kmsg.NewAlterShareGroupOffsetsResponseTopic()
			out.Topic = t.Topic
			for _, p := range t.Partitions {
				out.Partitions = append(out.Partitions, kmsg.AlterShareGroupOffsetsResponseTopicPartition{Partition: p.Partition, ErrorCode: code})
			}
			denied = append(denied, out)
			continue
		}
		keep.Topics = append(keep.Topics, t)
	}
	return protocol.Response{Later: func(ctx context.Context) kmsg.Response {
		resp := b.shares.groups.AlterShareGroupOffsets(ctx, &keep)
		resp.Topics = append(resp.Topics, denied...)
		return resp
	}}
}

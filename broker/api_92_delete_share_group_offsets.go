package broker

// DeleteShareGroupOffsets (key 92), v0: deletes the share state of whole
// topics of an empty share group (NON_EMPTY_GROUP otherwise) through the
// share coordinator. Served by the share-group coordinator (broker/share;
// NOT_COORDINATOR elsewhere). Authorization: DELETE on the group, READ on
// each topic (TOPIC_AUTHORIZATION_FAILED for it; the others go on).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/protocol"
	"github.com/kbroker/kbroker/security/acl"
)

func (b *Broker) handleDeleteShareGroupOffsets(_ context.Context, req *protocol.Request) protocol.Response {
	r := req.Body.(*kmsg.DeleteShareGroupOffsetsRequest)
	if code := b.groupAllowed(req, acl.OpDelete, r.GroupID); code != 0 {
		return refuse(req, code)
	}
	keep := *r
	var denied []kmsg.DeleteShareGroupOffsetsResponseTopic
	keep.Topics, denied = partitionByAuthorized(r.Topics,
		func(t kmsg.DeleteShareGroupOffsetsRequestTopic) int16 {
			return b.topicAllowed(req, acl.OpRead, t.Topic)
		},
		func(t kmsg.DeleteShareGroupOffsetsRequestTopic, code int16) kmsg.DeleteShareGroupOffsetsResponseTopic {
			out := kmsg.NewDeleteShareGroupOffsetsResponseTopic()
			out.Topic, out.ErrorCode = t.Topic, code
			return out
		})
	return protocol.Response{Later: func(ctx context.Context) kmsg.Response {
		resp := b.shares.groups.DeleteShareGroupOffsets(ctx, &keep)
		if resp.ErrorCode == 0 {
			resp.Topics = append(resp.Topics, denied...)
		}
		return resp
	}}
}

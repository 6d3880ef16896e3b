package broker

// OffsetDelete (key 47), v0: deletes a group's offsets for partitions it no
// longer consumes (GROUP_SUBSCRIBED_TO_TOPIC otherwise).
// Served by the group coordinator (broker/group); the answer is produced on
// the connection's writer, so waiting for a rebalance or for the ISR does not
// hold up the reader.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/protocol"
	"github.com/kbroker/kbroker/security/acl"
)

func (b *Broker) handleOffsetDelete(_ context.Context, req *protocol.Request) protocol.Response {
	if code := b.groupAllowed(req, acl.OpDelete, req.Body.(*kmsg.OffsetDeleteRequest).Group); code != 0 {
		return refuse(req, code)
	}
	r, denied := b.authorizeOffsetDelete(req, req.Body.(*kmsg.OffsetDeleteRequest))
	return protocol.Response{Later: func(ctx context.Context) kmsg.Response {
		resp := b.groups.coord.OffsetDelete(ctx, r)
		if resp.ErrorCode == 0 {
			resp.Topics = append(resp.Topics, denied...)
		}
		return resp
	}}
}

package broker

// DeleteGroups (key 42), v0-v2: deletes empty groups and their offsets
// (NON_EMPTY_GROUP otherwise), writing tombstones.
// Served by the group coordinator (broker/group); the answer is produced on
// the connection's writer, so waiting for a rebalance or for the ISR does not
// hold up the reader.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/protocol"
)

func (b *Broker) handleDeleteGroups(_ context.Context, req *protocol.Request) protocol.Response {
	r, denied := b.authorizeDeleteGroups(req, req.Body.(*kmsg.DeleteGroupsRequest))
	return protocol.Response{Later: func(ctx context.Context) kmsg.Response {
		resp := b.groups.coord.DeleteGroups(ctx, r)
		resp.Groups = append(resp.Groups, denied...)
		return resp
	}}
}

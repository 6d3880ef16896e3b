package broker

// ListGroups (key 16), v0-v5 (states v4+, types v5+): the groups this broker
// coordinates; clients ask every broker.
// Served by the group coordinator (broker/group); the answer is produced on
// the connection's writer, so waiting for a rebalance or for the ISR does not
// hold up the reader.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/protocol"
)

func (b *Broker) handleListGroups(_ context.Context, req *protocol.Request) protocol.Response {
	r := req.Body.(*kmsg.ListGroupsRequest)
	return protocol.Response{Later: func(ctx context.Context) kmsg.Response {
		resp := b.groups.coord.ListGroups(ctx, r)
		b.filterListGroups(req, resp)
		return resp
	}}
}

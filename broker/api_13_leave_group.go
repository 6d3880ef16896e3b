package broker

// LeaveGroup (key 13), v0-v5 (v3+ batched members): members leave and the group
// rebalances at once.
// Served by the group coordinator (broker/group); the answer is produced on
// the connection's writer, so waiting for a rebalance or for the ISR does not
// hold up the reader.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/protocol"
	"github.com/kbroker/kbroker/security/acl"
)

func (b *Broker) handleLeaveGroup(_ context.Context, req *protocol.Request) protocol.Response {
	r := req.Body.(*kmsg.LeaveGroupRequest)
	if code := b.groupAllowed(req, acl.OpRead, r.Group); code != 0 {
		return refuse(req, code)
	}
	return protocol.Response{Later: func(ctx context.Context) kmsg.Response {
		return b.groups.coord.LeaveGroup(ctx, r)
	}}
}

package broker

// JoinGroup (key 11), v0-v9: the classic rebalance protocol's join, with
// MEMBER_ID_REQUIRED (v4+), static membership (group.instance.id, v5+) and
// protocol selection; the answer waits for the rebalance to complete.
// Served by the group coordinator (broker/group); the answer is produced on
// the connection's writer, so waiting for a rebalance or for the ISR does not
// hold up the reader.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/protocol"
	"github.com/kbroker/kbroker/security/acl"
)

func (b *Broker) handleJoinGroup(_ context.Context, req *protocol.Request) protocol.Response {
	r := req.Body.(*kmsg.JoinGroupRequest)
	if code := b.groupAllowed(req, acl.OpRead, r.Group); code != 0 {
		return refuse(req, code)
	}
	return protocol.Response{Later: func(ctx context.Context) kmsg.Response {
		return b.groups.coord.JoinGroup(ctx, clientOf(req.ClientIDString(), req.Conn.Remote), r)
	}}
}

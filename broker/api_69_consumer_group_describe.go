package broker

// ConsumerGroupDescribe (key 69), v0-v1: KIP-848 groups, members and their
// target and current assignments.
// Served by the group coordinator (broker/group); the answer is produced on
// the connection's writer, so waiting for a rebalance or for the ISR does not
// hold up the reader.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/protocol"
	"github.com/kbroker/kbroker/security/acl"
)

func (b *Broker) handleConsumerGroupDescribe(_ context.Context, req *protocol.Request) protocol.Response {
	r, denied := b.authorizeConsumerGroupDescribe(req, req.Body.(*kmsg.ConsumerGroupDescribeRequest))
	return protocol.Response{Later: func(ctx context.Context) kmsg.Response {
		resp := b.groups.coord.ConsumerGroupDescribe(ctx, r)
		for i := range resp.Groups {
			if g := &resp.Groups[i]; r.IncludeAuthorizedOperations && g.ErrorCode == 0 {
				g.AuthorizedOperations = b.authorizedOps(req, acl.ResourceGroup, g.Group)
			}
		}
		resp.Groups = append(resp.Groups, denied...)
		return resp
	}}
}

package broker

// DescribeGroups (key 15), v0-v5: state, protocol and members of the groups this
// broker coordinates (NOT_COORDINATOR for others); a share group id gets
// GROUP_ID_NOT_FOUND, "not a classic group", as Kafka answers.
// Served by the group coordinator (broker/group); the answer is produced on
// the connection's writer, so waiting for a rebalance or for the ISR does not
// hold up the reader.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/protocol"
)

func (b *Broker) handleDescribeGroups(_ context.Context, req *protocol.Request) protocol.Response {
	r, denied := b.authorizeDescribeGroups(req, req.Body.(*kmsg.DescribeGroupsRequest))
	return protocol.Response{Later: func(ctx context.Context) kmsg.Response {
		resp := b.groups.coord.DescribeGroups(ctx, r)
		for i := range resp.Groups {
			if dg, ok := b.shares.groups.DescribeGroup(resp.Groups[i].Group); ok {
				resp.Groups[i] = dg
			}
		}
		b.describedGroupsOps(req, r, resp)
		resp.Groups = append(resp.Groups, denied...)
		return resp
	}}
}

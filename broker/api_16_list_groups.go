package broker

// ListGroups (key 16), v0-v5 (states v4+, types v5+): the groups this broker
// coordinates, classic and consumer (broker/group) and share groups
// (broker/share, type "share"); clients ask every broker.
// The answer is produced on the connection's writer, so waiting for a
// rebalance or for the ISR does not hold up the reader.

import (
	"context"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/protocol"
)

func (b *Broker) handleListGroups(_ context.Context, req *protocol.Request) protocol.Response {
	r := req.Body.(*kmsg.ListGroupsRequest)
	return protocol.Response{Later: func(ctx context.Context) kmsg.Response {
		resp := b.groups.coord.ListGroups(ctx, r)
		shareGroups, code := b.shares.groups.ListGroups(r.StatesFilter, r.TypesFilter)
		resp.Groups = append(resp.Groups, shareGroups...)
		resp.ErrorCode = max(resp.ErrorCode, code)
		slices.SortFunc(resp.Groups, func(a, b kmsg.ListGroupsResponseGroup) int { return strings.Compare(a.Group, b.Group) })
		b.filterListGroups(req, resp)
		return resp
	}}
}

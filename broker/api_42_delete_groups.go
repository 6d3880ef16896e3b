package broker

// DeleteGroups (key 42), v0-v2: deletes empty groups and their offsets
// (NON_EMPTY_GROUP otherwise), writing tombstones. Share groups (broker/share)
// lose their share state first (DeleteShareGroupState), then their records;
// the other ids go to the group coordinator (broker/group). The answer is
// produced on the connection's writer, so waiting for a rebalance or for the
// ISR does not hold up the reader.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/protocol"
)

func (b *Broker) handleDeleteGroups(_ context.Context, req *protocol.Request) protocol.Response {
	r, denied := b.authorizeDeleteGroups(req, req.Body.(*kmsg.DeleteGroupsRequest))
	return protocol.Response{Later: func(ctx context.Context) kmsg.Response {
		rest := *r
		rest.Groups = nil
		var shared []kmsg.DeleteGroupsResponseGroup
		for _, id := range r.Groups {
			code, ok := b.shares.groups.DeleteGroup(ctx, id)
			if !ok {
				rest.Groups = append(rest.Groups, id)
				continue
			}
			dg := kmsg.NewDeleteGroupsResponseGroup()
			dg.Group, dg.ErrorCode = id, code
			shared = append(shared, dg)
		}
		resp := b.groups.coord.DeleteGroups(ctx, &rest)
		resp.Groups = append(resp.Groups, shared...)
		resp.Groups = append(resp.Groups, denied...)
		return resp
	}}
}

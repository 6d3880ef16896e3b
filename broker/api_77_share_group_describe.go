package broker

// ShareGroupDescribe (key 77), v0-v1: KIP-932 share groups, their epochs,
// members, subscriptions and assignments. Served by the share-group
// coordinator (broker/share; NOT_COORDINATOR for groups of partitions led
// elsewhere, GROUP_ID_NOT_FOUND for unknown ids and ids of another group
// type). Authorization: DESCRIBE on each group; the groups denied are
// answered GROUP_AUTHORIZATION_FAILED.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/protocol"
	"github.com/kbroker/kbroker/security/acl"
)

func (b *Broker) handleShareGroupDescribe(_ context.Context, req *protocol.Request) protocol.Response {
	r := req.Body.(*kmsg.ShareGroupDescribeRequest)
	keep := *r
	var denied []kmsg.ShareGroupDescribeResponseGroup
	keep.GroupIDs, denied = partitionByAuthorized(r.GroupIDs,
		func(g string) int16 { return b.groupAllowed(req, acl.OpDescribe, g) },
		func(g string, code int16) kmsg.ShareGroupDescribeResponseGroup {
			dg := kmsg.NewShareGroupDescribeResponseGroup()
			dg.GroupID, dg.ErrorCode, dg.AuthorizedOperations = g, code, authorizedOpsOmitted
			return dg
		})
	return protocol.Response{Later: func(ctx context.Context) kmsg.Response {
		resp := b.shares.groups.ShareGroupDescribe(ctx, &keep)
		for i := range resp.Groups {
			if g := &resp.Groups[i]; r.IncludeAuthorizedOperations && g.ErrorCode == 0 {
				g.AuthorizedOperations = b.authorizedOps(req, acl.ResourceGroup, g.GroupID)
			}
		}
		resp.Groups = append(resp.Groups, denied...)
		return resp
	}}
}

package broker

// DescribeAcls (key 29), v0-v3.
//
// Answered from the ACLs of this broker's image (StandardAuthorizer's
// copy of the metadata log), grouped by resource pattern. Needs CLUSTER
// DESCRIBE (CLUSTER_AUTHORIZATION_FAILED); without an authorizer the
// answer is SECURITY_DISABLED. v0 filters are LITERAL only; a filter with
// an UNKNOWN part is INVALID_REQUEST.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/protocol"
	"github.com/kbroker/kbroker/security/acl"
)

func (b *Broker) handleDescribeAcls(_ context.Context, req *protocol.Request) protocol.Response {
	r := req.Body.(*kmsg.DescribeACLsRequest)
	resp := r.ResponseKind().(*kmsg.DescribeACLsResponse)
	f := acl.FilterFromDescribe(r)
	switch e := acl.ValidateDescribe(r.Version, f); {
	case b.authz == nil:
		resp.ErrorCode, resp.ErrorMessage = kerr.SecurityDisabled.Code, kmsg.StringPtr(noAuthorizerMessage)
	case !b.allowedCluster(req, acl.OpDescribe):
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
	case e != nil:
		resp.ErrorCode, resp.ErrorMessage = e.Code, kmsg.StringPtr(e.Message)
	default:
		if set := b.authz.ACLs(); set != nil {
			resp.Resources = acl.DescribeResources(set.Select(f))
		}
	}
	return protocol.Response{Body: resp}
}

package broker

// DeleteAcls (key 31), v0-v3.
//
// Forwarded to the active controller, which removes every ACL a valid
// filter matches (one RemoveAccessControlEntry record each, one batch) and
// reports the matches per filter; a filter with an UNKNOWN part is
// INVALID_REQUEST. The answer waits until this broker has applied the
// change. Needs CLUSTER ALTER; without an authorizer SECURITY_DISABLED.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/protocol"
	"github.com/kbroker/kbroker/security/acl"
)

func (b *Broker) handleDeleteAcls(_ context.Context, req *protocol.Request) protocol.Response {
	if resp := b.aclAdminRefusal(req); resp != nil {
		return protocol.Response{Body: resp}
	}
	return b.forwardAdmin(req, 0)
}

// aclAdminRefusal answers CreateAcls and DeleteAcls that may not go to the
// controller: no authorizer, or no CLUSTER ALTER. nil: forward.
func (b *Broker) aclAdminRefusal(req *protocol.Request) kmsg.Response {
	code, msg := int16(0), ""
	switch {
	case b.authz == nil:
		code, msg = kerr.SecurityDisabled.Code, noAuthorizerMessage
	case !b.allowedCluster(req, acl.OpAlter):
		code = kerr.ClusterAuthorizationFailed.Code
	default:
		return nil
	}
	resp := protocol.ErrorResponse(req.Body, code)
	if msg != "" {
		switch r := resp.(type) {
		case *kmsg.CreateACLsResponse:
			for i := range r.Results {
				r.Results[i].ErrorMessage = kmsg.StringPtr(msg)
			}
		case *kmsg.DeleteACLsResponse:
			for i := range r.Results {
				r.Results[i].ErrorMessage = kmsg.StringPtr(msg)
			}
		}
	}
	return resp
}

package broker

// CreateAcls (key 30), v0-v3.
//
// Forwarded to the active controller, which validates each binding
// (INVALID_REQUEST with Kafka's message), skips exact duplicates and
// commits the new ACLs as one batch of AccessControlEntry records; the
// answer waits until this broker has applied them. Needs CLUSTER ALTER
// (CLUSTER_AUTHORIZATION_FAILED per binding); without an authorizer each
// binding gets SECURITY_DISABLED.

import (
	"context"

	"github.com/kbroker/kbroker/protocol"
)

func (b *Broker) handleCreateAcls(_ context.Context, req *protocol.Request) protocol.Response {
	if resp := b.aclAdminRefusal(req); resp != nil {
		return protocol.Response{Body: resp}
	}
	return b.forwardAdmin(req, 0)
}

package broker

// ListPartitionReassignments (key 46), v0: reassignments in progress (empty when none).
// Forwarded to the active controller (forward.go).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/protocol"
	"github.com/kbroker/kbroker/security/acl"
)

func (b *Broker) handleListPartitionReassignments(_ context.Context, req *protocol.Request) protocol.Response {
	if code := b.clusterAllowed(req, acl.OpDescribe); code != 0 {
		return refuse(req, code)
	}
	return b.forwardAdmin(req, timeoutOf(req.Body.(*kmsg.ListPartitionReassignmentsRequest)))
}

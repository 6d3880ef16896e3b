package broker

// AlterPartitionReassignments (key 45), v0: moves replicas (new ones catch up as followers and join the ISR, then old ones are removed) or cancels a move.
// Forwarded to the active controller (forward.go).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/protocol"
	"github.com/kbroker/kbroker/security/acl"
)

func (b *Broker) handleAlterPartitionReassignments(_ context.Context, req *protocol.Request) protocol.Response {
	if code := b.clusterAllowed(req, acl.OpAlter); code != 0 {
		return refuse(req, code)
	}
	return b.forwardAdmin(req, timeoutOf(req.Body.(*kmsg.AlterPartitionAssignmentsRequest)))
}

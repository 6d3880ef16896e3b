package broker

// ElectLeaders (key 43), v0-v2: preferred (back to the first replica, when it is in the ISR) or unclean elections.
// Forwarded to the active controller (forward.go).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/protocol"
	"github.com/kbroker/kbroker/security/acl"
)

func (b *Broker) handleElectLeaders(_ context.Context, req *protocol.Request) protocol.Response {
	if code := b.clusterAllowed(req, acl.OpAlter); code != 0 {
		return refuse(req, code)
	}
	return b.forwardAdmin(req, timeoutOf(req.Body.(*kmsg.ElectLeadersRequest)))
}

package broker

// AlterConfigs (key 33), v0-v2: replaces a TOPIC's or BROKER's dynamic configs (non-incremental: keys not listed are removed).
// Forwarded to the active controller (forward.go).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/protocol"
)

func (b *Broker) handleAlterConfigs(_ context.Context, req *protocol.Request) protocol.Response {
	keep, addDenied := b.authorizeAlterConfigs(req, req.Body.(*kmsg.AlterConfigsRequest))
	return b.forwardAuthorized(req, timeoutOf(req.Body), keep, addDenied)
}

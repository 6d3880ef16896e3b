package broker

// CreatePartitions (key 37), v0-v3: adds partitions to topics (one result per topic asked for); the new partitions are led and served here before the answer.
// Forwarded to the active controller (forward.go).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/protocol"
)

func (b *Broker) handleCreatePartitions(_ context.Context, req *protocol.Request) protocol.Response {
	keep, addDenied := b.authorizeCreatePartitions(req, req.Body.(*kmsg.CreatePartitionsRequest))
	return b.forwardAuthorized(req, timeoutOf(req.Body), keep, addDenied)
}

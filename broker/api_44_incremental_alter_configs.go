package broker

// IncrementalAlterConfigs (key 44), v0-v1: SET, DELETE, APPEND, SUBTRACT on TOPIC, BROKER and GROUP (share.*) configs; invalid or unknown keys get INVALID_CONFIG with a message. Changes take effect without restarts (min.insync.replicas, retention, segment sizes, unclean election, ...).
// Forwarded to the active controller (forward.go).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/protocol"
)

func (b *Broker) handleIncrementalAlterConfigs(_ context.Context, req *protocol.Request) protocol.Response {
	keep, addDenied := b.authorizeIncrementalAlterConfigs(req, req.Body.(*kmsg.IncrementalAlterConfigsRequest))
	return b.forwardAuthorized(req, timeoutOf(req.Body), keep, addDenied)
}

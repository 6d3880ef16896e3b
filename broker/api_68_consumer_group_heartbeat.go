package broker

// ConsumerGroupHeartbeat (key 68), v0-v1: the KIP-848 consumer protocol, with
// server-side assignment (uniform and range assignors) and reconciliation.
// Served by the group coordinator (broker/group); the answer is produced on
// the connection's writer, so waiting for a rebalance or for the ISR does not
// hold up the reader.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/protocol"
)

func (b *Broker) handleConsumerGroupHeartbeat(_ context.Context, req *protocol.Request) protocol.Response {
	r := req.Body.(*kmsg.ConsumerGroupHeartbeatRequest)
	if code, msg := b.consumerHeartbeatDenied(req, r); code != 0 {
		resp := r.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
		resp.ErrorCode = code
		if msg != "" {
			resp.ErrorMessage = kmsg.StringPtr(msg)
		}
		return protocol.Response{Body: resp}
	}
	return protocol.Response{Later: func(ctx context.Context) kmsg.Response {
		return b.groups.coord.ConsumerGroupHeartbeat(ctx, clientOf(req.ClientIDString(), req.Conn.Remote), r)
	}}
}

package broker

// ConsumerGroupDescribe (key 69), v0-v1: KIP-848 groups, members and their
// target and current assignments.
// Served by the group coordinator (broker/group); the answer is produced on
// the connection's writer, so waiting for a rebalance or for the ISR does not
// hold up the reader.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/protocol"
)

func (b *Broker) handleConsumerGroupDescribe(_ context.Context, req *protocol.Request) protocol.Response {
	r := req.Body.(*kmsg.ConsumerGroupDescribeRequest)
	return protocol.Response{Later: func(ctx context.Context) kmsg.Response {
		return b.groups.coord.ConsumerGroupDescribe(ctx, r)
	}}
}

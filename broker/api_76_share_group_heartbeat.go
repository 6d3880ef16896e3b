package broker

// ShareGroupHeartbeat (key 76), v0-v1: KIP-932 share group membership with
// server-side assignment (the simple assignor), member epochs, join (epoch
// 0), leave (-1) and session timeouts. Served by the share-group
// coordinator (broker/share) beside broker/group on the __consumer_offsets
// partitions this broker leads (NOT_COORDINATOR elsewhere); the answer is
// produced on the connection's writer, so waiting for the ISR does not hold
// up the reader.
//
// Authorization: READ on the group, DESCRIBE on every subscribed topic
// (TOPIC_AUTHORIZATION_FAILED naming the others), as Kafka 4.2.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/protocol"
)

func (b *Broker) handleShareGroupHeartbeat(_ context.Context, req *protocol.Request) protocol.Response {
	r := req.Body.(*kmsg.ShareGroupHeartbeatRequest)
	if code, msg := b.groupHeartbeatDenied(req, r.GroupID, r.SubscribedTopicNames); code != 0 {
		resp := r.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
		resp.ErrorCode = code
		if msg != "" {
			resp.ErrorMessage = kmsg.StringPtr(msg)
		}
		return protocol.Response{Body: resp}
	}
	return protocol.Response{Later: func(ctx context.Context) kmsg.Response {
		return b.shares.groups.ShareGroupHeartbeat(ctx, clientOf(req.ClientIDString(), req.Conn.Remote), r)
	}}
}

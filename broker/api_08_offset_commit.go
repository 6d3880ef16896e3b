package broker

// OffsetCommit (key 8), v2-v9: commits offsets (with metadata and leader epoch) for a
// group's current generation or for a standalone consumer (generation -1,
// Empty group), written with acks=all to the group's __consumer_offsets partition.
// Served by the group coordinator (broker/group); the answer is produced on
// the connection's writer, so waiting for a rebalance or for the ISR does not
// hold up the reader.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/protocol"
	"github.com/kbroker/kbroker/security/acl"
)

func (b *Broker) handleOffsetCommit(_ context.Context, req *protocol.Request) protocol.Response {
	if code := b.groupAllowed(req, acl.OpRead, req.Body.(*kmsg.OffsetCommitRequest).Group); code != 0 {
		return refuse(req, code)
	}
	r, denied := b.authorizeOffsetCommit(req, req.Body.(*kmsg.OffsetCommitRequest))
	return protocol.Response{Later: func(ctx context.Context) kmsg.Response {
		resp := b.groups.coord.OffsetCommit(ctx, r)
		resp.Topics = append(resp.Topics, denied...)
		return resp
	}}
}

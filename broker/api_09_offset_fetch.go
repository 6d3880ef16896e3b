package broker

// OffsetFetch (key 9), v1-v9 (v8+ several groups): committed offsets; a group
// that never committed gets -1 per partition and no error.
// Served by the group coordinator (broker/group); the answer is produced on
// the connection's writer, so waiting for a rebalance or for the ISR does not
// hold up the reader.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/protocol"
)

func (b *Broker) handleOffsetFetch(_ context.Context, req *protocol.Request) protocol.Response {
	r := req.Body.(*kmsg.OffsetFetchRequest)
	return protocol.Response{Later: func(ctx context.Context) kmsg.Response {
		resp := b.groups.coord.OffsetFetch(ctx, r)
		b.filterOffsetFetch(req, r, resp)
		return resp
	}}
}

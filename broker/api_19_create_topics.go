package broker

// CreateTopics (key 19), v2-v7.
//
// Forwarded to the active controller, which validates names, partition
// counts, replication factors and configs, places replicas and commits the
// topics to the metadata log. This broker then waits (within the request's
// timeout) until it has applied the new topics, so that a client that creates
// a topic and produces at once finds it. ValidateOnly is passed through.

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/protocol"
)

func (b *Broker) handleCreateTopics(_ context.Context, req *protocol.Request) protocol.Response {
	r, denied := b.authorizeCreateTopics(req, req.Body.(*kmsg.CreateTopicsRequest))
	return protocol.Response{Later: func(ctx context.Context) kmsg.Response {
		ctx, cancel := requestContext(ctx, r.TimeoutMillis)
		defer cancel()
		resp, err := b.ctrl.Forward(ctx, r)
		if err != nil {
			b.logger.Warn("CreateTopics: controller unreachable", "err", err)
			return errorResponse(req, kerr.RequestTimedOut.Code)
		}
		out := resp.(*kmsg.CreateTopicsResponse)
		defer func() { out.Topics = append(out.Topics, denied...) }()
		if !r.ValidateOnly {
			b.waitForView(ctx, func(v *metadataView) bool {
				for _, t := range out.Topics {
					if t.ErrorCode == 0 {
						if _, ok := v.img.Topics[t.Topic]; !ok {
							return false
						}
					}
				}
				return true
			})
		}
		return out
	}}
}

// requestContext bounds ctx by a request's TimeoutMillis (0 or negative: 30 s).
func requestContext(ctx context.Context, timeoutMillis int32) (context.Context, context.CancelFunc) {
	d := time.Duration(timeoutMillis) * time.Millisecond
	if d <= 0 {
		d = 30 * time.Second
	}
	return context.WithTimeout(ctx, d)
}

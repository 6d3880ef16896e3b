package broker

// DeleteTopics (key 20), v1-v6 (v6 may name topics by id).
//
// Forwarded to the active controller. This broker waits until it has applied
// the deletion, so the topic is gone from its Metadata at once (a pitfall
// list item) and the same name can be created again from offset 0.
// delete.topic.enable=false answers TOPIC_DELETION_DISABLED.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/protocol"
)

func (b *Broker) handleDeleteTopics(_ context.Context, req *protocol.Request) protocol.Response {
	r, denied := b.authorizeDeleteTopics(req, req.Body.(*kmsg.DeleteTopicsRequest))
	if !b.cfg.DeleteTopicEnable {
		return protocol.Response{Body: errorResponse(req, kerr.TopicDeletionDisabled.Code)}
	}
	return protocol.Response{Later: func(ctx context.Context) kmsg.Response {
		ctx, cancel := requestContext(ctx, r.TimeoutMillis)
		defer cancel()
		resp, err := b.ctrl.Forward(ctx, r)
		if err != nil {
			b.logger.Warn("DeleteTopics: controller unreachable", "err", err)
			return errorResponse(req, kerr.RequestTimedOut.Code)
		}
		out := resp.(*kmsg.DeleteTopicsResponse)
		defer func() { out.Topics = append(out.Topics, denied...) }()
		b.waitForView(ctx, func(v *metadataView) bool {
			for _, t := range out.Topics {
				if t.ErrorCode != 0 {
					continue
				}
				if t.Topic != nil {
					if _, ok := v.img.Topics[*t.Topic]; ok {
						return false
					}
				}
				if _, ok := v.img.TopicsByID[t.TopicID]; ok && t.TopicID != ([16]byte{}) {
					return false
				}
			}
			return true
		})
		return out
	}}
}

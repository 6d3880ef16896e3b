package broker

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/protocol"
	"github.com/kbroker/kbroker/replication"
)

// forwardAdmin serves an admin request the way KRaft brokers do: it is
// forwarded to the active controller, and the answer waits (within timeout)
// until this broker has applied what the controller committed, so that the
// client's next request here sees the change.
func (b *Broker) forwardAdmin(req *protocol.Request, timeoutMillis int32) protocol.Response {
	return protocol.Response{Later: func(ctx context.Context) kmsg.Response {
		ctx, cancel := requestContext(ctx, timeoutMillis)
		defer cancel()
		resp, err := b.ctrl.Forward(ctx, req.Body)
		if err != nil {
			b.logger.Warn("forwarding to the controller failed", "key", req.Key, "err", err)
			if out := errorResponse(req, kerr.RequestTimedOut.Code); out != nil {
				return out
			}
			return req.Body.ResponseKind()
		}
		b.catchUp(ctx)
		return resp
	}}
}

// alterPartition sends a leader's ISR changes to the active controller
// (replication.AlterPartitionFunc).
func (b *Broker) alterPartition(ctx context.Context, changes []replication.AlterISR) ([]replication.AlterISRResult, error) {
	req := replication.AlterPartitionRequest(b.cfg.NodeID, b.ctrl.BrokerEpoch(), changes)
	resp, err := b.ctrl.Forward(ctx, req)
	if err != nil {
		return nil, err
	}
	return replication.AlterPartitionResults(changes, resp.(*kmsg.AlterPartitionResponse))
}

// catchUp waits until this broker has applied (and turned into partition
// roles) everything the active controller has committed.
func (b *Broker) catchUp(ctx context.Context) {
	if err := b.ctrl.WaitReady(ctx); err != nil {
		return
	}
	target := b.ctrl.Image().AppliedIndex
	b.waitForView(ctx, func(v *metadataView) bool { return v.img.AppliedIndex >= target })
}

// catchUpAnnounced waits until this broker announces (announcedView)
// everything the active controller has committed.
func (b *Broker) catchUpAnnounced(ctx context.Context) {
	if err := b.ctrl.WaitReady(ctx); err != nil {
		return
	}
	target := b.ctrl.Image().AppliedIndex
	for {
		ch := b.viewChanged.wait()
		if b.announcedView().img.AppliedIndex >= target {
			return
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return
		}
	}
}

// syncBound bounds syncMetadata: with the controller out of reach, an
// answer waits this long at most, then comes from this broker's image.
const syncBound = time.Second

// syncMetadata is a read barrier: it waits (syncBound at most) until this
// broker has applied everything the active controller had committed when
// it was called. A client that was told a topic was created asks any broker
// next; without the barrier a broker whose image lags by one commit answers
// UNKNOWN_TOPIC_OR_PARTITION (hashicorp/raft followers learn a commit with
// the leader's next append, up to its commit timeout later).
func (b *Broker) syncMetadata(ctx context.Context) {
	if b.ctrl == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, syncBound)
	defer cancel()
	b.catchUpAnnounced(ctx)
}

// timeoutOf returns a request's TimeoutMillis, or 0 (the default) when it
// has none.
func timeoutOf(r kmsg.Request) int32 {
	if tr, ok := r.(kmsg.TimeoutRequest); ok {
		return tr.Timeout()
	}
	return 0
}

package broker

// FindCoordinator (key 10), v0-v6.
//
// Group keys (type 0) map to the leader of their __consumer_offsets
// partition (abs(hashCode) % partitions, as Kafka), which is created on first
// use; until it has a leader the answer is COORDINATOR_NOT_AVAILABLE and the
// client asks again. v4+ batches keys. Transactional ids (type 1) map the
// same way to the leader of their __transaction_state partition, created on
// first use. Share keys (type 2, v6+, KIP-932) "group:topicId:partition"
// map to the leader of their __share_group_state partition (created on
// first use; INVALID_REQUEST for a malformed key); share groups themselves
// use type 0.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/protocol"
)

func (b *Broker) handleFindCoordinator(_ context.Context, req *protocol.Request) protocol.Response {
	r := req.Body.(*kmsg.FindCoordinatorRequest)
	return protocol.Response{Later: func(ctx context.Context) kmsg.Response {
		resp := r.ResponseKind().(*kmsg.FindCoordinatorResponse)
		if r.Version < 4 {
			c := b.findAuthorizedCoordinator(ctx, req, r.CoordinatorKey, r.CoordinatorType)
			resp.ErrorCode, resp.ErrorMessage = c.ErrorCode, c.ErrorMessage
			resp.NodeID, resp.Host, resp.Port = c.NodeID, c.Host, c.Port
			return resp
		}
		for _, key := range r.CoordinatorKeys {
			resp.Coordinators = append(resp.Coordinators, b.findAuthorizedCoordinator(ctx, req, key, r.CoordinatorType))
		}
		return resp
	}}
}

func (b *Broker) findCoordinator(ctx context.Context, version int16, key string, keyType int8, listener string) kmsg.FindCoordinatorResponseCoordinator {
	if keyType == 2 {
		return b.shares.findCoordinator(ctx, version, key, listener)
	}
	c := kmsg.NewFindCoordinatorResponseCoordinator()
	c.Key, c.NodeID = key, -1
	switch keyType {
	case 0:
		if key == "" {
			c.ErrorCode = kerr.InvalidGroupID.Code
			return c
		}
		id, ep, err := b.coordinatorFor(ctx, key, listener)
		if err != nil {
			c.ErrorCode = errorCode(err)
			return c
		}
		c.NodeID, c.Host, c.Port = id, ep.Host, ep.Port
	case 1:
		if key == "" {
			c.ErrorCode = kerr.InvalidRequest.Code
			return c
		}
		id, ep, err := b.txns.coordinatorFor(ctx, key, listener)
		if err != nil {
			c.ErrorCode = errorCode(err)
			return c
		}
		c.NodeID, c.Host, c.Port = id, ep.Host, ep.Port
	default:
		c.ErrorCode = kerr.InvalidRequest.Code
		c.ErrorMessage = kmsg.StringPtr("unsupported coordinator type")
	}
	return c
}

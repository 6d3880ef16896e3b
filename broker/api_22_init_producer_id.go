package broker

// InitProducerId (key 22), v0-v5.
//
// Idempotent producers (no transactional id) get a new producer id with epoch
// 0, as Kafka's coordinator answers them, including when they send their old
// id and epoch (KIP-360): the partitions' producer state then starts afresh
// for the new id. Ids come from controller-allocated blocks. Transactions are
// not served yet: a transactional id is refused with
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED, a clear non-retriable answer.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/protocol"
)

func (b *Broker) handleInitProducerID(_ context.Context, req *protocol.Request) protocol.Response {
	r := req.Body.(*kmsg.InitProducerIDRequest)
	resp := r.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if r.TransactionalID != nil {
		// Transactions are wired later; their InitProducerId checks
		// b.TransactionalIDAllowed(req, acl.OpWrite, id) first.
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		return protocol.Response{Body: resp}
	}
	if resp.ErrorCode = b.idempotentAllowed(req); resp.ErrorCode != 0 {
		return protocol.Response{Body: resp}
	}
	return protocol.Response{Later: func(ctx context.Context) kmsg.Response {
		id, err := b.producers.allocate(ctx)
		if err != nil {
			b.logger.Warn("InitProducerId failed", "err", err)
			resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
			return resp
		}
		resp.ProducerID, resp.ProducerEpoch = id, 0
		return resp
	}}
}

package broker

// InitProducerId (key 22), v0-v5.
//
// Idempotent producers (no transactional id) get a new producer id with epoch
// 0, as Kafka's coordinator answers them, including when they send their old
// id and epoch (KIP-360): the partitions' producer state then starts afresh
// for the new id. Ids come from controller-allocated blocks. They need
// IDEMPOTENT_WRITE on the cluster or WRITE on some topic.
//
// With a transactional id the transaction coordinator of the id answers
// (NOT_COORDINATOR on another broker): a producer id and a bumped epoch
// that fences the previous instance (its open transaction is aborted
// first), transaction.timeout.ms checked against transaction.max.timeout.ms
// (INVALID_TRANSACTION_TIMEOUT), KIP-360 recovery with the old id and
// epoch. It needs WRITE on the transactional id.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/protocol"
	"github.com/kbroker/kbroker/security/acl"
)

func (b *Broker) handleInitProducerID(_ context.Context, req *protocol.Request) protocol.Response {
	r := req.Body.(*kmsg.InitProducerIDRequest)
	resp := r.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if r.TransactionalID != nil {
		if resp.ErrorCode = b.TransactionalIDAllowed(req, acl.OpWrite, *r.TransactionalID); resp.ErrorCode != 0 {
			return protocol.Response{Body: resp}
		}
		return protocol.Response{Later: func(ctx context.Context) kmsg.Response {
			out := b.txns.coord.InitProducerID(ctx, r)
			if out.ErrorCode == kerr.ProducerFenced.Code || out.ErrorCode == kerr.InvalidProducerEpoch.Code {
				b.logger.Info("InitProducerId refused: the producer instance is fenced", "transactional_id", *r.TransactionalID,
					"producer_id", r.ProducerID, "producer_epoch", r.ProducerEpoch)
			}
			return out
		}}
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

package broker

// EndTxn (key 26), v0-v5: commits or aborts the producer's transaction.
// WRITE on the transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
// then the transaction coordinator, which answers once PrepareCommit or
// PrepareAbort is committed to __transaction_state (the markers follow);
// v5 (transaction version 2) bumps the producer epoch and answers it.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/protocol"
	"github.com/kbroker/kbroker/security/acl"
)

func (b *Broker) handleEndTxn(_ context.Context, req *protocol.Request) protocol.Response {
	r := req.Body.(*kmsg.EndTxnRequest)
	if code := b.TransactionalIDAllowed(req, acl.OpWrite, r.TransactionalID); code != 0 {
		return refuse(req, code)
	}
	return protocol.Response{Later: func(ctx context.Context) kmsg.Response { return b.txns.coord.EndTxn(ctx, r) }}
}

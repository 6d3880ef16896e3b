package broker

// AddOffsetsToTxn (key 25), v0-v4: adds the group's __consumer_offsets
// partition to the transaction, so that its TxnOffsetCommit offsets get
// the transaction's marker. WRITE on the transactional id
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED) and READ on the group
// (GROUP_AUTHORIZATION_FAILED), then the transaction coordinator.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/protocol"
)

func (b *Broker) handleAddOffsetsToTxn(_ context.Context, req *protocol.Request) protocol.Response {
	r := req.Body.(*kmsg.AddOffsetsToTxnRequest)
	if code := b.txnGroupAllowed(req, r.TransactionalID, r.Group); code != 0 {
		return refuse(req, code)
	}
	return protocol.Response{Later: func(ctx context.Context) kmsg.Response { return b.txns.coord.AddOffsetsToTxn(ctx, r) }}
}

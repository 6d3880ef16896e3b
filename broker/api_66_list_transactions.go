package broker

// ListTransactions (key 66), v0-v2: the transactional ids this broker
// coordinates (clients ask every broker), filtered by state, producer id,
// duration (v1) and id pattern (v2) by the coordinator, and to those the
// principal may DESCRIBE, as Kafka filters them.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/protocol"
	"github.com/kbroker/kbroker/security/acl"
)

func (b *Broker) handleListTransactions(_ context.Context, req *protocol.Request) protocol.Response {
	r := req.Body.(*kmsg.ListTransactionsRequest)
	resp := b.txns.coord.ListTransactions(r)
	if b.authz != nil {
		kept := resp.TransactionStates[:0]
		for _, st := range resp.TransactionStates {
			if b.visible(req, acl.OpDescribe, acl.ResourceTransactionalID, st.TransactionalID) {
				kept = append(kept, st)
			}
		}
		resp.TransactionStates = kept
	}
	return protocol.Response{Body: resp}
}

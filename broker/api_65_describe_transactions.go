package broker

// DescribeTransactions (key 65), v0: the state, producer, timeout, start
// time and partitions of transactional ids this broker coordinates
// (NOT_COORDINATOR for the others, TRANSACTIONAL_ID_NOT_FOUND for unknown
// ones). Each id needs DESCRIBE (TRANSACTIONAL_ID_AUTHORIZATION_FAILED).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/protocol"
	"github.com/kbroker/kbroker/security/acl"
)

func (b *Broker) handleDescribeTransactions(_ context.Context, req *protocol.Request) protocol.Response {
	r := req.Body.(*kmsg.DescribeTransactionsRequest)
	allowed := *r
	allowed.TransactionalIDs = nil
	denied := map[string]int16{}
	for _, id := range r.TransactionalIDs {
		if code := b.TransactionalIDAllowed(req, acl.OpDescribe, id); code != 0 {
			denied[id] = code
			continue
		}
		allowed.TransactionalIDs = append(allowed.TransactionalIDs, id)
	}
	resp := b.txns.coord.DescribeTransactions(&allowed)
	described := resp.TransactionStates
	resp.TransactionStates = nil
	for _, id := range r.TransactionalIDs { // request order
		if code, ok := denied[id]; ok {
			st := kmsg.NewDescribeTransactionsResponseTransactionState()
			st.TransactionalID, st.ErrorCode = id, code
			resp.TransactionStates = append(resp.TransactionStates, st)
			continue
		}
		resp.TransactionStates = append(resp.TransactionStates, described[0])
		described = described[1:]
	}
	return protocol.Response{Body: resp}
}

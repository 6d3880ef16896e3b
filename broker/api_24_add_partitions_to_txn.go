package broker

// AddPartitionsToTxn (key 24), v0-v5.
//
// v0-v3 come from producers (the transaction flow before KIP-890 part 2,
// still served: sarama and librdkafka use it): WRITE on the transactional
// id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED on every partition), WRITE on
// each topic (TOPIC_AUTHORIZATION_FAILED on its partitions, the others
// OPERATION_NOT_ATTEMPTED), then the coordinator adds them. v4+ come from
// brokers verifying transactional produces (KIP-890): CLUSTER_ACTION on
// the cluster (CLUSTER_AUTHORIZATION_FAILED in the top-level error). The
// coordinator (broker/txn) answers NOT_COORDINATOR for ids it does not
// serve.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/protocol"
	"github.com/kbroker/kbroker/security/acl"
)

func (b *Broker) handleAddPartitionsToTxn(_ context.Context, req *protocol.Request) protocol.Response {
	r := req.Body.(*kmsg.AddPartitionsToTxnRequest)
	if r.Version >= 4 {
		if code := b.clusterAllowed(req, acl.OpClusterAction); code != 0 {
			resp := r.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
			resp.ErrorCode = code
			return protocol.Response{Body: resp}
		}
		return protocol.Response{Later: func(ctx context.Context) kmsg.Response { return b.txns.coord.AddPartitionsToTxn(ctx, r) }}
	}
	if code := b.TransactionalIDAllowed(req, acl.OpWrite, r.TransactionalID); code != 0 {
		return protocol.Response{Body: addPartitionsAnswer(r, func(string) int16 { return code })}
	}
	denied := map[string]bool{}
	for _, t := range r.Topics {
		if b.topicAllowed(req, acl.OpWrite, t.Topic) != 0 {
			denied[t.Topic] = true
		}
	}
	if len(denied) > 0 {
		return protocol.Response{Body: addPartitionsAnswer(r, func(topic string) int16 {
			if denied[topic] {
				return kerr.TopicAuthorizationFailed.Code
			}
			return kerr.OperationNotAttempted.Code
		})}
	}
	return protocol.Response{Later: func(ctx context.Context) kmsg.Response { return b.txns.coord.AddPartitionsToTxn(ctx, r) }}
}

// addPartitionsAnswer answers every partition of a v0-v3 request with
// code(topic).
func addPartitionsAnswer(r *kmsg.AddPartitionsToTxnRequest, code func(topic string) int16) *kmsg.AddPartitionsToTxnResponse {
	resp := r.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	for _, t := range r.Topics {
		rt := kmsg.NewAddPartitionsToTxnResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p, code(t.Topic)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

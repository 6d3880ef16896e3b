package broker

// WriteTxnMarkers (key 27), v0-v1.
//
// Transaction coordinators send it to partition leaders to end a
// transaction: each marker entry appends a COMMIT or ABORT control batch
// (record.NewEndTxnMarkerBatch) to each of its partitions through the
// normal replication path and is answered per partition once committed
// (acks=all), as writeTxnMarker does. The partition's producer state
// refuses a coordinator epoch older than the producer's last marker's
// (TRANSACTION_COORDINATOR_FENCED) and a producer epoch older than the
// producer's (INVALID_PRODUCER_EPOCH); nothing is written then. Only
// brokers may send it: CLUSTER_ACTION on the cluster when an authorizer is
// configured (CLUSTER_AUTHORIZATION_FAILED on every partition otherwise).
// The entries of one request are independent and written at once.

import (
	"context"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/broker/txn"
	"github.com/kbroker/kbroker/protocol"
	"github.com/kbroker/kbroker/security/acl"
)

func (b *Broker) handleWriteTxnMarkers(_ context.Context, req *protocol.Request) protocol.Response {
	r := req.Body.(*kmsg.WriteTxnMarkersRequest)
	if code := b.clusterAllowed(req, acl.OpClusterAction); code != 0 {
		return protocol.Response{Body: writeTxnMarkersAnswer(r, func(int, txn.TopicPartition) int16 { return code })}
	}
	return protocol.Response{Later: func(ctx context.Context) kmsg.Response {
		codes := make([]map[txn.TopicPartition]int16, len(r.Markers))
		var wg sync.WaitGroup
		for i := range r.Markers {
			wg.Go(func() { codes[i] = b.writeTxnMarker(ctx, &r.Markers[i]) })
		}
		wg.Wait()
		return writeTxnMarkersAnswer(r, func(i int, tp txn.TopicPartition) int16 { return codes[i][tp] })
	}}
}

// writeTxnMarkersAnswer answers every partition of r with code(entry, tp).
func writeTxnMarkersAnswer(r *kmsg.WriteTxnMarkersRequest, code func(int, txn.TopicPartition) int16) *kmsg.WriteTxnMarkersResponse {
	resp := r.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
	for i, m := range r.Markers {
		rm := kmsg.NewWriteTxnMarkersResponseMarker()
		rm.ProducerID = m.ProducerID
		for _, t := range m.Topics {
			rt := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
				rp.Partition, rp.ErrorCode = p, code(i, txn.TopicPartition{Topic: t.Topic, Partition: p})
				rt.Partitions = append(rt.Partitions, rp)
			}
			rm.Topics = append(rm.Topics, rt)
		}
		resp.Markers = append(resp.Markers, rm)
	}
	return resp
}

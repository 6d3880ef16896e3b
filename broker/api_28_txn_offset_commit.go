package broker

// TxnOffsetCommit (key 28), v0-v5.
//
// A transactional producer commits a group's offsets inside its
// transaction (read-process-write). WRITE on the transactional id
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), READ on the group
// (GROUP_AUTHORIZATION_FAILED) and on each topic (TOPIC_AUTHORIZATION_FAILED
// on its partitions). The group's __consumer_offsets partition is verified
// with the transaction coordinator as a transactional produce is
// (txn_verify.go; v5, transaction version 2, adds it to the transaction:
// such clients skip AddOffsetsToTxn), then the group coordinator writes the
// offsets in a transactional batch of the producer: they become visible
// when the transaction's COMMIT marker lands on that partition
// (broker/group/txn_offsets.go). NOT_COORDINATOR when this broker does not
// lead the group's partition.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/broker/group"
	"github.com/kbroker/kbroker/broker/txn"
	"github.com/kbroker/kbroker/protocol"
	"github.com/kbroker/kbroker/security/acl"
)

func (b *Broker) handleTxnOffsetCommit(_ context.Context, req *protocol.Request) protocol.Response {
	r := req.Body.(*kmsg.TxnOffsetCommitRequest)
	if code := b.txnGroupAllowed(req, r.TransactionalID, r.Group); code != 0 {
		return protocol.Response{Body: txnCommitAnswer(r, func(string) int16 { return code })}
	}
	allowed := *r
	allowed.Topics = nil
	var denied []kmsg.TxnOffsetCommitRequestTopic
	for _, t := range r.Topics {
		if b.topicAllowed(req, acl.OpRead, t.Topic) != 0 {
			denied = append(denied, t)
			continue
		}
		allowed.Topics = append(allowed.Topics, t)
	}
	return protocol.Response{Later: func(ctx context.Context) kmsg.Response {
		resp := b.txnOffsetCommit(ctx, &allowed)
		deniedReq := *r
		deniedReq.Topics = denied
		resp.Topics = append(resp.Topics, txnCommitAnswer(&deniedReq, func(string) int16 { return kerr.TopicAuthorizationFailed.Code }).Topics...)
		return resp
	}}
}

// txnOffsetCommit verifies the group's partition with the transaction
// coordinator, then hands the commit to the group coordinator.
func (b *Broker) txnOffsetCommit(ctx context.Context, r *kmsg.TxnOffsetCommitRequest) *kmsg.TxnOffsetCommitResponse {
	all := func(code int16) *kmsg.TxnOffsetCommitResponse {
		return txnCommitAnswer(r, func(string) int16 { return code })
	}
	if r.Group == "" {
		return all(kerr.InvalidGroupID.Code)
	}
	idx := b.groups.coord.PartitionFor(r.Group)
	part, code := b.heldPartition(b.view(), offsetsTopic, idx)
	if code != 0 {
		return all(kerr.NotCoordinator.Code)
	}
	guard := part.BeginTxnVerification(r.ProducerID, r.ProducerEpoch, r.Version >= 5)
	if guard != 0 {
		tp := txn.TopicPartition{Topic: offsetsTopic, Partition: idx}
		got := b.verifyTxn(ctx, r.TransactionalID, r.ProducerID, r.ProducerEpoch, []txn.TopicPartition{tp}, r.Version >= 5)
		if code := txnCommitVerifyError(got[tp], r.Version); code != 0 {
			b.logger.Info("transactional offset commit not verified", "transactional_id", r.TransactionalID,
				"group", r.Group, "producer_id", r.ProducerID, "code", kerr.ErrorForCode(got[tp]))
			return all(code)
		}
	}
	return b.groups.coord.TxnOffsetCommit(ctx, r, group.TxnProducer{ID: r.ProducerID, Epoch: r.ProducerEpoch, Verification: uint64(guard)})
}

// txnCommitVerifyError is what a TxnOffsetCommit gets for a failed
// verification: the produce translation (txn_verify.go), with the
// retriable NOT_ENOUGH_REPLICAS answered COORDINATOR_NOT_AVAILABLE as
// Kafka's group coordinator does, and TRANSACTION_ABORTABLE as
// INVALID_TXN_STATE before v5.
func txnCommitVerifyError(code, version int16) int16 {
	produceVersion := int16(lastDefaultErrorProduceVersion)
	if version >= 5 {
		produceVersion = firstAddPartitionProduceVersion
	}
	out, _ := produceVerifyError(code, produceVersion)
	if out == kerr.NotEnoughReplicas.Code {
		return kerr.CoordinatorNotAvailable.Code
	}
	return out
}

// txnCommitAnswer answers every partition of r with code(topic).
func txnCommitAnswer(r *kmsg.TxnOffsetCommitRequest, code func(topic string) int16) *kmsg.TxnOffsetCommitResponse {
	resp := r.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	group.FillTxnCommitResponse(resp, r, func(topic string, _ int32) int16 { return code(topic) })
	return resp
}

package broker

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/broker/txn"
)

// Transaction verification (KIP-890 part 1, Kafka's
// AddPartitionsToTxnManager): before a transactional batch opens a
// transaction on a partition, its leader asks the transaction coordinator
// whether the partition is in the producer's transaction
// (AddPartitionsToTxn v5, VerifyOnly) or, under transaction version 2
// (Produce v12, TxnOffsetCommit v5), has it add the partition. The
// partition's log hands out a guard first (BeginTxnVerification) that the
// append must carry: a marker written in between (the transaction aborted
// by its timeout) spends it, and the append is refused.

// verifyTimeout bounds a verification round trip.
const verifyTimeout = 10 * time.Second

// verifyTxn asks the coordinator of id about tps for producer pid at
// epoch (add: add them, transaction version 2). It returns the
// coordinator's code per partition; a coordinator that cannot be reached
// answers COORDINATOR_NOT_AVAILABLE or NETWORK_EXCEPTION for all. An add
// that meets CONCURRENT_TRANSACTIONS (the producer's previous transaction
// still writing its markers: a transaction version 2 client starts the
// next one at once) is asked again every add.partitions.to.txn.retry.backoff.ms
// for up to add.partitions.to.txn.retry.backoff.max.ms, as Kafka's leaders
// do, before the client gets it.
func (b *Broker) verifyTxn(ctx context.Context, id string, pid int64, epoch int16, tps []txn.TopicPartition, add bool) map[txn.TopicPartition]int16 {
	deadline := time.Now().Add(b.cfg.AddPartitionsToTxnRetryBackoffMax)
	for {
		codes := b.verifyTxnOnce(ctx, id, pid, epoch, tps, add)
		if !add || !slices.Contains(slices.Collect(maps.Values(codes)), kerr.ConcurrentTransactions.Code) ||
			time.Now().Add(b.cfg.AddPartitionsToTxnRetryBackoff).After(deadline) {
			return codes
		}
		timer := time.NewTimer(b.cfg.AddPartitionsToTxnRetryBackoff)
		select {
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return codes
		}
	}
}

// verifyTxnOnce is one round of verifyTxn.
func (b *Broker) verifyTxnOnce(ctx context.Context, id string, pid int64, epoch int16, tps []txn.TopicPartition, add bool) map[txn.TopicPartition]int16 {
	all := func(code int16) map[txn.TopicPartition]int16 {
		out := make(map[txn.TopicPartition]int16, len(tps))
		for _, tp := range tps {
			out[tp] = code
		}
		return out
	}
	st, ok := b.view().img.Topics[transactionStateTopic]
	if !ok {
		return all(kerr.CoordinatorNotAvailable.Code) // no transaction ever started
	}
	leader, _, err := b.internalTopicLeader(st, txn.PartitionFor(id, int32(len(st.Partitions))), b.cfg.InterBrokerListenerName)
	if err != nil {
		return all(errorCode(err))
	}
	req := verifyRequest(id, pid, epoch, tps, add)
	var resp *kmsg.AddPartitionsToTxnResponse
	if leader == b.cfg.NodeID {
		resp = b.txns.coord.AddPartitionsToTxn(ctx, req)
	} else {
		addr, ok := b.interBrokerAddr(leader)
		if !ok {
			return all(kerr.CoordinatorNotAvailable.Code)
		}
		ctx, cancel := context.WithTimeout(ctx, verifyTimeout)
		defer cancel()
		r, err := b.txns.pool.RoundTrip(ctx, addr, req)
		if err != nil {
			b.logger.Warn("transaction verification with the coordinator failed", "coordinator", leader, "transactional_id", id, "err", err)
			return all(kerr.NetworkException.Code)
		}
		resp = r.(*kmsg.AddPartitionsToTxnResponse)
	}
	if resp.ErrorCode != 0 {
		if resp.ErrorCode == kerr.ClusterAuthorizationFailed.Code {
			// The producer must not see it: the verification did not complete.
			return all(kerr.InvalidTxnState.Code)
		}
		return all(resp.ErrorCode)
	}
	out := all(kerr.UnknownServerError.Code)
	for _, rt := range resp.Transactions {
		for _, t := range rt.Topics {
			for _, p := range t.Partitions {
				out[txn.TopicPartition{Topic: t.Topic, Partition: p.Partition}] = p.ErrorCode
			}
		}
	}
	return out
}

// verifyRequest is AddPartitionsToTxn v5 for one transaction (the broker
// form, KIP-890).
func verifyRequest(id string, pid int64, epoch int16, tps []txn.TopicPartition, add bool) *kmsg.AddPartitionsToTxnRequest {
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.SetVersion(5)
	tx := kmsg.NewAddPartitionsToTxnRequestTransaction()
	tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch, tx.VerifyOnly = id, pid, epoch, !add
	for _, t := range groupTopics(tps) {
		tt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
		tt.Topic, tt.Partitions = t.topic, t.partitions
		tx.Topics = append(tx.Topics, tt)
	}
	req.Transactions = append(req.Transactions, tx)
	return req
}

// Produce versions that decide how verification errors are answered
// (Kafka's AddPartitionsToTxnManager.produceRequestVersionToTransactionSupportedOperation).
const (
	lastDefaultErrorProduceVersion  = 10 // TRANSACTION_ABORTABLE unknown to the client
	firstAddPartitionProduceVersion = 12 // transaction version 2: the broker adds the partition
)

// produceVerifyError translates a coordinator's verification code into
// what a producer of that Produce version gets, as Kafka's ReplicaManager
// does: PRODUCER_FENCED is INVALID_PRODUCER_EPOCH; TRANSACTION_ABORTABLE is
// INVALID_TXN_STATE for clients that do not know it; errors older clients
// may not retry become NOT_ENOUGH_REPLICAS (retried, no metadata refresh).
func produceVerifyError(code, version int16) (int16, string) {
	switch code {
	case 0:
		return 0, ""
	case kerr.ProducerFenced.Code:
		return kerr.InvalidProducerEpoch.Code, ""
	case kerr.TransactionAbortable.Code:
		if version <= lastDefaultErrorProduceVersion {
			return kerr.InvalidTxnState.Code, "Partition was not added to the transaction"
		}
	case kerr.InvalidTxnState.Code:
		return code, "Partition was not added to the transaction"
	case kerr.NetworkException.Code, kerr.CoordinatorLoadInProgress.Code, kerr.CoordinatorNotAvailable.Code, kerr.NotCoordinator.Code:
		return kerr.NotEnoughReplicas.Code, unverified(code)
	case kerr.ConcurrentTransactions.Code:
		if version < firstAddPartitionProduceVersion {
			return kerr.NotEnoughReplicas.Code, unverified(code)
		}
	}
	return code, ""
}

func unverified(code int16) string {
	return fmt.Sprintf("Unable to verify the partition has been added to the transaction. Underlying error: %s",
		kerr.ErrorForCode(code))
}

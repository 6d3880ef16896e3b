package txn

import (
	"context"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// OffsetsTopicName is the topic whose partition AddOffsetsToTxn adds.
const OffsetsTopicName = "__consumer_offsets"

// AddPartitionsToTxn handles AddPartitionsToTxn v0-v5. v0-v3 come from
// producers and add partitions to their transaction. v4+ come from brokers
// (KIP-890): one request carries several transactions; VerifyOnly ones
// only check that every partition is in the transaction (part 1: a
// transactional produce to a partition not added is refused), the others
// add them under transaction version 2 (part 2: Produce v12 adds its
// partition implicitly). Kafka allows v4+ only to brokers (CLUSTER_ACTION);
// the broker checks that before it calls this.
func (c *Coordinator) AddPartitionsToTxn(ctx context.Context, req *kmsg.AddPartitionsToTxnRequest) *kmsg.AddPartitionsToTxnResponse {
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	if req.Version < 4 {
		parts := requestPartitions(req.Topics, func(t kmsg.AddPartitionsToTxnRequestTopic) (string, []int32) { return t.Topic, t.Partitions })
		codes := c.addPartitions(ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, parts, false, TV0)
		for _, t := range groupByTopic(parts, codes, req.Version) {
			rt := kmsg.NewAddPartitionsToTxnResponseTopic()
			rt.Topic = t.topic
			for _, p := range t.partitions {
				rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.partition, p.code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
	resp.Transactions = make([]kmsg.AddPartitionsToTxnResponseTransaction, len(req.Transactions))
	var wg sync.WaitGroup // the transactions are independent: write them at once
	for i := range req.Transactions {
		wg.Go(func() { resp.Transactions[i] = c.addPartitionsForBroker(ctx, &req.Transactions[i], req.Version) })
	}
	wg.Wait()
	return resp
}

func (c *Coordinator) addPartitionsForBroker(ctx context.Context, tx *kmsg.AddPartitionsToTxnRequestTransaction, version int16) kmsg.AddPartitionsToTxnResponseTransaction {
	parts := requestPartitions(tx.Topics, func(t kmsg.AddPartitionsToTxnRequestTransactionTopic) (string, []int32) { return t.Topic, t.Partitions })
	codes := c.addPartitions(ctx, tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch, parts, tx.VerifyOnly, TV2)
	rtx := kmsg.NewAddPartitionsToTxnResponseTransaction()
	rtx.TransactionalID = tx.TransactionalID
	for _, t := range groupByTopic(parts, codes, version) {
		rt := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
		rt.Topic = t.topic
		for _, p := range t.partitions {
			rp := kmsg.NewAddPartitionsToTxnResponseTransactionTopicPartition()
			rp.Partition, rp.ErrorCode = p.partition, p.code
			rt.Partitions = append(rt.Partitions, rp)
		}
		rtx.Topics = append(rtx.Topics, rt)
	}
	return rtx
}

// AddOffsetsToTxn handles AddOffsetsToTxn v0-v4: it adds the
// __consumer_offsets partition of the group to the transaction, so that the
// group's TxnOffsetCommit offsets get the transaction's marker. Clients of
// transaction version 2 use TxnOffsetCommit v5 instead.
func (c *Coordinator) AddOffsetsToTxn(ctx context.Context, req *kmsg.AddOffsetsToTxnRequest) *kmsg.AddOffsetsToTxnResponse {
	resp := req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
	tp := TopicPartition{OffsetsTopicName, c.opts.OffsetsPartitionFor(req.Group)}
	code := c.addToTxn(ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, []TopicPartition{tp}, TV0)
	resp.ErrorCode = fencedForVersion(code, req.Version, 2)
	return resp
}

// addPartitions adds (or, verifyOnly, checks) parts and returns a code per
// partition. Partitions of unknown topics get UNKNOWN_TOPIC_OR_PARTITION
// and the others OPERATION_NOT_ATTEMPTED, as KafkaApis answers before it
// calls the coordinator.
func (c *Coordinator) addPartitions(ctx context.Context, id string, pid int64, epoch int16, parts []TopicPartition, verifyOnly bool, tv TransactionVersion) map[TopicPartition]int16 {
	if unknown := c.unknownPartitions(parts); len(unknown) > 0 {
		codes := make(map[TopicPartition]int16, len(parts))
		for _, tp := range parts {
			codes[tp] = codeOperationNotAttempted
			if unknown[tp] {
				codes[tp] = codeUnknownTopicOrPartition
			}
		}
		return codes
	}
	if verifyOnly {
		return c.verifyPartitions(id, pid, epoch, parts)
	}
	return allCodes(parts, c.addToTxn(ctx, id, pid, epoch, parts, tv))
}

func (c *Coordinator) unknownPartitions(parts []TopicPartition) map[TopicPartition]bool {
	if c.opts.TopicPartitions == nil {
		return nil
	}
	var unknown map[TopicPartition]bool
	for _, tp := range parts {
		n, ok := c.opts.TopicPartitions(tp.Topic)
		if !ok || tp.Partition < 0 || tp.Partition >= n {
			if unknown == nil {
				unknown = make(map[TopicPartition]bool)
			}
			unknown[tp] = true
		}
	}
	return unknown
}

func allCodes(parts []TopicPartition, code int16) map[TopicPartition]int16 {
	codes := make(map[TopicPartition]int16, len(parts))
	for _, tp := range parts {
		codes[tp] = code
	}
	return codes
}

// addToTxn is Kafka's handleAddPartitionsToTransaction.
func (c *Coordinator) addToTxn(ctx context.Context, id string, pid int64, epoch int16, parts []TopicPartition, tv TransactionVersion) int16 {
	if id == "" {
		return codeInvalidRequest
	}
	e, code := c.lookup(id, nil)
	switch {
	case code != 0:
		return code
	case e == nil:
		return codeInvalidProducerIDMapping
	}
	d, code := c.decide(ctx, e, func(m *txnMetadata, _ int64) decision {
		return decideAddPartitions(m, pid, epoch, parts, tv, c.nowMs())
	})
	if code != 0 || d.t == nil {
		return code
	}
	return c.writeTransition(e, write{t: d.t})
}

func decideAddPartitions(m *txnMetadata, pid int64, epoch int16, parts []TopicPartition, tv TransactionVersion, nowMs int64) decision {
	switch {
	case m.pendingInProgress():
		// First, so that a pending TV2 overflow completes before the
		// client's new producer id is checked.
		return fail(codeConcurrentTransactions)
	case m.producerID != pid:
		return fail(codeInvalidProducerIDMapping)
	case m.producerEpoch != epoch:
		return fail(codeProducerFenced)
	case m.state == PrepareCommit || m.state == PrepareAbort:
		return fail(codeConcurrentTransactions)
	case m.state == Ongoing && containsAll(m.partitions, parts):
		return decision{} // nothing to write
	case m.state == Dead || m.state == PrepareEpochFence:
		return decision{internal: errIllegalState(m)}
	}
	return transition(m.prepareAddPartitions(parts, nowMs, tv))
}

// verifyPartitions is Kafka's handleVerifyPartitionsInTransaction: every
// partition must be in the open transaction. The pending state is not
// checked: the partition leader validates the produce again on append.
func (c *Coordinator) verifyPartitions(id string, pid int64, epoch int16, parts []TopicPartition) map[TopicPartition]int16 {
	if id == "" {
		return allCodes(parts, codeInvalidRequest)
	}
	e, code := c.lookup(id, nil)
	switch {
	case code != 0:
		return allCodes(parts, code)
	case e == nil:
		return allCodes(parts, codeInvalidProducerIDMapping)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	m := e.md
	switch {
	case m.producerID != pid:
		return allCodes(parts, codeInvalidProducerIDMapping)
	case m.producerEpoch != epoch:
		return allCodes(parts, codeProducerFenced)
	case m.state == PrepareCommit || m.state == PrepareAbort:
		return allCodes(parts, codeConcurrentTransactions)
	}
	codes := make(map[TopicPartition]int16, len(parts))
	for _, tp := range parts {
		codes[tp] = codeTransactionAbortable
		if _, ok := m.partitions[tp]; ok {
			codes[tp] = codeNone
		}
	}
	return codes
}

func containsAll(set map[TopicPartition]struct{}, parts []TopicPartition) bool {
	for _, tp := range parts {
		if _, ok := set[tp]; !ok {
			return false
		}
	}
	return true
}

// requestPartitions flattens a request's topics, without duplicates.
func requestPartitions[T any](topics []T, fields func(T) (string, []int32)) []TopicPartition {
	var parts []TopicPartition
	seen := make(map[TopicPartition]bool)
	for _, t := range topics {
		topic, partitions := fields(t)
		for _, p := range partitions {
			tp := TopicPartition{topic, p}
			if !seen[tp] {
				seen[tp] = true
				parts = append(parts, tp)
			}
		}
	}
	return parts
}

type topicCodes struct {
	topic      string
	partitions []partitionCode
}

type partitionCode struct {
	partition int32
	code      int16
}

// groupByTopic orders the codes by topic, in request order, with
// PRODUCER_FENCED as old versions know it (AddPartitionsToTxn v0-v1).
func groupByTopic(parts []TopicPartition, codes map[TopicPartition]int16, version int16) []topicCodes {
	var out []topicCodes
	index := make(map[string]int)
	for _, tp := range parts {
		i, ok := index[tp.Topic]
		if !ok {
			i = len(out)
			index[tp.Topic] = i
			out = append(out, topicCodes{topic: tp.Topic})
		}
		out[i].partitions = append(out[i].partitions, partitionCode{tp.Partition, fencedForVersion(codes[tp], version, 2)})
	}
	return out
}

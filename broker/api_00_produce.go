package broker

// Produce (key 0), v3-v12 (record batch v2 only: v0-v2 carry old message
// formats, which Kafka 4 no longer accepts; ApiVersions says so).
//
// Per topic: WRITE on it (TOPIC_AUTHORIZATION_FAILED, nothing appended).
// Per partition: the topic must exist and this broker must lead the
// partition (NOT_LEADER_OR_FOLLOWER otherwise, with the current leader in v10+
// answers); the records must be within max.message.bytes (MESSAGE_TOO_LARGE)
// and exactly one v2 batch (INVALID_RECORD, UNSUPPORTED_FOR_MESSAGE_FORMAT),
// with a valid CRC (CORRUPT_MESSAGE) and recordCount == lastOffsetDelta+1
// (INVALID_RECORD). The batch is parsed once, here (record.ParseProduce), and
// the parsed record.Batch travels down through replication to the log, which
// does not parse it again. Records are decoded only for compacted topics (a
// keyless record is INVALID_RECORD); nothing is re-encoded. Idempotent
// producers are checked against the partition's
// producer state: a duplicate is answered with the original offsets, a gap
// with OUT_OF_ORDER_SEQUENCE_NUMBER, an old epoch with INVALID_PRODUCER_EPOCH.
//
// Transactions: a request with a transactional id needs WRITE on it
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED on every partition otherwise),
// and so does a transactional batch; clients may not write control
// batches (INVALID_RECORD). A transactional batch that would open a
// transaction on its partition is verified with the transaction
// coordinator first (txn_verify.go: KIP-890 part 1; Produce v12 adds the
// partition, part 2), then appended with the verification's guard; a
// partition not in the transaction is refused (INVALID_TXN_STATE or
// TRANSACTION_ABORTABLE) and nothing is written. Those appends happen in
// the deferred answer, in request order, and any later batch of the
// producer to the partition is deferred behind them (txnOrder) even when
// the transaction is open by then, so that sequences stay in order.
//
// acks=0 gets no response (an error closes the connection, so the client
// notices); acks=1 is answered after the local append; acks=-1 refuses with
// NOT_ENOUGH_REPLICAS before appending when the ISR is smaller than
// min.insync.replicas, and is answered once the HW passes the batch, or with
// NOT_ENOUGH_REPLICAS_AFTER_APPEND or REQUEST_TIMED_OUT. The wait happens on
// the connection's writer, so the next request's appends go ahead in order.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/config"
	"github.com/kbroker/kbroker/protocol"
	"github.com/kbroker/kbroker/record"
	"github.com/kbroker/kbroker/replication"
	"github.com/kbroker/kbroker/security/acl"
	"github.com/kbroker/kbroker/storage"
)

// pendingAck is an acks=all partition waiting for its HW.
type pendingAck struct {
	part       *replication.Partition
	lastOffset int64
	resp       *kmsg.ProduceResponseTopicPartition
}

func (b *Broker) handleProduce(_ context.Context, req *protocol.Request) protocol.Response {
	r := req.Body.(*kmsg.ProduceRequest)
	resp := r.ResponseKind().(*kmsg.ProduceResponse)
	if r.Acks != 0 && r.Acks != 1 && r.Acks != -1 {
		return protocol.Response{Body: protocol.ErrorResponse(r, kerr.InvalidRequiredAcks.Code)}
	}
	pt := &produceTxn{version: r.Version}
	if r.TransactionID != nil {
		if code := b.TransactionalIDAllowed(req, acl.OpWrite, *r.TransactionID); code != 0 {
			return protocol.Response{Body: protocol.ErrorResponse(r, code)}
		}
		pt.id = *r.TransactionID
	}
	view := b.view()
	var waits []pendingAck
	failed := false
	for _, rt := range r.Topics {
		denied := b.topicAllowed(req, acl.OpWrite, rt.Topic)
		out := kmsg.NewProduceResponseTopic()
		out.Topic, out.TopicID = rt.Topic, rt.TopicID
		out.Partitions = make([]kmsg.ProduceResponseTopicPartition, len(rt.Partitions))
		for i, rp := range rt.Partitions {
			pr := &out.Partitions[i]
			*pr = kmsg.NewProduceResponseTopicPartition()
			pr.Partition = rp.Partition
			if denied != 0 {
				pr.ErrorCode, failed = denied, true
				continue
			}
			part, lastOffset := b.producePartition(view, rt.Topic, r.Acks, rp, pr, pt)
			if pr.ErrorCode != 0 {
				failed = true
			} else if r.Acks == -1 && part != nil {
				waits = append(waits, pendingAck{part: part, lastOffset: lastOffset})
			}
		}
		resp.Topics = append(resp.Topics, out)
	}
	// Point at the response entries only now that the slices are final.
	for i := range waits {
		waits[i].resp = findProducePartition(resp, waits[i].part)
	}
	if len(pt.deferred) > 0 && r.Acks == 0 {
		// No answer to defer: verify and append now (transactional
		// producers use acks=all; this only keeps acks=0 correct).
		b.appendVerified(context.Background(), view, pt, r.Acks)
		b.txnOrder.release(pt)
		failed = failed || pt.failed
	}
	switch {
	case r.Acks == 0 && failed:
		return protocol.Response{Close: true}
	case r.Acks == 0:
		return protocol.Response{NoReply: true}
	case len(waits) == 0 && len(pt.deferred) == 0:
		return protocol.Response{Body: resp}
	}
	timeout := time.Duration(r.TimeoutMillis) * time.Millisecond
	later := protocol.Response{Later: func(ctx context.Context) kmsg.Response {
		if len(pt.deferred) > 0 {
			waits = append(waits, b.appendVerified(ctx, view, pt, r.Acks)...)
		}
		waitForHWs(ctx, timeout, waits)
		return resp
	}}
	if len(pt.deferred) > 0 {
		later.Done = func() { b.txnOrder.release(pt) }
	}
	return later
}

// waitForHWs waits for every acks=all partition's HW, all of them within
// one timeout (Kafka's DelayedProduce), and sets each one's answer.
func waitForHWs(ctx context.Context, timeout time.Duration, waits []pendingAck) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	expired := timer.C
	for _, w := range waits {
		err := w.part.WaitForHWUntil(ctx, expired, w.lastOffset)
		if errors.Is(err, kerr.RequestTimedOut) && ctx.Err() == nil {
			// The timer has fired and been received: the partitions after
			// this one are answered as they stand, without waiting.
			stopped := make(chan time.Time)
			close(stopped)
			expired = stopped
		}
		if err != nil {
			w.resp.ErrorCode = errorCode(err)
			w.resp.BaseOffset = -1
		}
	}
}

// producePartition validates and appends one partition's records, filling
// pr. It returns the partition and the last offset written, for acks=all.
// A transactional batch that needs verification is left to pt (nil
// partition, no error yet).
func (b *Broker) producePartition(view *metadataView, topic string, acks int16, rp kmsg.ProduceRequestTopicPartition,
	pr *kmsg.ProduceResponseTopicPartition, pt *produceTxn) (*replication.Partition, int64) {
	t, tc, ok := view.topic(topic)
	if !ok || rp.Partition < 0 || int(rp.Partition) >= len(t.Partitions) {
		pr.ErrorCode = kerr.UnknownTopicOrPartition.Code
		return nil, 0
	}
	part, ok := b.replicas.Partition(topic, rp.Partition)
	if !ok {
		pr.ErrorCode = kerr.NotLeaderForPartition.Code
		return nil, 0
	}
	batch, code, msg := validateProduceRecords(rp.Records, b.now().UnixMilli(), tc)
	if code == 0 {
		code, msg = pt.check(batch.Header())
	}
	if code != 0 {
		pr.ErrorCode, pr.ErrorMessage = code, &msg
		return nil, 0
	}
	opts := storage.AppendOptions{}
	if tc.MessageTimestampType == "LogAppendTime" {
		opts.LogAppendTime = true
		opts.Now = b.now()
	}
	if h := batch.Header(); h.IsTransactional() {
		tv2 := pt.version >= firstAddPartitionProduceVersion
		opts.TxnVerification = part.BeginTxnVerification(h.ProducerID, h.ProducerEpoch, tv2)
		key := txnOrderKey{h.ProducerID, topic, rp.Partition}
		if opts.TxnVerification != 0 || b.txnOrder.behind(key) {
			pt.deferred = append(pt.deferred, deferredAppend{topic: topic, part: part, batch: batch.Clone(), opts: opts, pr: pr,
				verify: opts.TxnVerification != 0})
			b.txnOrder.add(key, 1)
			return nil, 0
		}
	}
	return b.appendProduce(view, topic, part, batch, acks, opts, pr)
}

// appendProduce appends one partition's validated batch and fills pr.
func (b *Broker) appendProduce(view *metadataView, topic string, part *replication.Partition, batch record.Batch,
	acks int16, opts storage.AppendOptions, pr *kmsg.ProduceResponseTopicPartition) (*replication.Partition, int64) {
	info, err := part.AppendAsLeader([]record.Batch{batch}, acks, opts)
	var dup *storage.DuplicateBatchError
	switch {
	case errors.As(err, &dup):
		// Kafka answers a resent batch with the offsets it got the first time.
		pr.BaseOffset = dup.FirstOffset
		pr.LogStartOffset = part.Log().LogStartOffset()
		return part, dup.LastOffset
	case err != nil:
		pr.ErrorCode = errorCode(err)
		if pr.ErrorCode == kerr.CorruptMessage.Code || pr.ErrorCode == kerr.InvalidRecord.Code {
			msg := err.Error()
			pr.ErrorMessage = &msg
		}
		switch pr.ErrorCode {
		case kerr.UnknownServerError.Code, kerr.KafkaStorageError.Code:
			b.logger.Error("produce append failed", "topic", topic, "partition", part.Index, "err", err)
		case kerr.NotLeaderForPartition.Code:
			b.setCurrentLeader(view, topic, part.Index, pr)
		case kerr.InvalidProducerEpoch.Code, kerr.InvalidTxnState.Code:
			msg := err.Error()
			pr.ErrorMessage = &msg
			b.logger.Info("produce refused: fenced or outside its transaction", "topic", topic, "partition", part.Index,
				"producer_id", batch.Header().ProducerID, "producer_epoch", batch.Header().ProducerEpoch, "err", err)
		}
		return nil, 0
	}
	b.metrics.bytesIn.WithLabelValues(topic).Add(float64(len(batch.Bytes())))
	b.metrics.recordsIn.WithLabelValues(topic).Add(float64(info.NumRecords))
	pr.BaseOffset = info.FirstOffset
	pr.LogAppendTime = info.LogAppendTime
	pr.LogStartOffset = info.LogStartOffset
	return part, info.LastOffset
}

// validateProduceRecords checks what Kafka checks before an append and
// returns the batch, parsed once: size against max.message.bytes, the batch
// itself (record.ParseProduce), keys on compacted topics, timestamps of
// CreateTime topics.
func validateProduceRecords(records []byte, now int64, tc config.TopicConfig) (record.Batch, int16, string) {
	if len(records) == 0 {
		return record.Batch{}, kerr.InvalidRecord.Code, "produce request has no records"
	}
	if len(records) > int(tc.MaxMessageBytes) {
		return record.Batch{}, kerr.MessageTooLarge.Code, "record batch is larger than max.message.bytes"
	}
	batch, err := record.ParseProduce(records)
	if err == nil && tc.Compact() {
		err = checkKeyed(batch)
	}
	if err != nil {
		return record.Batch{}, errorCode(err), err.Error()
	}
	if tc.MessageTimestampType != "LogAppendTime" {
		if code, msg := validateTimestamps(batch.Header(), now, tc); code != 0 {
			return record.Batch{}, code, msg
		}
	}
	return batch, 0, ""
}

// checkKeyed refuses a record without a key for a compacted topic: it could
// never be compacted away (Kafka: INVALID_RECORD). Records that do not
// decode are CORRUPT_MESSAGE (record.ErrCorruptBatch).
func checkKeyed(b record.Batch) error {
	it, err := b.Records()
	if err != nil {
		return err
	}
	for it.Next() {
		if r := it.Record(); r.Key == nil {
			return fmt.Errorf("%w: compacted topic cannot accept a record without key (batch offset delta %d)",
				record.ErrInvalidRecord, r.OffsetDelta)
		}
	}
	return it.Err()
}

// setCurrentLeader tells the client where the partition moved (KIP-951).
func (b *Broker) setCurrentLeader(view *metadataView, topic string, partition int32, pr *kmsg.ProduceResponseTopicPartition) {
	t, ok := view.img.Topics[topic]
	if !ok || int(partition) >= len(t.Partitions) {
		return
	}
	p := t.Partitions[partition]
	pr.CurrentLeader.LeaderID = p.Leader
	pr.CurrentLeader.LeaderEpoch = p.LeaderEpoch
}

func findProducePartition(resp *kmsg.ProduceResponse, part *replication.Partition) *kmsg.ProduceResponseTopicPartition {
	for i := range resp.Topics {
		if resp.Topics[i].Topic != part.Topic {
			continue
		}
		for j := range resp.Topics[i].Partitions {
			if resp.Topics[i].Partitions[j].Partition == part.Index {
				return &resp.Topics[i].Partitions[j]
			}
		}
	}
	return &kmsg.ProduceResponseTopicPartition{}
}

// validateTimestamps applies message.timestamp.before.max.ms and
// message.timestamp.after.max.ms (KIP-937) to a CreateTime batch, from its
// header: the largest timestamp may not be more than after.max in the
// future, the first record's timestamp not more than before.max in the past.
// (Kafka checks every record; a producer's records within one batch are in
// time order, so the header's bounds are what matter in practice.)
func validateTimestamps(h record.BatchHeader, now int64, tc config.TopicConfig) (int16, string) {
	if tc.MessageTimestampAfterMaxMs < math.MaxInt64-now && h.MaxTimestamp > now+tc.MessageTimestampAfterMaxMs {
		return kerr.InvalidTimestamp.Code, fmt.Sprintf("timestamp %d is more than message.timestamp.after.max.ms=%d ahead of the broker's time %d",
			h.MaxTimestamp, tc.MessageTimestampAfterMaxMs, now)
	}
	if tc.MessageTimestampBeforeMaxMs < now && h.BaseTimestamp < now-tc.MessageTimestampBeforeMaxMs {
		return kerr.InvalidTimestamp.Code, fmt.Sprintf("timestamp %d is more than message.timestamp.before.max.ms=%d behind the broker's time %d",
			h.BaseTimestamp, tc.MessageTimestampBeforeMaxMs, now)
	}
	return 0, ""
}

package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/broker/txn"
	"github.com/kbroker/kbroker/record"
	"github.com/kbroker/kbroker/replication"
	"github.com/kbroker/kbroker/storage"
)

// produceTxn is the transactional part of one Produce request: its
// transactional id and the batches that wait for their verification with
// the transaction coordinator (txn_verify.go).
type produceTxn struct {
	id       string // "" without a transactional id
	version  int16
	deferred []deferredAppend
	failed   bool // a deferred append failed (acks=0 closes the connection)
}

// deferredAppend is a transactional batch that opens a transaction on its
// partition: it is appended once verified, with the guard in opts.
type deferredAppend struct {
	topic string
	part  *replication.Partition
	batch record.Batch // its own bytes: the request's are recycled
	opts  storage.AppendOptions
	pr    *kmsg.ProduceResponseTopicPartition
}

// check refuses what a client may not write: control batches
// (INVALID_RECORD) and transactional batches without a transactional id
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED, as Kafka answers a transactional
// produce it did not authorize).
func (pt *produceTxn) check(h record.BatchHeader) (int16, string) {
	switch {
	case h.IsControl():
		return kerr.InvalidRecord.Code, "clients may not write control batches (transaction markers)"
	case h.IsTransactional() && pt.id == "":
		return kerr.TransactionalIDAuthorizationFailed.Code, "a transactional batch needs the request's transactional id"
	case h.IsTransactional() && h.ProducerID < 0:
		return kerr.InvalidRecord.Code, "a transactional batch needs a producer id"
	}
	return 0, ""
}

// appendVerified verifies the deferred batches with the coordinator (one
// request per producer id and epoch: a request carries one producer's)
// and appends those verified, in request order. It returns the acks=all
// waits of those appended.
func (b *Broker) appendVerified(ctx context.Context, view *metadataView, pt *produceTxn, acks int16) []pendingAck {
	type producer struct {
		id    int64
		epoch int16
	}
	tps := map[producer][]txn.TopicPartition{}
	for _, d := range pt.deferred {
		h := d.batch.Header()
		p := producer{h.ProducerID, h.ProducerEpoch}
		tps[p] = append(tps[p], txn.TopicPartition{Topic: d.topic, Partition: d.part.Index})
	}
	codes := map[txn.TopicPartition]int16{}
	for p, list := range tps {
		for tp, code := range b.verifyTxn(ctx, pt.id, p.id, p.epoch, list, pt.version >= firstAddPartitionProduceVersion) {
			codes[tp] = code
		}
	}
	var waits []pendingAck
	for _, d := range pt.deferred {
		code, msg := produceVerifyError(codes[txn.TopicPartition{Topic: d.topic, Partition: d.part.Index}], pt.version)
		if code != 0 {
			d.pr.ErrorCode, pt.failed = code, true
			if msg != "" {
				d.pr.ErrorMessage = &msg
			}
			b.logger.Info("transactional produce not verified", "transactional_id", pt.id, "topic", d.topic,
				"partition", d.part.Index, "producer_id", d.batch.Header().ProducerID, "code", kerr.ErrorForCode(code))
			continue
		}
		part, last := b.appendProduce(view, d.topic, d.part, d.batch, acks, d.opts, d.pr)
		if d.pr.ErrorCode != 0 {
			pt.failed = true
		} else if acks == -1 && part != nil {
			waits = append(waits, pendingAck{part: part, lastOffset: last, resp: d.pr})
		}
	}
	return waits
}

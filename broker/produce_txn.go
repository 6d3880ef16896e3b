package broker

import (
	"context"
	"sync"

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

// txnOrderKey is one producer's batches to one partition.
type txnOrderKey struct {
	producerID int64
	topic      string
	partition  int32
}

// txnOrder counts the deferred appends not yet done, per producer and
// partition. A batch behind one of them is deferred too, even when it
// needs no verification (the transaction was opened meanwhile by an earlier
// deferred batch): appended at once, it would pass the batches still
// waiting and leave a sequence gap (OUT_OF_ORDER_SEQUENCE_NUMBER). The
// connection's deferred answers run in order, so deferring keeps the
// producer's order on that connection. The zero value is ready.
type txnOrder struct {
	mu      sync.Mutex
	pending map[txnOrderKey]int
}

// behind reports whether a batch of k must wait for deferred appends.
func (o *txnOrder) behind(k txnOrderKey) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.pending[k] > 0
}

func (o *txnOrder) add(k txnOrderKey, n int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.pending == nil {
		o.pending = map[txnOrderKey]int{}
	}
	if o.pending[k] += n; o.pending[k] <= 0 {
		delete(o.pending, k)
	}
}

// release forgets pt's deferred appends once they are done or dropped (the
// response's Done hook: it runs even when the connection closes first).
func (o *txnOrder) release(pt *produceTxn) {
	for _, d := range pt.deferred {
		o.add(d.key(), -1)
	}
}

// deferredAppend is a transactional batch that opens a transaction on its
// partition: it is appended once verified, with the guard in opts.
type deferredAppend struct {
	topic string
	part  *replication.Partition
	batch record.Batch // its own bytes: the request's are recycled
	opts  storage.AppendOptions
	pr    *kmsg.ProduceResponseTopicPartition
	// verify is false for a batch deferred only to stay behind another
	// (txnOrder): its transaction is already open on the partition.
	verify bool
}

func (d *deferredAppend) key() txnOrderKey {
	return txnOrderKey{d.batch.Header().ProducerID, d.topic, d.part.Index}
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
		if !d.verify {
			continue
		}
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

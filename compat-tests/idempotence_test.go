package compat

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Idempotent producers: a resent batch is answered with its first offsets and
// not written again; a sequence gap gets OUT_OF_ORDER_SEQUENCE_NUMBER; an old
// epoch gets INVALID_PRODUCER_EPOCH; and the producer state survives a clean
// restart and a kill -9.
func TestIdempotentProducerDedupeAndGaps(t *testing.T) {
	needOwnCluster(t)
	c := startCluster(t, clusterOpts{brokers: 1})
	adm := newAdmin(t, c.seeds())
	topic := newTopic(t, adm, 1, 1, nil)

	cl := newClient(t, c.seeds())
	init := kmsg.NewPtrInitProducerIDRequest()
	init.TransactionTimeoutMillis = 60000
	initResp, err := init.RequestWith(ctxTimeout(t, 10*time.Second), cl)
	must(t, err, "InitProducerId")
	must(t, kerr.ErrorForCode(initResp.ErrorCode), "InitProducerId")
	pid := initResp.ProducerID
	now := time.Now().UnixMilli()
	batch := func(epoch int16, seq int32, n int) []byte {
		ts := make([]int64, n)
		for i := range ts {
			ts[i] = now
		}
		return rawBatch{producerID: pid, producerEpoch: epoch, baseSequence: seq, timestamps: ts}.encode()
	}
	produce := func(b []byte) kmsg.ProduceResponseTopicPartition {
		t.Helper()
		cl := newClient(t, c.seeds())
		resp, err := produceRawReq(topic, 0, -1, b).RequestWith(ctxTimeout(t, 20*time.Second), cl)
		must(t, err, "produce")
		return resp.Topics[0].Partitions[0]
	}
	expect := func(p kmsg.ProduceResponseTopicPartition, code int16, offset int64) {
		t.Helper()
		if p.ErrorCode != code {
			t.Fatalf("produce error %v, want %v", kerr.ErrorForCode(p.ErrorCode), kerr.ErrorForCode(code))
		}
		if code == 0 && p.BaseOffset != offset {
			t.Fatalf("base offset %d, want %d", p.BaseOffset, offset)
		}
	}

	first := batch(0, 0, 3)
	expect(produce(first), 0, 0)
	expect(produce(first), 0, 0) // duplicate: original offsets, nothing written
	expect(produce(batch(0, 5, 1)), kerr.OutOfOrderSequenceNumber.Code, 0)
	second := batch(0, 3, 2)
	expect(produce(second), 0, 3)

	// Clean restart, then kill -9: the state is rebuilt both ways.
	for _, crash := range []bool{false, true} {
		if crash {
			c.nodes[0].kill9()
		} else {
			c.nodes[0].stop()
		}
		c.restart(c.nodes[0])
		c.waitServing(60 * time.Second)
		waitFor(t, 30*time.Second, "partition leader", func() error {
			p := produce(second)
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return err
			}
			if p.BaseOffset != 3 {
				t.Fatalf("after restart (crash=%v) a duplicate got base offset %d, want 3", crash, p.BaseOffset)
			}
			return nil
		})
		expect(produce(batch(0, 9, 1)), kerr.OutOfOrderSequenceNumber.Code, 0)
	}
	expect(produce(batch(1, 0, 1)), 0, 5) // new epoch starts at sequence 0
	expect(produce(batch(0, 5, 1)), kerr.InvalidProducerEpoch.Code, 0)

	ends := endOffsets(t, c.seeds(), topic)
	if ends[0] != 6 {
		t.Fatalf("log end %d, want 6: duplicates were written", ends[0])
	}
}

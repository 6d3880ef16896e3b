package compat

import (
	"bytes"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

type producedKey struct {
	partition int32
	offset    int64
}

// Produce 100,000 records with keys, headers and every compression codec
// with acks=all, read them back byte for byte, in order per partition, and
// check that ListOffsets agrees.
func TestProduceConsumeEveryCodec(t *testing.T) {
	tg := singleNode(t)
	adm := newAdmin(t, tg.seeds)
	topic := newTopic(t, adm, 3, 1, nil)

	codecs := []kgo.CompressionCodec{kgo.NoCompression(), kgo.GzipCompression(), kgo.SnappyCompression(), kgo.Lz4Compression(), kgo.ZstdCompression()}
	const perCodec = 20000
	var mu sync.Mutex
	produced := make(map[producedKey]*kgo.Record)
	lastOffset := make(map[string]map[int32]int64) // per producer, per partition: ordering check
	var wg sync.WaitGroup
	for ci, codec := range codecs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("codec-%d", ci)
			cl := newClient(t, tg.seeds, kgo.ProducerBatchCompression(codec), kgo.RequiredAcks(kgo.AllISRAcks()),
				kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(5*time.Millisecond))
			ctx := ctxTimeout(t, 2*time.Minute)
			var pwg sync.WaitGroup
			for i := range perCodec {
				r := &kgo.Record{
					Key:   []byte(fmt.Sprintf("%s-key-%d", name, i)),
					Value: bytes.Repeat([]byte{byte(i), byte(ci)}, 50+i%50),
					Headers: []kgo.RecordHeader{
						{Key: "producer", Value: []byte(name)},
						{Key: "seq", Value: []byte(fmt.Sprint(i))},
					},
				}
				pwg.Add(1)
				cl.Produce(ctx, r, func(r *kgo.Record, err error) {
					defer pwg.Done()
					if err != nil {
						t.Errorf("produce %s: %v", name, err)
						return
					}
					mu.Lock()
					defer mu.Unlock()
					produced[producedKey{r.Partition, r.Offset}] = r
					if lastOffset[name] == nil {
						lastOffset[name] = map[int32]int64{}
					}
					if prev, ok := lastOffset[name][r.Partition]; ok && r.Offset <= prev {
						t.Errorf("%s: offset %d acknowledged after %d in partition %d", name, r.Offset, prev, r.Partition)
					}
					lastOffset[name][r.Partition] = r.Offset
				})
			}
			pwg.Wait()
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	total := len(codecs) * perCodec
	if len(produced) != total {
		t.Fatalf("%d distinct offsets acknowledged, want %d", len(produced), total)
	}

	consumed := consumeN(t, tg.seeds, topic, total, 2*time.Minute)
	next := map[int32]int64{}
	for _, r := range consumed {
		if want := next[r.Partition]; r.Offset != want {
			t.Fatalf("partition %d: consumed offset %d, want %d (gap or reorder)", r.Partition, r.Offset, want)
		}
		next[r.Partition] = r.Offset + 1
		p, ok := produced[producedKey{r.Partition, r.Offset}]
		if !ok {
			t.Fatalf("consumed %d/%d which was never acknowledged", r.Partition, r.Offset)
		}
		if !bytes.Equal(p.Key, r.Key) || !bytes.Equal(p.Value, r.Value) || !headersEqual(p.Headers, r.Headers) {
			t.Fatalf("record %d/%d differs: key %q vs %q", r.Partition, r.Offset, p.Key, r.Key)
		}
	}

	ctx := ctxTimeout(t, 30*time.Second)
	ends, err := adm.ListEndOffsets(ctx, topic)
	must(t, err, "ListEndOffsets")
	starts, err := adm.ListStartOffsets(ctx, topic)
	must(t, err, "ListStartOffsets")
	var sum int64
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			t.Fatalf("end offset %d: %v", o.Partition, o.Err)
		}
		if o.Offset != next[o.Partition] {
			t.Fatalf("partition %d: ListOffsets latest %d, consumed up to %d", o.Partition, o.Offset, next[o.Partition])
		}
		sum += o.Offset
	})
	starts.Each(func(o kadm.ListedOffset) {
		if o.Offset != 0 {
			t.Fatalf("partition %d: earliest %d, want 0", o.Partition, o.Offset)
		}
	})
	if sum != int64(total) {
		t.Fatalf("end offsets sum to %d, want %d", sum, total)
	}
}

func headersEqual(a, b []kgo.RecordHeader) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Key != b[i].Key || !bytes.Equal(a[i].Value, b[i].Value) {
			return false
		}
	}
	return true
}

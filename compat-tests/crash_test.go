package compat

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// kill -9 the broker in the middle of an idempotent acks=all produce; after
// a restart every acknowledged record is there, byte for byte, and every
// batch served is whole (length and CRC-32C check out).
func TestKillDuringProduceKeepsAcknowledged(t *testing.T) {
	needOwnCluster(t)
	c := startCluster(t, clusterOpts{brokers: 1, flags: []string{"--log.flush.interval.messages=1", "--log.segment.bytes=262144"}})
	seeds := c.seeds()
	adm := newAdmin(t, seeds)
	topic := newTopic(t, adm, 3, 1, nil)

	var mu sync.Mutex
	acked := map[producedKey]*kgo.Record{}
	cl := newClient(t, seeds, kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordDeliveryTimeout(5*time.Second))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ctx.Err() == nil; i++ {
			r := &kgo.Record{Key: []byte(fmt.Sprintf("k%d", i)), Value: bytes.Repeat([]byte{byte(i)}, 200)}
			cl.Produce(ctx, r, func(r *kgo.Record, err error) {
				if err == nil {
					mu.Lock()
					acked[producedKey{r.Partition, r.Offset}] = r
					mu.Unlock()
				}
			})
			if i%500 == 499 {
				time.Sleep(time.Millisecond) // pace the producer so the kill lands mid-stream
			}
		}
	}()
	waitFor(t, 60*time.Second, "5000 acknowledged records", func() error {
		mu.Lock()
		defer mu.Unlock()
		if len(acked) < 5000 {
			return fmt.Errorf("%d acknowledged", len(acked))
		}
		return nil
	})
	c.nodes[0].kill9()
	cancel()
	wg.Wait()
	cl.Close()
	mu.Lock()
	snapshot := make(map[producedKey]*kgo.Record, len(acked))
	for k, v := range acked {
		snapshot[k] = v
	}
	mu.Unlock()
	t.Logf("%d records acknowledged before kill -9", len(snapshot))

	c.restart(c.nodes[0])
	c.waitServing(60 * time.Second)

	ends := endOffsets(t, seeds, topic)
	var total int64
	for _, e := range ends {
		total += e
	}
	if total < int64(len(snapshot)) {
		t.Fatalf("after restart the log holds %d records, but %d were acknowledged", total, len(snapshot))
	}
	got := map[producedKey]*kgo.Record{}
	for _, r := range consumeN(t, seeds, topic, int(total), time.Minute) {
		got[producedKey{r.Partition, r.Offset}] = r
	}
	for k, want := range snapshot {
		r, ok := got[k]
		if !ok {
			t.Fatalf("acknowledged record %d/%d lost", k.partition, k.offset)
		}
		if !bytes.Equal(r.Key, want.Key) || !bytes.Equal(r.Value, want.Value) {
			t.Fatalf("acknowledged record %d/%d changed: key %q, want %q", k.partition, k.offset, r.Key, want.Key)
		}
	}
	checkBatchesIntact(t, seeds, topic, ends)
}

// endOffsets returns each partition's latest offset.
func endOffsets(t *testing.T, seeds []string, topic string) map[int32]int64 {
	t.Helper()
	adm := newAdmin(t, seeds)
	out := map[int32]int64{}
	waitFor(t, 30*time.Second, "end offsets", func() error {
		ends, err := adm.ListEndOffsets(ctxTimeout(t, 5*time.Second), topic)
		if err != nil {
			return err
		}
		var errs []error
		ends.Each(func(o kadm.ListedOffset) {
			if o.Err != nil {
				errs = append(errs, o.Err)
			}
			out[o.Partition] = o.Offset
		})
		return errors.Join(errs...)
	})
	return out
}

// checkBatchesIntact fetches every partition raw and checks each batch's
// length and CRC-32C: no torn batch is ever served.
func checkBatchesIntact(t *testing.T, seeds []string, topic string, ends map[int32]int64) {
	t.Helper()
	cl := newClient(t, seeds)
	id := topicID(t, newAdmin(t, seeds), topic)
	for p, end := range ends {
		for off := int64(0); off < end; {
			resp, err := rawFetch(topic, id, p, off, 0, 1).RequestWith(ctxTimeout(t, 10*time.Second), cl)
			must(t, err, "raw fetch %d@%d", p, off)
			part := resp.Topics[0].Partitions[0]
			if err := kerr.ErrorForCode(part.ErrorCode); err != nil {
				t.Fatalf("raw fetch %d@%d: %v", p, off, err)
			}
			next, err := verifyBatches(part.RecordBatches)
			if err != nil {
				t.Fatalf("partition %d at %d: %v", p, off, err)
			}
			if next <= off {
				t.Fatalf("partition %d: fetch at %d made no progress", p, off)
			}
			off = next
		}
	}
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// verifyBatches checks every batch in b and returns the offset after the last.
func verifyBatches(b []byte) (int64, error) {
	next := int64(-1)
	for len(b) > 0 {
		if len(b) < 61 {
			return next, fmt.Errorf("torn batch header (%d bytes)", len(b))
		}
		size := int(binary.BigEndian.Uint32(b[8:])) + 12
		if size > len(b) {
			return next, fmt.Errorf("torn batch: %d of %d bytes", len(b), size)
		}
		if b[16] != 2 {
			return next, fmt.Errorf("batch magic %d", b[16])
		}
		if crc32.Checksum(b[21:size], castagnoli) != binary.BigEndian.Uint32(b[17:]) {
			return next, fmt.Errorf("batch at offset %d fails its CRC", int64(binary.BigEndian.Uint64(b)))
		}
		next = int64(binary.BigEndian.Uint64(b)) + int64(int32(binary.BigEndian.Uint32(b[23:]))) + 1
		b = b[size:]
	}
	return next, nil
}

// A broker back from kill -9 leaves its ISRs (KIP-966: it may have lost what
// it had not flushed) and is elected again as the partitions' last known
// leader, a new leader epoch. It must not serve clients before its
// partitions follow that election: it served Metadata with the old epochs
// while it was still opening its logs for the image replayed at start, its
// produces got UNKNOWN_TOPIC_OR_PARTITION, and franz-go then waited out its
// 5 s metadata refresh interval (the restart measure of make bench: 5.3 s
// from start to a produce acked on every partition, instead of about 1 s).
func TestRestartServesTheCurrentLeadership(t *testing.T) {
	needOwnCluster(t)
	c := startCluster(t, clusterOpts{brokers: 1})
	seeds := c.seeds()
	adm := newAdmin(t, seeds)
	const partitions = 100
	topic := newTopic(t, adm, partitions, 1, map[string]*string{"segment.bytes": kadm.StringPtr("16384")})
	cl := newClient(t, seeds, kgo.DefaultProduceTopic(topic), kgo.ProducerBatchMaxBytes(16000),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	ctx := ctxTimeout(t, 2*time.Minute)
	var rs []*kgo.Record
	for range 20000 { // about 1,300 segments: the logs take a while to open
		rs = append(rs, &kgo.Record{Value: bytes.Repeat([]byte{'x'}, 1000)})
	}
	must(t, cl.ProduceSync(ctx, rs...).FirstErr(), "filling the partitions")
	cl.Close()
	before := leaderEpochs(t, seeds, topic)

	n := c.node(1)
	n.kill9()
	c.restart(n)
	// The first Metadata the restarted broker answers.
	var first map[int32]int32
	waitFor(t, 60*time.Second, "the restarted broker answering Metadata", func() error {
		var err error
		first, err = tryLeaderEpochs(seeds, topic)
		return err
	})
	for p := range int32(partitions) {
		if first[p] <= before[p] {
			t.Fatalf("partition %d: the restarted broker first answered leader epoch %d, the one before the kill (%d); "+
				"it served before following its re-election", p, first[p], before[p])
		}
	}
	// And every partition takes a produce at once.
	pcl := newClient(t, seeds, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	start := time.Now()
	for p := range int32(partitions) {
		must(t, pcl.ProduceSync(ctx, &kgo.Record{Partition: p, Value: []byte("after restart")}).FirstErr(), "produce to %d", p)
	}
	if d := time.Since(start); d > 4*time.Second {
		t.Fatalf("a produce to every partition took %v after the broker served (a metadata refresh interval waited out)", d)
	}
}

// leaderEpochs is tryLeaderEpochs, failing the test on an error.
func leaderEpochs(t *testing.T, seeds []string, topic string) map[int32]int32 {
	t.Helper()
	epochs, err := tryLeaderEpochs(seeds, topic)
	if err != nil {
		t.Fatal(err)
	}
	return epochs
}

// tryLeaderEpochs asks one fresh connection for the topic's leader epochs.
func tryLeaderEpochs(seeds []string, topic string) (map[int32]int32, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.RetryTimeout(time.Second))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, err
	}
	if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 {
		return nil, fmt.Errorf("metadata of %s: %+v", topic, resp.Topics)
	}
	epochs := map[int32]int32{}
	for _, p := range resp.Topics[0].Partitions {
		epochs[p.Partition] = p.LeaderEpoch
	}
	return epochs, nil
}

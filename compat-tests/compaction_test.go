package compat

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// cleanup.policy=compact: a record without a key is refused with
// INVALID_RECORD; the cleaner keeps the last value of each key (offsets
// preserved) and removes tombstoned keys.
func TestCompactedTopic(t *testing.T) {
	tg := singleNode(t, "--log.cleaner.backoff.ms=200")
	adm := newAdmin(t, tg.seeds)
	topic := newTopic(t, adm, 1, 1, map[string]*string{
		"cleanup.policy":            kadm.StringPtr("compact"),
		"segment.bytes":             kadm.StringPtr("4096"),
		"min.cleanable.dirty.ratio": kadm.StringPtr("0.01"),
		"delete.retention.ms":       kadm.StringPtr("1"),
	})
	ctx := ctxTimeout(t, 2*time.Minute)
	cl := newClient(t, tg.seeds, kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(0), kgo.MaxBufferedRecords(1),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("no key")}).FirstErr()
	if !errorsIs(err, kerr.InvalidRecord) {
		t.Fatalf("keyless record on a compacted topic: %v, want INVALID_RECORD", err)
	}
	latest := map[string]int64{}
	for round := range 20 {
		for k := range 5 {
			key := fmt.Sprintf("key-%d", k)
			r := &kgo.Record{Key: []byte(key), Value: []byte(fmt.Sprintf("%s-v%d-%s", key, round, string(make([]byte, 100))))}
			must(t, cl.ProduceSync(ctx, r).FirstErr(), "produce")
			latest[key] = r.Offset
		}
	}
	tomb := &kgo.Record{Key: []byte("key-0")} // nil value: a tombstone
	must(t, cl.ProduceSync(ctx, tomb).FirstErr(), "tombstone")
	// More writes so that the segments above are rolled and cleanable.
	for i := range 40 {
		must(t, cl.ProduceSync(ctx, &kgo.Record{Key: []byte("filler"), Value: make([]byte, 100+i)}).FirstErr(), "filler")
	}
	filler := 0
	waitFor(t, 45*time.Second, "the cleaner to keep one value per key and drop the tombstone", func() error {
		// Kafka removes a tombstone at a cleaning after delete.retention.ms
		// has passed since the cleaning that first kept it; new dirty data
		// is what triggers cleanings.
		for range 10 {
			filler++
			must(t, cl.ProduceSync(ctx, &kgo.Record{Key: []byte("filler"), Value: make([]byte, 100+filler%50)}).FirstErr(), "filler")
		}
		ends := endOffsets(t, tg.seeds, topic)
		recs := consumeAll(t, tg.seeds, topic, ends[0])
		seen := map[string]int{}
		for _, r := range recs {
			seen[string(r.Key)]++
		}
		for k := 1; k < 5; k++ {
			key := fmt.Sprintf("key-%d", k)
			if seen[key] != 1 {
				return fmt.Errorf("%s appears %d times", key, seen[key])
			}
		}
		if seen["key-0"] != 0 {
			return fmt.Errorf("tombstoned key-0 still appears %d times", seen["key-0"])
		}
		for _, r := range recs {
			if want, ok := latest[string(r.Key)]; ok && r.Offset != want {
				return fmt.Errorf("%s kept at offset %d, its last write was at %d", r.Key, r.Offset, want)
			}
		}
		return nil
	})
}

// consumeAll reads a single-partition topic from the start to end (offsets
// may have gaps after compaction).
func consumeAll(t *testing.T, seeds []string, topic string, end int64) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := ctxTimeout(t, 20*time.Second)
	var out []*kgo.Record
	for {
		if len(out) > 0 && out[len(out)-1].Offset >= end-1 {
			return out
		}
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading %s to %d: got %d records", topic, end, len(out))
		}
		out = append(out, fs.Records()...)
	}
}

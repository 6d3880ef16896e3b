package demo

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/record"
)

// values returns n record values "prefix-000", "prefix-001", ...
func values(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%03d", prefix, i)
	}
	return out
}

// acked is a record the producer got an acknowledgement for.
type acked struct {
	value  string
	offset int64
}

// produceResult is what became of one produced record.
type produceResult struct {
	value  string
	offset int64
	err    error
}

// produceAsync sends every value to partition 0 of topic and delivers
// each outcome on the returned channel (buffered: nobody has to read).
func produceAsync(ctx context.Context, cl *kgo.Client, topic string, vals []string) <-chan produceResult {
	results := make(chan produceResult, len(vals))
	for _, v := range vals {
		cl.Produce(ctx, &kgo.Record{Topic: topic, Partition: 0, Value: []byte(v)}, func(r *kgo.Record, err error) {
			results <- produceResult{value: string(r.Value), offset: r.Offset, err: err}
		})
	}
	return results
}

// produceAll sends every value and waits for all answers: the acknowledged
// records in offset order, and the first error.
func produceAll(ctx context.Context, cl *kgo.Client, topic string, vals []string) ([]acked, error) {
	results := produceAsync(ctx, cl, topic, vals)
	var out []acked
	var firstErr error
	for range vals {
		r, err := receive(ctx, results)
		if err != nil {
			return out, err
		}
		if r.err != nil {
			firstErr = cmp.Or(firstErr, r.err)
			continue
		}
		out = append(out, acked{r.value, r.offset})
	}
	sortAcked(out)
	return out, firstErr
}

func sortAcked(a []acked) {
	slices.SortFunc(a, func(x, y acked) int { return cmp.Compare(x.offset, y.offset) })
}

// receive waits for the next produce result, or for ctx to end.
func receive(ctx context.Context, results <-chan produceResult) (produceResult, error) {
	select {
	case r := <-results:
		return r, nil
	case <-ctx.Done():
		return produceResult{}, context.Cause(ctx)
	}
}

// producer returns a client that produces to partition 0 of any topic with
// the given options (acks, idempotence, timeouts).
func (c *cluster) producer(opts ...kgo.Opt) (*kgo.Client, error) {
	return c.client(append([]kgo.Opt{
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(0),
	}, opts...)...)
}

// rawProduce sends one batch of vals straight to node leader with the given
// acks, without any client retry, and returns the partition's error (nil
// when the batch was appended).
func (c *cluster) rawProduce(ctx context.Context, topic string, leader int32, acks int16, vals []string) error {
	req := kmsg.NewPtrProduceRequest()
	req.Acks = acks
	req.TimeoutMillis = 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = 0, encodeBatch(time.Now().UnixMilli(), vals)
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := c.request(ctx, c.node(leader), req)
	if err != nil {
		return err
	}
	pr := resp.(*kmsg.ProduceResponse)
	if len(pr.Topics) != 1 || len(pr.Topics[0].Partitions) != 1 {
		return errors.New("malformed Produce response")
	}
	return kerr.ErrorForCode(pr.Topics[0].Partitions[0].ErrorCode)
}

// encodeBatch builds an uncompressed v2 record batch of vals, as a
// non-idempotent producer sends it.
func encodeBatch(timestamp int64, vals []string) []byte {
	var records []byte
	for i, v := range vals {
		records = record.AppendRecord(records, &record.Record{OffsetDelta: int32(i), Value: []byte(v)})
	}
	b := record.NewBatch(record.BatchHeader{
		PartitionLeaderEpoch: -1, LastOffsetDelta: int32(len(vals) - 1),
		BaseTimestamp: timestamp, MaxTimestamp: timestamp,
		ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, RecordCount: int32(len(vals)),
	}, records)
	return b.Bytes()
}

// readBack waits until the leader's high watermark has reached its log end
// (a new leader's HW moves up only once its followers fetch from it), then
// reads the whole partition from the leader: value -> offset, and values
// seen more than once.
func (c *cluster) readBack(ctx context.Context, topic string, leader int32) (map[string]int64, []string, error) {
	var hw int64
	err := poll(ctx, 30*time.Second, "the leader's high watermark to reach its log end", func() error {
		var err error
		if hw, err = c.highWatermark(ctx, topic, leader); err != nil {
			return err
		}
		leo, err := c.node(leader).logEndOffset(topic, 0)
		if err != nil {
			return err
		}
		if hw != leo {
			return fmt.Errorf("HW %d, log end %d", hw, leo)
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	got := map[string]int64{}
	var dups []string
	if hw == 0 {
		return got, nil, nil
	}
	cl, err := c.client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		return nil, nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for next := int64(0); next < hw; {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return nil, nil, fmt.Errorf("reading back %s: at offset %d of %d: %w", topic, next, hw, err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if _, dup := got[string(r.Value)]; dup {
				dups = append(dups, string(r.Value))
			}
			got[string(r.Value)] = r.Offset
			next = r.Offset + 1
		})
	}
	return got, dups, nil
}

package chaos

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/internal/testsupport"
)

// rawBatch builds a v2 record batch of values (each with key), no producer
// id, no compression: what a plain producer sends.
var rawBatch = testsupport.RecordBatch

// produceRaw sends one batch to a partition's leader n and returns the
// partition's error code and base offset: no client retry hides the code.
func produceRaw(n *node, topic string, partition int32, acks int16, batch []byte) (int16, int64, error) {
	req := testsupport.ProduceRequest(topic, partition, acks, 5000, batch)
	resp, err := ask(n, req, 15*time.Second)
	if err != nil {
		return 0, 0, err
	}
	pr := resp.(*kmsg.ProduceResponse)
	if len(pr.Topics) != 1 || len(pr.Topics[0].Partitions) != 1 {
		return 0, 0, fmt.Errorf("produce response without the partition: %+v", pr)
	}
	p := pr.Topics[0].Partitions[0]
	return p.ErrorCode, p.BaseOffset, nil
}

// readValues reads every partition of topic from the start to its end
// offset and returns each value's positions.
func readValues(seeds []string, topic string, partitions int32, d time.Duration) (map[string][]position, error) {
	h := NewHistory()
	if err := finalRead(seeds, topic, partitions, h, d); err != nil {
		return nil, err
	}
	out := map[string][]position{}
	for _, e := range h.Events() {
		out[e.Value] = append(out[e.Value], position{e.Partition, e.Offset})
	}
	return out, nil
}

// produceSync produces values with an idempotent acks=all client and
// returns those acknowledged.
func produceSync(seeds []string, topic string, partitions int32, values []string) ([]string, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RecordDeliveryTimeout(20*time.Second),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	var recs []*kgo.Record
	for i, v := range values {
		recs = append(recs, &kgo.Record{Value: []byte(v), Key: pad, Partition: int32(i) % partitions})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var acked []string
	var firstErr error
	for _, r := range cl.ProduceSync(ctx, recs...) {
		if r.Err == nil {
			acked = append(acked, string(r.Record.Value))
		} else if firstErr == nil {
			firstErr = r.Err
		}
	}
	return acked, firstErr
}

// checkAllThere fails with the names of acked values missing from (or
// duplicated in) a read.
func checkAllThere(got map[string][]position, acked []string) error {
	var missing, dup []string
	for _, v := range acked {
		switch len(got[v]) {
		case 0:
			missing = append(missing, v)
		case 1:
		default:
			dup = append(dup, v)
		}
	}
	if len(missing) > 0 || len(dup) > 0 {
		return fmt.Errorf("%d acknowledged values lost (%s), %d duplicated (%s)", len(missing), names(missing, 10), len(dup), names(dup, 10))
	}
	return nil
}

package compat

import (
	"bytes"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// rawFetch builds a consumer fetch. kgo sends requests at the highest version
// both sides support, so the topic is named by id as well as by name.
func rawFetch(topic string, id [16]byte, partition int32, offset int64, maxWait, minBytes int32) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = -1
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = maxWait, minBytes, 1<<20
	req.SessionEpoch = -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, id
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = partition, offset, 1<<20, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// Long poll: a fetch with nothing to read waits and is woken by a produce;
// a fetch in the middle of a batch gets the whole batch; above the log end
// it gets OFFSET_OUT_OF_RANGE, at the log end nothing and no error.
func TestFetchSemantics(t *testing.T) {
	tg := singleNode(t)
	adm := newAdmin(t, tg.seeds)
	topic := newTopic(t, adm, 1, 1, nil)
	cl := newClient(t, tg.seeds)
	ctx := ctxTimeout(t, 60*time.Second)
	id := topicID(t, adm, topic)

	type result struct {
		resp *kmsg.FetchResponse
		err  error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := rawFetch(topic, id, 0, 0, 30000, 1).RequestWith(ctx, newClient(t, tg.seeds))
		done <- result{resp, err}
	}()
	select {
	case r := <-done:
		t.Fatalf("fetch returned before any data: %+v %v", r.resp, r.err)
	case <-time.After(300 * time.Millisecond):
	}
	now := time.Now().UnixMilli()
	batch := rawBatch{producerID: -1, producerEpoch: -1, baseSequence: -1, timestamps: []int64{now, now, now, now, now}}.encode()
	p, err := produceRawReq(topic, 0, -1, batch).RequestWith(ctx, cl)
	must(t, err, "produce")
	must(t, kerr.ErrorForCode(p.Topics[0].Partitions[0].ErrorCode), "produce")
	select {
	case r := <-done:
		must(t, r.err, "long-poll fetch")
		if n := len(r.resp.Topics[0].Partitions[0].RecordBatches); n == 0 {
			t.Fatal("woken fetch returned no data")
		}
	case <-time.After(15 * time.Second):
		t.Fatal("long-poll fetch not woken by the produce")
	}

	resp, err := rawFetch(topic, id, 0, 2, 0, 1).RequestWith(ctx, cl)
	must(t, err, "fetch mid-batch")
	got := resp.Topics[0].Partitions[0].RecordBatches
	if len(got) != len(batch) || !bytes.Equal(got[21:], batch[21:]) {
		t.Fatalf("fetch at offset 2 returned %d bytes, want the whole %d-byte batch", len(got), len(batch))
	}

	resp, err = rawFetch(topic, id, 0, 5, 0, 1).RequestWith(ctx, cl)
	must(t, err, "fetch at log end")
	if rp := resp.Topics[0].Partitions[0]; rp.ErrorCode != 0 || len(rp.RecordBatches) != 0 || rp.HighWatermark != 5 {
		t.Fatalf("fetch at log end: error %v, %d bytes, hw %d", kerr.ErrorForCode(rp.ErrorCode), len(rp.RecordBatches), rp.HighWatermark)
	}
	resp, err = rawFetch(topic, id, 0, 50, 0, 1).RequestWith(ctx, cl)
	must(t, err, "fetch beyond log end")
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != kerr.OffsetOutOfRange.Code {
		t.Fatalf("fetch beyond log end: %v, want OFFSET_OUT_OF_RANGE", kerr.ErrorForCode(code))
	}
}

// ListOffsets by timestamp finds the first record (not batch) at or after the
// time; -3 finds the record with the largest timestamp.
func TestListOffsetsByTimestamp(t *testing.T) {
	tg := singleNode(t)
	adm := newAdmin(t, tg.seeds)
	topic := newTopic(t, adm, 1, 1, nil)
	cl := newClient(t, tg.seeds)
	ctx := ctxTimeout(t, 30*time.Second)
	base := time.Now().Add(-time.Hour).UnixMilli()
	for _, ts := range [][]int64{{base + 1000, base + 2000, base + 3000}, {base + 9000, base + 4000}, {base + 5000}} {
		b := rawBatch{producerID: -1, producerEpoch: -1, baseSequence: -1, timestamps: ts}.encode()
		resp, err := produceRawReq(topic, 0, 1, b).RequestWith(ctx, cl)
		must(t, err, "produce")
		must(t, kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode), "produce")
	}
	for _, tc := range []struct {
		ts         int64
		wantOffset int64
		wantTS     int64
	}{
		{base + 2500, 2, base + 3000},
		{base, 0, base + 1000},
		{base + 3500, 3, base + 9000},
		{base + 10000, -1, -1},
		{-3, 3, base + 9000},
		{-2, 0, -1},
		{-1, 6, -1},
	} {
		req := kmsg.NewPtrListOffsetsRequest()
		req.SetVersion(7)
		req.ReplicaID = -1
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Timestamp, rp.CurrentLeaderEpoch = tc.ts, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		must(t, err, "ListOffsets")
		p := resp.Topics[0].Partitions[0]
		must(t, kerr.ErrorForCode(p.ErrorCode), "ListOffsets %d", tc.ts)
		if p.Offset != tc.wantOffset || p.Timestamp != tc.wantTS {
			t.Errorf("ListOffsets(%d) = offset %d ts %d, want offset %d ts %d", tc.ts, p.Offset, p.Timestamp, tc.wantOffset, tc.wantTS)
		}
	}
}

// Bad batches are refused with Kafka's error codes and nothing is written.
func TestProduceValidation(t *testing.T) {
	tg := singleNode(t)
	adm := newAdmin(t, tg.seeds)
	topic := newTopic(t, adm, 1, 1, map[string]*string{"max.message.bytes": kadm.StringPtr("2000")})
	cl := newClient(t, tg.seeds)
	ctx := ctxTimeout(t, 30*time.Second)
	now := time.Now().UnixMilli()
	many := make([]int64, 300)
	for i := range many {
		many[i] = now
	}
	big := rawBatch{producerID: -1, producerEpoch: -1, baseSequence: -1, timestamps: many, keys: [][]byte{bytes.Repeat([]byte("k"), 3000)}}.encode()
	corrupt := rawBatch{producerID: -1, producerEpoch: -1, baseSequence: -1, timestamps: []int64{now}}.encode()
	corrupt[len(corrupt)-1] ^= 0xFF
	two := append(rawBatch{producerID: -1, producerEpoch: -1, baseSequence: -1, timestamps: []int64{now}}.encode(),
		rawBatch{producerID: -1, producerEpoch: -1, baseSequence: -1, timestamps: []int64{now}}.encode()...)
	for _, tc := range []struct {
		name string
		b    []byte
		want *kerr.Error
	}{
		{"over max.message.bytes", big, kerr.MessageTooLarge},
		{"bad CRC", corrupt, kerr.CorruptMessage},
		{"two batches", two, kerr.InvalidRecord},
	} {
		resp, err := produceRawReq(topic, 0, 1, tc.b).RequestWith(ctx, cl)
		must(t, err, "%s", tc.name)
		if code := resp.Topics[0].Partitions[0].ErrorCode; code != tc.want.Code {
			t.Errorf("%s: got %v, want %v", tc.name, kerr.ErrorForCode(code), tc.want)
		}
	}
	if ends := endOffsets(t, tg.seeds, topic); ends[0] != 0 {
		t.Fatalf("refused batches were written: log end %d", ends[0])
	}
}

// topicID looks a topic's id up in Metadata.
func topicID(t *testing.T, adm *kadm.Client, topic string) [16]byte {
	t.Helper()
	md, err := adm.Metadata(ctxTimeout(t, 10*time.Second), topic)
	must(t, err, "metadata")
	return md.Topics[topic].ID
}

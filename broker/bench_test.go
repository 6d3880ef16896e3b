package broker

import (
	"context"
	"encoding/binary"
	"hash/crc32"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/internal/testsupport"
	"github.com/kbroker/kbroker/protocol"
)

// The broker's request path in process, without sockets: a request frame is
// decoded (protocol.ParseRequest), dispatched to the handler and its
// response encoded as the connection writer would, on a live single-node
// broker. These are the per-request costs behind w1/w2 (produce) and w3
// (fetch) of the load benchmark (make bench-load). Run with make bench-go.

// benchBatch is a valid magic-v2 record batch of n records of valueBytes
// each, no key, no compression, not idempotent.
func benchBatch(n, valueBytes int) []byte {
	b := make([]byte, 61, 61+n*(valueBytes+16))
	value := make([]byte, valueBytes)
	for i := range value {
		value[i] = byte('a' + i%26)
	}
	var rec []byte
	for i := range n {
		rec = rec[:0]
		rec = append(rec, 0)                   // attributes
		rec = kbin.AppendVarlong(rec, 0)       // timestamp delta
		rec = kbin.AppendVarint(rec, int32(i)) // offset delta
		rec = kbin.AppendVarint(rec, -1)       // null key
		rec = kbin.AppendVarint(rec, int32(len(value)))
		rec = append(rec, value...)
		rec = kbin.AppendVarint(rec, 0) // no headers
		b = kbin.AppendVarint(b, int32(len(rec)))
		b = append(b, rec...)
	}
	now := time.Now().UnixMilli()
	binary.BigEndian.PutUint64(b[0:], 0)                 // base offset
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12)) // batch length
	binary.BigEndian.PutUint32(b[12:], ^uint32(0))       // partition leader epoch -1
	b[16] = 2                                            // magic
	binary.BigEndian.PutUint16(b[21:], 0)                // attributes
	binary.BigEndian.PutUint32(b[23:], uint32(n-1))      // last offset delta
	binary.BigEndian.PutUint64(b[27:], uint64(now))      // first timestamp
	binary.BigEndian.PutUint64(b[35:], uint64(now))      // max timestamp
	binary.BigEndian.PutUint64(b[43:], ^uint64(0))       // producer id -1
	binary.BigEndian.PutUint16(b[51:], ^uint16(0))       // producer epoch -1
	binary.BigEndian.PutUint32(b[53:], ^uint32(0))       // base sequence -1
	binary.BigEndian.PutUint32(b[57:], uint32(n))        // records
	crc := crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli))
	binary.BigEndian.PutUint32(b[17:], crc)
	return b
}

// runRequest sends req through decode and dispatch and returns the answer.
func runRequest(tb testing.TB, br *Broker, req kmsg.Request) kmsg.Response {
	tb.Helper()
	return runOn(tb, br, &protocol.ConnInfo{ID: 1, Listener: "PLAINTEXT"}, req)
}

// runOn is runRequest on the given connection (client id "fuzz").
func runOn(tb testing.TB, br *Broker, conn *protocol.ConnInfo, req kmsg.Request) kmsg.Response {
	tb.Helper()
	body, err := dispatchRequest(br, conn, req)
	if err != nil {
		tb.Fatal(err)
	}
	return body
}

// dispatchRequest is runOn for any goroutine: the answer, or the frame's
// decoding error.
func dispatchRequest(br *Broker, conn *protocol.ConnInfo, req kmsg.Request) (kmsg.Response, error) {
	parsed, err := protocol.ParseRequest(encodeFrame(req))
	if err != nil {
		return nil, err
	}
	parsed.Conn = conn
	resp := br.dispatch.Handle(context.Background(), parsed)
	body := resp.Body
	if resp.Later != nil {
		body = resp.Later(context.Background())
	}
	if resp.Done != nil {
		defer resp.Done()
	}
	return body, nil
}

func benchProduceFrame(topic string, acks int16, batch []byte) []byte {
	req := testsupport.ProduceRequest(topic, 0, acks, 30000, batch)
	req.SetVersion(12)
	return encodeFrame(req)
}

// serveFrame is what the connection does with one frame: decode, handle,
// wait for a deferred answer, encode, release.
func serveFrame(b *testing.B, br *Broker, frame []byte, info *protocol.ConnInfo, buf []byte) ([]byte, kmsg.Response) {
	req, err := protocol.ParseRequest(frame)
	if err != nil {
		b.Fatal(err)
	}
	req.Conn = info
	resp := br.dispatch.Handle(context.Background(), req)
	body := resp.Body
	if resp.Later != nil {
		body = resp.Later(context.Background())
	}
	body.SetVersion(req.Version)
	if vr, ok := body.(protocol.VectorResponse); ok {
		// What the connection does: small fields encoded, records borrowed.
		vr.AppendVectors(nil, buf[:0])
	} else {
		buf = body.AppendTo(buf[:0])
	}
	if resp.Done != nil {
		resp.Done()
	}
	return buf, body
}

// BenchmarkProduce is the produce path of one partition: decode, validate
// the batch header and CRC, append to the log, answer. acks=all on a single
// node completes as soon as the HW moves (the ISR is just this broker).
func BenchmarkProduce(b *testing.B) {
	br := startTestBroker(b)
	createTopic(b, br, "bench")
	info := &protocol.ConnInfo{ID: 1, Listener: "PLAINTEXT"}
	for _, c := range []struct {
		name    string
		acks    int16
		records int
		value   int
	}{
		{"acks1-100x100B", 1, 100, 100},
		{"acks1-16x1KiB", 1, 16, 1024},
		{"acksall-16x1KiB", -1, 16, 1024},
	} {
		batch := benchBatch(c.records, c.value)
		frame := benchProduceFrame("bench", c.acks, batch)
		b.Run(c.name, func(b *testing.B) {
			var buf []byte
			b.SetBytes(int64(c.records * c.value))
			b.ReportAllocs()
			for b.Loop() {
				var body kmsg.Response
				buf, body = serveFrame(b, br, frame, info, buf)
				if code := body.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
					b.Fatalf("produce: error %d", code)
				}
			}
		})
	}
}

// BenchmarkFetch is the consumer fetch path: decode, read up to 1 MiB from
// the mapped log, encode the response (which copies the records into the
// frame), release the segment references. The log holds 32 MiB of 16 KiB
// batches; fetches walk it and wrap.
func BenchmarkFetch(b *testing.B) {
	br := startTestBroker(b)
	createTopic(b, br, "bench")
	info := &protocol.ConnInfo{ID: 1, Listener: "PLAINTEXT"}
	batch := benchBatch(16, 1024)
	produce := benchProduceFrame("bench", 1, batch)
	var buf []byte
	for range (32 << 20) / len(batch) {
		buf, _ = serveFrame(b, br, produce, info, buf)
	}
	part, _ := br.replicas.Partition("bench", 0)
	deadline := time.Now().Add(10 * time.Second)
	for hw, leo, _ := part.Offsets(); hw < leo; hw, leo, _ = part.Offsets() {
		if time.Now().After(deadline) {
			b.Fatalf("HW %d stuck below LEO %d", hw, leo)
		}
		time.Sleep(time.Millisecond)
	}
	hw, _, _ := part.Offsets()
	topicID := br.view().img.Topics["bench"].ID
	for _, c := range []struct {
		name     string
		version  int16
		maxBytes int32
	}{
		{"v12-1MiB", 12, 1 << 20},
		{"v16-1MiB", 16, 1 << 20},
		{"v16-64KiB", 16, 64 << 10},
	} {
		// The frames of one walk through the log, encoded up front so that
		// the loop measures the broker, not the request encoding.
		var frames [][]byte
		for offset := int64(0); offset < hw; {
			frame := fetchFrame(c.version, topicID, offset, c.maxBytes)
			var body kmsg.Response
			buf, body = serveFrame(b, br, frame, info, buf)
			fr, ok := body.(*kmsg.FetchResponse)
			if vf, vec := body.(vectorFetch); vec {
				fr, ok = vf.FetchResponse, true
			}
			if !ok {
				b.Fatalf("fetch answered with %T", body)
			}
			p := fr.Topics[0].Partitions[0]
			if p.ErrorCode != 0 || len(p.RecordBatches) == 0 {
				b.Fatalf("fetch at %d: error %d, %d bytes", offset, p.ErrorCode, len(p.RecordBatches))
			}
			frames = append(frames, frame)
			offset = nextOffset(p.RecordBatches)
		}
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(c.maxBytes))
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				buf, _ = serveFrame(b, br, frames[i], info, buf)
				i = (i + 1) % len(frames)
			}
		})
	}
}

func fetchFrame(version int16, topicID [16]byte, offset int64, maxBytes int32) []byte {
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(version)
	req.ReplicaID = -1
	req.MaxBytes = maxBytes
	req.MinBytes = 1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = "bench", topicID
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.FetchOffset = offset
	rp.PartitionMaxBytes = maxBytes
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return encodeFrame(req)
}

// nextOffset is the offset after the last batch in batches.
func nextOffset(batches []byte) int64 {
	var next int64
	for len(batches) >= 61 {
		size := int(binary.BigEndian.Uint32(batches[8:])) + 12
		if size > len(batches) {
			break
		}
		next = int64(binary.BigEndian.Uint64(batches)) + int64(binary.BigEndian.Uint32(batches[23:])) + 1
		batches = batches[size:]
	}
	return next
}

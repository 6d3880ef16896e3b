package protocol

import (
	"bufio"
	"context"
	"encoding/binary"
	"io"
	"net"
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The request path's wire layer, without any broker behind it: decoding the
// requests a producer and a consumer send, encoding the responses they get,
// and one pipelined connection round trip. Run with make bench-go.

// benchProduceRequest is a produce request of partitions partitions, each
// with one batchBytes record batch (the bytes are opaque at this layer).
func benchProduceRequest(version int16, partitions, batchBytes int) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(version)
	req.Acks = -1
	req.TimeoutMillis = 30000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "bench"
	for p := range partitions {
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition = int32(p)
		rp.Records = make([]byte, batchBytes)
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

// benchFetchRequest is a consumer fetch of partitions partitions.
func benchFetchRequest(version int16, partitions int) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(version)
	req.ReplicaID = -1
	req.MaxWaitMillis = 500
	req.MinBytes = 1
	req.MaxBytes = 50 << 20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = "bench"
	for p := range partitions {
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition = int32(p)
		rp.FetchOffset = int64(p) * 1000
		rp.PartitionMaxBytes = 1 << 20
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

func BenchmarkParseRequest(b *testing.B) {
	cases := []struct {
		name string
		req  kmsg.Request
	}{
		{"produce-v9-1x16KiB", benchProduceRequest(9, 1, 16<<10)},
		{"produce-v12-12x16KiB", benchProduceRequest(12, 12, 16<<10)},
		{"fetch-v12-12p", benchFetchRequest(12, 12)},
		{"fetch-v16-12p", benchFetchRequest(16, 12)},
		{"metadata-v12", metadataFor("bench")},
		{"apiversions-v3", func() kmsg.Request { r := kmsg.NewPtrApiVersionsRequest(); r.SetVersion(3); return r }()},
	}
	for _, c := range cases {
		frame := appendRequest(nil, 7, "bench-client", c.req)[4:]
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(frame)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ParseRequest(frame); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// benchFetchResponse answers a fetch of partitions partitions with
// batchBytes of records each.
func benchFetchResponse(version int16, partitions, batchBytes int) *kmsg.FetchResponse {
	resp := kmsg.NewPtrFetchResponse()
	resp.SetVersion(version)
	rt := kmsg.NewFetchResponseTopic()
	rt.Topic = "bench"
	data := make([]byte, batchBytes)
	for p := range partitions {
		rp := kmsg.NewFetchResponseTopicPartition()
		rp.Partition = int32(p)
		rp.HighWatermark, rp.LastStableOffset = 1<<20, 1<<20
		rp.RecordBatches = data
		rt.Partitions = append(rt.Partitions, rp)
	}
	resp.Topics = append(resp.Topics, rt)
	return resp
}

func benchProduceResponse(version int16, partitions int) *kmsg.ProduceResponse {
	resp := kmsg.NewPtrProduceResponse()
	resp.SetVersion(version)
	rt := kmsg.NewProduceResponseTopic()
	rt.Topic = "bench"
	for p := range partitions {
		rp := kmsg.NewProduceResponseTopicPartition()
		rp.Partition = int32(p)
		rp.BaseOffset = int64(p) << 20
		rt.Partitions = append(rt.Partitions, rp)
	}
	resp.Topics = append(resp.Topics, rt)
	return resp
}

// BenchmarkAppendResponse encodes responses the way the connection writer
// does (appendResponse into a reused buffer). The fetch cases copy their
// record bytes into the frame: that copy is what issue 8 wants gone.
func BenchmarkAppendResponse(b *testing.B) {
	cases := []struct {
		name string
		resp kmsg.Response
	}{
		{"produce-v9-1p", benchProduceResponse(9, 1)},
		{"produce-v12-12p", benchProduceResponse(12, 12)},
		{"fetch-v12-1x1MiB", benchFetchResponse(12, 1, 1<<20)},
		{"fetch-v16-12x64KiB", benchFetchResponse(16, 12, 64<<10)},
		{"fetch-v16-12xempty", benchFetchResponse(16, 12, 0)},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			buf := appendResponse(nil, 7, c.resp)
			b.SetBytes(int64(len(buf)))
			b.ReportAllocs()
			for b.Loop() {
				buf = appendResponse(buf[:0], 7, c.resp)
			}
		})
	}
}

// echoHandler answers produce requests at once, like acks=1 with no log.
type echoHandler struct{}

func (echoHandler) Handle(_ context.Context, req *Request) Response {
	switch r := req.Body.(type) {
	case *kmsg.ProduceRequest:
		resp := r.ResponseKind().(*kmsg.ProduceResponse)
		for _, rt := range r.Topics {
			st := kmsg.NewProduceResponseTopic()
			st.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				sp := kmsg.NewProduceResponseTopicPartition()
				sp.Partition = rp.Partition
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return Response{Body: resp}
	}
	return Response{Close: true}
}

func (echoHandler) ErrorResponse(req *Request, _ int16) kmsg.Response { return req.Body.ResponseKind() }

// BenchmarkConnProduce pipelines produce requests (one 16 KiB batch each)
// through a Server on loopback: framing, decoding, the reader/writer
// goroutines and response encoding, as a client sees them. The client
// writes in bursts of 16 requests; the server's MaxInflight bounds the
// pipeline.
func BenchmarkConnProduce(b *testing.B) {
	for _, size := range []int{1 << 10, 16 << 10} {
		b.Run(strconv.Itoa(size>>10)+"KiB", func(b *testing.B) {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			s := NewServer(echoHandler{}, ServerOptions{})
			go s.Serve(l, "PLAINTEXT")
			defer s.Close()
			nc, err := net.Dial("tcp", l.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			defer nc.Close()
			frame := appendRequest(nil, 1, "bench", benchProduceRequest(9, 1, size))
			const window = 16
			done := make(chan error, 1)
			b.SetBytes(int64(size))
			b.ReportAllocs()
			b.ResetTimer()
			n := b.N
			go func() { done <- readResponses(nc, n) }()
			w := bufio.NewWriterSize(nc, 64<<10)
			for i := range n {
				binary.BigEndian.PutUint32(frame[8:], uint32(i)) // correlation id
				if _, err := w.Write(frame); err != nil {
					b.Fatal(err)
				}
				if i%window == window-1 {
					w.Flush()
				}
			}
			w.Flush()
			if err := <-done; err != nil {
				b.Fatal(err)
			}
		})
	}
}

func readResponses(nc net.Conn, n int) error {
	rd := bufio.NewReaderSize(nc, 64<<10)
	var size [4]byte
	buf := make([]byte, 0, 256)
	for range n {
		if _, err := io.ReadFull(rd, size[:]); err != nil {
			return err
		}
		m := int(binary.BigEndian.Uint32(size[:]))
		if cap(buf) < m {
			buf = make([]byte, m)
		}
		if _, err := io.ReadFull(rd, buf[:m]); err != nil {
			return err
		}
	}
	return nil
}

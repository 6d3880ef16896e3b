package protocol

import (
	"bufio"
	"context"
	"encoding/binary"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// testHandler answers ApiVersions with everything kmsg knows, Metadata with a
// deferred response whose delay is given by the first topic name's length
// (so later requests can finish first), and panics on ListOffsets.
type testHandler struct{ handled atomic.Int64 }

func (h *testHandler) Handle(ctx context.Context, req *Request) Response {
	h.handled.Add(1)
	switch body := req.Body.(type) {
	case *kmsg.ApiVersionsRequest:
		resp := body.ResponseKind().(*kmsg.ApiVersionsResponse)
		if req.Version > body.MaxVersion() {
			resp.SetVersion(0)
			resp.ErrorCode = kerr.UnsupportedVersion.Code
		}
		for _, key := range []int16{0, 1, 2, 3, 18} {
			resp.ApiKeys = append(resp.ApiKeys, kmsg.ApiVersionsResponseApiKey{
				ApiKey: key, MaxVersion: kmsg.RequestForKey(key).MaxVersion(),
			})
		}
		return Response{Body: resp}
	case *kmsg.MetadataRequest:
		delay := time.Duration(0)
		if len(body.Topics) > 0 && body.Topics[0].Topic != nil {
			delay = time.Duration(len(*body.Topics[0].Topic)) * time.Millisecond
		}
		return Response{Later: func(ctx context.Context) kmsg.Response {
			select {
			case <-time.After(delay):
			case <-ctx.Done():
			}
			resp := body.ResponseKind().(*kmsg.MetadataResponse)
			resp.ClusterID = kmsg.StringPtr("c")
			return resp
		}}
	case *kmsg.ListOffsetsRequest:
		panic("boom")
	case *kmsg.ProduceRequest:
		if body.Acks == 0 {
			return Response{NoReply: true}
		}
		return Response{Body: body.ResponseKind()}
	}
	return Response{Close: true}
}

func (h *testHandler) ErrorResponse(req *Request, code int16) kmsg.Response {
	resp := req.Body.ResponseKind()
	if lo, ok := resp.(*kmsg.ListOffsetsResponse); ok {
		lo.Topics = []kmsg.ListOffsetsResponseTopic{{Topic: "t", Partitions: []kmsg.ListOffsetsResponseTopicPartition{{ErrorCode: code}}}}
	}
	return resp
}

func startServer(t *testing.T, opts ServerOptions) (*Server, string, *testHandler) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := &testHandler{}
	s := NewServer(h, opts)
	go s.Serve(l, "PLAINTEXT")
	t.Cleanup(func() { s.Close() })
	return s, l.Addr().String(), h
}

// rawConn writes frames and reads responses without any client logic.
type rawConn struct {
	t  *testing.T
	nc net.Conn
	rd *bufio.Reader
}

func dialRaw(t *testing.T, addr string) *rawConn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	t.Cleanup(func() { nc.Close() })
	return &rawConn{t: t, nc: nc, rd: bufio.NewReader(nc)}
}

func (r *rawConn) send(corr int32, req kmsg.Request) {
	r.t.Helper()
	if _, err := r.nc.Write(appendRequest(nil, corr, "test", req)); err != nil {
		r.t.Fatal(err)
	}
}

// recv reads one response frame and returns its correlation id and body.
func (r *rawConn) recv() (int32, []byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(r.rd, size[:]); err != nil {
		return 0, nil, err
	}
	frame := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(r.rd, frame); err != nil {
		return 0, nil, err
	}
	return int32(binary.BigEndian.Uint32(frame)), frame[4:], nil
}

func metadataFor(name string) *kmsg.MetadataRequest {
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(9)
	req.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr(name)}}
	return req
}

// Responses leave in request order even when later requests finish first.
func TestPipelinedResponsesKeepRequestOrder(t *testing.T) {
	_, addr, _ := startServer(t, ServerOptions{})
	rc := dialRaw(t, addr)
	const n = 20
	for i := int32(0); i < n; i++ {
		// Earlier requests wait longer: 20ms, 19ms, ...
		rc.send(100+i, metadataFor(string(make([]byte, n-i))))
	}
	for i := int32(0); i < n; i++ {
		corr, body, err := rc.recv()
		if err != nil {
			t.Fatal(err)
		}
		if corr != 100+i {
			t.Fatalf("response %d has correlation id %d, want %d", i, corr, 100+i)
		}
		resp := kmsg.NewPtrMetadataResponse()
		resp.SetVersion(9)
		rd := kbin.Reader{Src: body}
		skipTags(&rd)
		if err := resp.ReadFrom(rd.Src); err != nil || resp.ClusterID == nil {
			t.Fatalf("decoding response %d: %v", i, err)
		}
	}
}

// A panicking handler answers with an error and the connection keeps working.
func TestHandlerPanicIsAnsweredAndConnectionSurvives(t *testing.T) {
	_, addr, _ := startServer(t, ServerOptions{})
	cl := NewClient(addr, "test")
	defer cl.Close()
	ctx := context.Background()
	lo := kmsg.NewPtrListOffsetsRequest()
	resp, err := cl.Request(ctx, lo)
	if err != nil {
		t.Fatal(err)
	}
	got := resp.(*kmsg.ListOffsetsResponse)
	if len(got.Topics) != 1 || got.Topics[0].Partitions[0].ErrorCode != kerr.UnknownServerError.Code {
		t.Fatalf("want UNKNOWN_SERVER_ERROR, got %+v", got)
	}
	if _, err := cl.Request(ctx, metadataFor("x")); err != nil {
		t.Fatalf("connection did not survive the panic: %v", err)
	}
}

// ApiVersions at a version the server cannot decode gets the v0 fallback.
func TestApiVersionsUnknownVersionFallsBackToV0(t *testing.T) {
	_, addr, _ := startServer(t, ServerOptions{})
	rc := dialRaw(t, addr)
	frame := kbin.AppendInt16(nil, ApiVersionsKey)
	frame = kbin.AppendInt16(frame, 99)
	frame = kbin.AppendInt32(frame, 7)
	frame = kbin.AppendString(frame, "future-client")
	frame = append(frame, 0)          // header tags
	frame = append(frame, 1, 2, 3, 4) // a body from the future
	rc.nc.Write(append(kbin.AppendInt32(nil, int32(len(frame))), frame...))
	corr, body, err := rc.recv()
	if err != nil {
		t.Fatal(err)
	}
	resp := kmsg.NewPtrApiVersionsResponse() // v0: header v0, no tags
	if err := resp.ReadFrom(body); err != nil || corr != 7 {
		t.Fatalf("corr %d err %v", corr, err)
	}
	if resp.ErrorCode != kerr.UnsupportedVersion.Code || len(resp.ApiKeys) == 0 {
		t.Fatalf("want UNSUPPORTED_VERSION with keys, got %+v", resp)
	}
}

func TestOversizedFrameClosesOnlyThatConnection(t *testing.T) {
	_, addr, _ := startServer(t, ServerOptions{MaxRequestBytes: 1024})
	bad := dialRaw(t, addr)
	bad.nc.Write([]byte{0x7f, 0xff, 0xff, 0xff}) // claims 2 GiB
	if _, _, err := bad.recv(); err == nil {
		t.Fatal("expected the connection to be closed")
	}
	cl := NewClient(addr, "good")
	defer cl.Close()
	if _, err := cl.Request(context.Background(), metadataFor("ok")); err != nil {
		t.Fatalf("other clients must keep working: %v", err)
	}
}

func TestGarbageFrameClosesConnection(t *testing.T) {
	_, addr, _ := startServer(t, ServerOptions{})
	rc := dialRaw(t, addr)
	rc.nc.Write([]byte{0, 0, 0, 10, 0x7f, 0x7f, 0, 0, 0, 1, 0, 0, 0, 0}) // unknown key 32639
	if _, _, err := rc.recv(); err == nil {
		t.Fatal("expected close")
	}
}

// acks=0 produce gets no response, and the next request is still answered.
func TestNoReplyKeepsOrder(t *testing.T) {
	_, addr, _ := startServer(t, ServerOptions{})
	rc := dialRaw(t, addr)
	p := kmsg.NewPtrProduceRequest()
	p.SetVersion(7)
	p.Acks = 0
	rc.send(1, p)
	rc.send(2, metadataFor("a"))
	corr, _, err := rc.recv()
	if err != nil || corr != 2 {
		t.Fatalf("got corr %d err %v, want 2", corr, err)
	}
}

func TestCloseStopsConnections(t *testing.T) {
	s, addr, _ := startServer(t, ServerOptions{})
	rc := dialRaw(t, addr)
	rc.send(1, metadataFor("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"))
	done := make(chan struct{})
	go func() { s.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return")
	}
	if s.NumConns() != 0 {
		t.Fatalf("%d connections left", s.NumConns())
	}
}

func TestMaxConnections(t *testing.T) {
	s, addr, _ := startServer(t, ServerOptions{MaxConnections: 1})
	first := NewClient(addr, "a")
	defer first.Close()
	if _, err := first.Request(context.Background(), metadataFor("x")); err != nil {
		t.Fatal(err)
	}
	second := dialRaw(t, addr)
	if _, _, err := second.recv(); err == nil {
		t.Fatal("second connection should be refused")
	}
	if s.NumConns() != 1 {
		t.Fatalf("NumConns = %d", s.NumConns())
	}
}

// OnConnClose hears of every served connection once it is closed, with the
// ConnInfo its requests carried.
func TestOnConnClose(t *testing.T) {
	closed := make(chan uint64, 1)
	_, addr, _ := startServer(t, ServerOptions{OnConnClose: func(c *ConnInfo) { closed <- c.ID }})
	c := NewClient(addr, "a")
	if _, err := c.Request(context.Background(), metadataFor("x")); err != nil {
		t.Fatal(err)
	}
	select {
	case id := <-closed:
		t.Fatalf("connection %d reported closed while open", id)
	default:
	}
	c.Close()
	select {
	case id := <-closed:
		if id == 0 {
			t.Fatal("no connection id")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("OnConnClose not called")
	}
}

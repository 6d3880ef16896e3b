package protocol

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/internal/testsupport"
)

// barrierHandler answers Metadata only once `want` Metadata requests are in
// its hands at the same time, and closes the connection on anything but
// Metadata and ApiVersions. It counts every request it sees.
type barrierHandler struct {
	want    int
	arrived chan struct{}
	seen    atomic.Int64
	mu      sync.Mutex
	waiting int
}

func newBarrierHandler(want int) *barrierHandler {
	return &barrierHandler{want: want, arrived: make(chan struct{})}
}

func (h *barrierHandler) Handle(ctx context.Context, req *Request) Response {
	h.seen.Add(1)
	switch body := req.Body.(type) {
	case *kmsg.MetadataRequest:
		h.mu.Lock()
		h.waiting++
		if h.waiting == h.want {
			close(h.arrived)
		}
		h.mu.Unlock()
		select {
		case <-h.arrived:
		case <-ctx.Done():
		}
		return Response{Body: body.ResponseKind()}
	case *kmsg.ApiVersionsRequest:
		return (&testHandler{}).Handle(ctx, req)
	}
	return Response{Close: true}
}

func (h *barrierHandler) ErrorResponse(req *Request, _ int16) kmsg.Response {
	return req.Body.ResponseKind()
}

func startPoolServer(t *testing.T, h Handler) (*Server, string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := NewServer(h, ServerOptions{})
	go s.Serve(l, "PLAINTEXT")
	t.Cleanup(func() { s.Close() })
	return s, l.Addr().String()
}

// RoundTrip sends the version the caller set, with no ApiVersions first.
func TestPoolRoundTripSendsVersionAsSet(t *testing.T) {
	h := newBarrierHandler(1)
	_, addr := startPoolServer(t, h)
	p := NewPool("test", 2, 1<<20)
	defer p.Close()
	resp, err := p.RoundTrip(testsupport.Context(t, 10*time.Second), addr, metadataFor("x"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetVersion() != 9 || h.seen.Load() != 1 {
		t.Fatalf("response v%d after %d requests, want v9 after 1", resp.GetVersion(), h.seen.Load())
	}
}

// Concurrent requests to one address each get a connection: the handler
// answers none until all are in, which one shared connection would never
// reach.
func TestPoolConcurrentRequestsDoNotQueue(t *testing.T) {
	const n = 3
	h := newBarrierHandler(n)
	s, addr := startPoolServer(t, h)
	p := NewPool("test", 1, 1<<20)
	defer p.Close()
	ctx := testsupport.Context(t, 10*time.Second)
	errs := make(chan error, n)
	for range n {
		go func() {
			_, err := p.RoundTrip(ctx, addr, metadataFor("x"))
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	// Only maxIdle connections stay open.
	for deadline := time.Now().Add(5 * time.Second); s.NumConns() != 1; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d connections open, want 1 idle", s.NumConns())
		}
	}
	if _, err := p.RoundTrip(ctx, addr, metadataFor("x")); err != nil {
		t.Fatal(err)
	}
	if s.NumConns() != 1 {
		t.Fatalf("idle connection not reused: %d open", s.NumConns())
	}
}

// A failed request's client is dropped, and the next request reconnects.
func TestPoolDropsFailedClient(t *testing.T) {
	h := newBarrierHandler(1)
	_, addr := startPoolServer(t, h)
	p := NewPool("test", 2, 1<<20)
	defer p.Close()
	ctx := testsupport.Context(t, 10*time.Second)
	if _, err := p.RoundTrip(ctx, addr, kmsg.NewPtrProduceRequest()); err == nil {
		t.Fatal("request on a connection the server closes succeeded")
	}
	if n := len(p.idle[addr]); n != 0 {
		t.Fatalf("%d idle clients after a failure", n)
	}
	if _, err := p.RoundTrip(ctx, addr, metadataFor("x")); err != nil {
		t.Fatal(err)
	}
}

// An ApiVersions the peer cannot decode is answered at v0 (KIP-511), and
// the client reads that answer.
func TestPoolApiVersionsFallbackToV0(t *testing.T) {
	_, addr := startPoolServer(t, newBarrierHandler(1))
	p := NewPool("test", 2, 1<<20)
	defer p.Close()
	av := kmsg.NewPtrApiVersionsRequest()
	av.Version = 9
	resp, err := p.RoundTrip(testsupport.Context(t, 10*time.Second), addr, av)
	if err != nil || resp.(*kmsg.ApiVersionsResponse).ErrorCode != kerr.UnsupportedVersion.Code {
		t.Fatalf("%v %+v", err, resp)
	}
}

func TestPoolClosed(t *testing.T) {
	_, addr := startPoolServer(t, newBarrierHandler(1))
	p := NewPool("test", 2, 1<<20)
	if _, err := p.RoundTrip(testsupport.Context(t, 10*time.Second), addr, metadataFor("x")); err != nil {
		t.Fatal(err)
	}
	p.Close()
	if _, err := p.RoundTrip(testsupport.Context(t, 10*time.Second), addr, metadataFor("x")); !errors.Is(err, ErrPoolClosed) {
		t.Fatalf("after Close: %v", err)
	}
}

// A response larger than the pool's limit is refused.
func TestPoolResponseLimit(t *testing.T) {
	_, addr := startPoolServer(t, newBarrierHandler(1))
	p := NewPool("test", 2, 8)
	defer p.Close()
	if _, err := p.RoundTrip(testsupport.Context(t, 10*time.Second), addr, metadataFor("x")); !errors.Is(err, ErrBadFrame) {
		t.Fatalf("oversized response: %v", err)
	}
}

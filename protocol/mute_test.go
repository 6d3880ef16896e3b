package protocol

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// muteHandler is testHandler that mutes the connection for a produce
// request's TimeoutMillis, as a quota's throttle would.
type muteHandler struct{ testHandler }

func (h *muteHandler) Handle(ctx context.Context, req *Request) Response {
	if p, ok := req.Body.(*kmsg.ProduceRequest); ok {
		req.Conn.Throttle(time.Duration(p.TimeoutMillis) * time.Millisecond)
	}
	return h.testHandler.Handle(ctx, req)
}

func startMuteServer(t *testing.T) (*Server, string, *muteHandler) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := &muteHandler{}
	s := NewServer(h, ServerOptions{})
	go s.Serve(l, "PLAINTEXT")
	t.Cleanup(func() { s.Close() })
	return s, l.Addr().String(), h
}

func throttledProduce(ms int32) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(7)
	req.Acks, req.TimeoutMillis = 1, ms
	return req
}

// KIP-219: the throttled request is answered at once; the next one, sent
// right behind it, is not handled before the mute ends.
func TestThrottleMutesTheConnection(t *testing.T) {
	_, addr, h := startMuteServer(t)
	c := dialRaw(t, addr)
	const mute = 300 * time.Millisecond
	start := time.Now()
	c.send(1, throttledProduce(int32(mute/time.Millisecond)))
	c.send(2, throttledProduce(0))
	if corr, _, err := c.recv(); err != nil || corr != 1 {
		t.Fatalf("first answer: %d %v", corr, err)
	}
	if h.handled.Load() != 1 {
		t.Fatalf("%d requests handled during the mute", h.handled.Load())
	}
	if corr, _, err := c.recv(); err != nil || corr != 2 {
		t.Fatalf("second answer: %d %v", corr, err)
	}
	if waited := time.Since(start); waited < mute {
		t.Fatalf("second request answered after %v, inside the %v mute", waited, mute)
	}
}

// A connection closed while muted ends at once: the server does not wait
// out the mute.
func TestMutedConnectionCloses(t *testing.T) {
	s, addr, _ := startMuteServer(t)
	c := dialRaw(t, addr)
	c.send(1, throttledProduce(int32(time.Hour/time.Millisecond)))
	c.send(2, throttledProduce(0))
	if _, _, err := c.recv(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { s.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("server close waited for a muted connection")
	}
}

// A connection over its address's connection rate quota is held unserved
// for the throttle time, then closed (KIP-612).
func TestThrottledConnectionIsClosedUnserved(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := &muteHandler{}
	const hold = 300 * time.Millisecond
	s := NewServer(h, ServerOptions{ThrottleConnection: func(net.Addr) time.Duration { return hold }})
	go s.Serve(l, "PLAINTEXT")
	t.Cleanup(func() { s.Close() })
	c := dialRaw(t, l.Addr().String())
	start := time.Now()
	c.send(1, throttledProduce(0))
	if _, _, err := c.recv(); err == nil {
		t.Fatal("a throttled connection was served")
	}
	if held := time.Since(start); held < hold*9/10 {
		t.Fatalf("closed after %v, before the %v throttle", held, hold)
	}
	if h.handled.Load() != 0 {
		t.Fatal("a request of a throttled connection was handled")
	}
	if n := s.NumConns(); n != 0 {
		t.Fatalf("%d connections counted after the close", n)
	}
}

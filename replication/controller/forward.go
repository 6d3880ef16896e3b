package controller

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// forwardClient sends controller requests to other nodes' controller
// listeners over the Kafka protocol, at exactly the version set on the
// request (no ApiVersions negotiation: both ends are this package). It keeps
// a few idle connections per address; a connection carries one request at a
// time.
type forwardClient struct {
	clientID string
	corr     atomic.Int32

	mu     sync.Mutex // guards idle and closed
	idle   map[string][]*fwdConn
	closed bool
}

type fwdConn struct {
	net.Conn
	rd *bufio.Reader
}

const maxIdlePerAddr = 4

func newForwardClient(clientID string) *forwardClient {
	return &forwardClient{clientID: clientID, idle: map[string][]*fwdConn{}}
}

var errClientClosed = errors.New("controller: forwarding client closed")

func (fc *forwardClient) get(ctx context.Context, addr string) (*fwdConn, error) {
	fc.mu.Lock()
	if fc.closed {
		fc.mu.Unlock()
		return nil, errClientClosed
	}
	if cs := fc.idle[addr]; len(cs) > 0 {
		c := cs[len(cs)-1]
		fc.idle[addr] = cs[:len(cs)-1]
		fc.mu.Unlock()
		return c, nil
	}
	fc.mu.Unlock()
	d := net.Dialer{Timeout: 5 * time.Second}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	return &fwdConn{Conn: nc, rd: bufio.NewReader(nc)}, nil
}

func (fc *forwardClient) put(addr string, c *fwdConn) {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	if fc.closed || len(fc.idle[addr]) >= maxIdlePerAddr {
		c.Close()
		return
	}
	fc.idle[addr] = append(fc.idle[addr], c)
}

func (fc *forwardClient) close() {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	fc.closed = true
	for _, cs := range fc.idle {
		for _, c := range cs {
			c.Close()
		}
	}
	fc.idle = nil
}

// roundTrip sends req to addr and reads its response.
func (fc *forwardClient) roundTrip(ctx context.Context, addr string, req kmsg.Request) (kmsg.Response, error) {
	c, err := fc.get(ctx, addr)
	if err != nil {
		return nil, err
	}
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(30 * time.Second)
	}
	_ = c.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { _ = c.SetDeadline(time.Now()) })
	resp, err := fc.exchange(c, req)
	stop()
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("controller: request %s to %s: %w", kmsg.NameForKey(req.Key()), addr, err)
	}
	_ = c.SetDeadline(time.Time{})
	fc.put(addr, c)
	return resp, nil
}

func (fc *forwardClient) exchange(c *fwdConn, req kmsg.Request) (kmsg.Response, error) {
	corr := fc.corr.Add(1)
	if _, err := c.Write(appendRequestFrame(nil, corr, fc.clientID, req)); err != nil {
		return nil, err
	}
	var size [4]byte
	if _, err := io.ReadFull(c.rd, size[:]); err != nil {
		return nil, err
	}
	n := int32(binary.BigEndian.Uint32(size[:]))
	if n < 4 || n > 64<<20 {
		return nil, fmt.Errorf("bad response size %d", n)
	}
	frame := make([]byte, n)
	if _, err := io.ReadFull(c.rd, frame); err != nil {
		return nil, err
	}
	rd := kbin.Reader{Src: frame}
	if got := rd.Int32(); got != corr {
		return nil, fmt.Errorf("correlation id %d, want %d", got, corr)
	}
	resp := req.ResponseKind()
	if resp.IsFlexible() && resp.Key() != (&kmsg.ApiVersionsRequest{}).Key() {
		skipTaggedFields(&rd)
	}
	if err := resp.ReadFrom(rd.Src); err != nil {
		if _, ok := resp.(*kmsg.ApiVersionsResponse); ok {
			// KIP-511: an unsupported version is answered at v0.
			resp.SetVersion(0)
			if resp.ReadFrom(rd.Src) == nil {
				return resp, nil
			}
		}
		return nil, fmt.Errorf("decoding response: %w", err)
	}
	return resp, nil
}

// appendRequestFrame appends a size-prefixed request: header v1, or v2 (with
// tagged fields) for flexible versions.
func appendRequestFrame(dst []byte, corr int32, clientID string, req kmsg.Request) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = kbin.AppendInt16(dst, req.Key())
	dst = kbin.AppendInt16(dst, req.GetVersion())
	dst = kbin.AppendInt32(dst, corr)
	dst = kbin.AppendString(dst, clientID)
	if req.IsFlexible() {
		dst = append(dst, 0)
	}
	dst = req.AppendTo(dst)
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}

func skipTaggedFields(rd *kbin.Reader) {
	n := rd.Uvarint()
	for i := uint32(0); i < n && rd.Ok(); i++ {
		rd.Uvarint()
		rd.Span(int(rd.Uvarint()))
	}
}

// Forward serves req locally when this node is the active controller, and
// otherwise sends it to the active controller's controller listener, at the
// version set on req. Answers saying NOT_CONTROLLER and connection errors are
// retried (with the current leader, else each voter in turn) until ctx ends.
func (n *Node) Forward(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	if _, ok := controllerAPIs[req.Key()]; !ok {
		return nil, fmt.Errorf("controller: cannot forward %s (key %d)", kmsg.NameForKey(req.Key()), req.Key())
	}
	backoff := 20 * time.Millisecond
	var lastErr error
	for attempt := 0; ; attempt++ {
		resp, err := n.forwardOnce(ctx, req, attempt)
		if err == nil && !misdirected(resp) {
			return resp, nil
		}
		if err != nil {
			lastErr = err
		}
		if err := sleepCtx(ctx, backoff); err != nil {
			if lastErr != nil {
				return nil, fmt.Errorf("%w (last error: %v)", err, lastErr)
			}
			return nil, err
		}
		backoff = min(2*backoff, 500*time.Millisecond)
	}
}

func (n *Node) forwardOnce(ctx context.Context, req kmsg.Request, attempt int) (kmsg.Response, error) {
	if n.IsActive() {
		return n.Handle(ctx, req)
	}
	addr := n.forwardTarget(attempt)
	if addr == "" {
		return nil, errNotController
	}
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return n.client.roundTrip(rctx, addr, req)
}

// forwardTarget is the Raft leader's address when known, else the voters in
// turn (skipping this node).
func (n *Node) forwardTarget(attempt int) string {
	if addr, id := n.raft.LeaderWithID(); addr != "" && string(id) != serverID(n.opts.NodeID) {
		return string(addr)
	}
	var others []string
	for _, v := range n.opts.Voters {
		if v.ID != n.opts.NodeID {
			others = append(others, v.Addr)
		}
	}
	if len(others) == 0 {
		return ""
	}
	return others[attempt%len(others)]
}

package protocol

import (
	"context"
	"errors"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Pool hands out Clients by peer address for callers that send to several
// peers from several goroutines (controller forwarding). A request takes a
// client of its own, an idle one or a new one, so concurrent requests to one
// peer do not queue behind each other; afterwards the client goes back to
// the idle list, up to maxIdle per address. A client whose request failed
// is closed, not kept. Pooled responses do not alias a reused buffer.
type Pool struct {
	clientID string
	maxIdle  int
	maxFrame int32
	opts     []ClientOption

	mu     sync.Mutex // guards idle and closed
	idle   map[string][]*Client
	closed bool
}

// ErrPoolClosed is returned by requests made after Close.
var ErrPoolClosed = errors.New("protocol: client pool closed")

// NewPool returns a pool whose clients introduce themselves as clientID,
// keep at most maxIdlePerAddr idle connections per address and accept
// responses of at most maxResponseBytes.
func NewPool(clientID string, maxIdlePerAddr int, maxResponseBytes int32, opts ...ClientOption) *Pool {
	return &Pool{clientID: clientID, maxIdle: maxIdlePerAddr, maxFrame: maxResponseBytes, opts: opts, idle: map[string][]*Client{}}
}

// RoundTrip sends req to addr at exactly the version set on it (see
// Client.RoundTrip).
func (p *Pool) RoundTrip(ctx context.Context, addr string, req kmsg.Request) (kmsg.Response, error) {
	c, err := p.get(addr)
	if err != nil {
		return nil, err
	}
	resp, err := c.RoundTrip(ctx, req)
	if err != nil {
		c.Close()
		return nil, err
	}
	p.put(c)
	return resp, nil
}

func (p *Pool) get(addr string) (*Client, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, ErrPoolClosed
	}
	if cs := p.idle[addr]; len(cs) > 0 {
		c := cs[len(cs)-1]
		p.idle[addr] = cs[:len(cs)-1]
		return c, nil
	}
	return newClient(addr, p.clientID, p.maxFrame, false, p.opts), nil
}

func (p *Pool) put(c *Client) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || len(p.idle[c.addr]) >= p.maxIdle {
		c.Close()
		return
	}
	p.idle[c.addr] = append(p.idle[c.addr], c)
}

// Close closes the idle clients; clients in use are closed when their
// request returns. Later requests fail with ErrPoolClosed.
func (p *Pool) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for _, cs := range p.idle {
		for _, c := range cs {
			c.Close()
		}
	}
	p.idle = nil
}

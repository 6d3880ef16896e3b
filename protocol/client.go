package protocol

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Client is a minimal Kafka client for broker-to-broker traffic (replica
// fetchers, controller forwarding): one connection, one request at a time.
// Request negotiates versions once per connection through ApiVersions;
// RoundTrip sends the version set on the request as it is. It is safe for
// concurrent use; requests are serialised.
type Client struct {
	addr     string
	clientID string
	dialer   net.Dialer
	maxFrame int32 // largest response frame accepted
	// reuseFrames makes responses alias a buffer the next request
	// overwrites; off for pooled clients, whose next request may be
	// another caller's.
	reuseFrames bool
	security    ClientSecurity

	mu          sync.Mutex // guards the fields below; held for a whole round trip
	nc          net.Conn
	reauthAt    time.Time // KIP-368: reconnect (and authenticate again) after this; zero: never
	rd          *bufio.Reader
	correlation int32
	maxVersions map[int16]int16 // from the peer's ApiVersions; nil until negotiated on nc
	buf         []byte          // request encoding, reused
	respBuf     []byte          // response frames, reused when reuseFrames: see Request
	within      time.Duration   // the timeout of the call in progress (RequestWithin), 0: none
	// watch is the registration that fails the round trip in progress on
	// watchNC when watchCtx ends: one per context and connection, not one
	// per request (a replica fetcher sends every fetch with one context).
	watchCtx  context.Context
	watchNC   net.Conn
	watch     *ctxWatch
	watchStop func() bool
	watches   int // registrations made, for tests
}

// ctxWatch is one registration of watchLocked. Its callback moves the
// deadline only while the registration is live, under mu: once unwatched,
// a callback that had already started cannot touch the deadline of a later
// round trip.
type ctxWatch struct {
	mu   sync.Mutex
	live bool // guarded by mu
}

// NewClient returns a client for addr. It connects lazily.
func NewClient(addr, clientID string, opts ...ClientOption) *Client {
	return newClient(addr, clientID, 1<<30, true, opts)
}

func newClient(addr, clientID string, maxFrame int32, reuseFrames bool, opts []ClientOption) *Client {
	c := &Client{addr: addr, clientID: clientID, dialer: net.Dialer{Timeout: 5 * time.Second},
		maxFrame: maxFrame, reuseFrames: reuseFrames}
	for _, o := range opts {
		o(c)
	}
	return c
}

// Addr returns the peer address.
func (c *Client) Addr() string { return c.addr }

// ErrUnsupportedByPeer is returned when the peer does not support the request's key.
var ErrUnsupportedByPeer = errors.New("protocol: peer does not support this api")

// Request sends req at the highest version both sides support (capped at the
// version already set on req, if it is not zero) and returns the response.
// Any error closes the connection; the next call reconnects. The response's
// byte fields (a fetch's record batches) alias a buffer the client reuses:
// they are valid until the next Request.
func (c *Client) Request(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	return c.request(ctx, 0, req)
}

// RequestWithin is Request that gives up after d as well (or when ctx
// ends): a caller with a timeout per request (a replica fetcher) needs no
// context of its own for each.
func (c *Client) RequestWithin(ctx context.Context, d time.Duration, req kmsg.Request) (kmsg.Response, error) {
	return c.request(ctx, d, req)
}

// request is Request with a timeout of d (0: ctx's deadline, else the
// default).
func (c *Client) request(ctx context.Context, d time.Duration, req kmsg.Request) (kmsg.Response, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.within = d
	if err := c.connectLocked(ctx); err != nil {
		return nil, err
	}
	if err := c.negotiateLocked(ctx); err != nil {
		c.closeLocked()
		return nil, err
	}
	peerMax, ok := c.maxVersions[req.Key()]
	if !ok {
		return nil, fmt.Errorf("%w: key %d at %s", ErrUnsupportedByPeer, req.Key(), c.addr)
	}
	v := min(req.MaxVersion(), peerMax)
	if cur := req.GetVersion(); cur > 0 && cur < v {
		v = cur
	}
	req.SetVersion(v)
	return c.exchangeLocked(ctx, req)
}

// RoundTrip sends req at exactly the version set on it, without asking the
// peer's versions first: for peers whose versions the caller knows (the
// controller quorum is all kbroker). Errors and buffers are as for Request.
func (c *Client) RoundTrip(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.within = 0
	if err := c.connectLocked(ctx); err != nil {
		return nil, err
	}
	return c.exchangeLocked(ctx, req)
}

// exchangeLocked is one round trip on the open connection, closed on error.
func (c *Client) exchangeLocked(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	resp, err := c.roundTripLocked(ctx, req)
	if err != nil {
		c.closeLocked()
		return nil, err
	}
	return resp, nil
}

// Close closes the connection.
func (c *Client) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closeLocked()
}

func (c *Client) closeLocked() {
	c.unwatchLocked()
	if c.nc != nil {
		c.nc.Close()
		c.nc = nil
		c.maxVersions = nil
	}
}

func (c *Client) connectLocked(ctx context.Context) error {
	if c.nc != nil && !c.reauthAt.IsZero() && time.Now().After(c.reauthAt) {
		c.closeLocked() // the session ends soon: authenticate afresh
	}
	if c.nc != nil {
		return nil
	}
	nc, err := c.dialLocked(ctx)
	if err != nil {
		return err
	}
	c.nc, c.reauthAt = nc, time.Time{}
	c.rd = bufio.NewReaderSize(nc, 64<<10)
	if err := c.authenticateLocked(ctx); err != nil {
		c.closeLocked()
		return err
	}
	return nil
}

// negotiateLocked learns the peer's versions once per connection.
func (c *Client) negotiateLocked(ctx context.Context) error {
	if c.maxVersions != nil {
		return nil
	}
	av := kmsg.NewPtrApiVersionsRequest()
	av.SetVersion(3)
	av.ClientSoftwareName = "kbroker"
	av.ClientSoftwareVersion = "1"
	resp, err := c.roundTripLocked(ctx, av)
	if err != nil {
		return fmt.Errorf("ApiVersions to %s: %w", c.addr, err)
	}
	avr := resp.(*kmsg.ApiVersionsResponse)
	if err := kerr.ErrorForCode(avr.ErrorCode); err != nil {
		return fmt.Errorf("ApiVersions to %s: %w", c.addr, err)
	}
	c.maxVersions = make(map[int16]int16, len(avr.ApiKeys))
	for _, k := range avr.ApiKeys {
		c.maxVersions[k.ApiKey] = k.MaxVersion
	}
	return nil
}

func (c *Client) roundTripLocked(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	// Watch first: once the watch of an earlier request's context is
	// ended, nothing but this request's own watch moves the deadline.
	c.watchLocked(ctx)
	c.nc.SetDeadline(c.deadlineLocked(ctx))
	// After the deadline is set: a ctx that ends from here on fails the
	// round trip through the watch; one that ended before (its watch may
	// have fired between requests) is seen here.
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("request to %s: %w", c.addr, err)
	}

	c.correlation++
	corr := c.correlation
	c.buf = appendRequest(c.buf[:0], corr, c.clientID, req)
	if _, err := c.nc.Write(c.buf); err != nil {
		return nil, fmt.Errorf("writing to %s: %w", c.addr, err)
	}
	var size [4]byte
	if _, err := io.ReadFull(c.rd, size[:]); err != nil {
		return nil, fmt.Errorf("reading from %s: %w", c.addr, err)
	}
	n := int32(binary.BigEndian.Uint32(size[:]))
	if n < 4 || n > c.maxFrame {
		return nil, fmt.Errorf("%w: response size %d from %s", ErrBadFrame, n, c.addr)
	}
	frame := c.frameBuf(int(n))
	if _, err := io.ReadFull(c.rd, frame); err != nil {
		return nil, fmt.Errorf("reading from %s: %w", c.addr, err)
	}
	rd := kbin.Reader{Src: frame}
	if got := rd.Int32(); got != corr {
		return nil, fmt.Errorf("%w: correlation id %d, want %d", ErrBadFrame, got, corr)
	}
	return c.decodeResponse(req, &rd)
}

// watchLocked makes the end of ctx fail the round trip in progress on the
// connection: it moves the connection's deadline to now. The registration
// stays for the next requests with the same ctx on the same connection.
func (c *Client) watchLocked(ctx context.Context) {
	if ctx.Done() == nil { // never ends
		return
	}
	if c.watch != nil && c.watchCtx == ctx && c.watchNC == c.nc {
		return
	}
	c.unwatchLocked()
	// The callback may run after the connection was closed and dropped:
	// it holds its own reference, not c.nc.
	nc, w := c.nc, &ctxWatch{live: true}
	c.watchStop = context.AfterFunc(ctx, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.live {
			nc.SetDeadline(time.Now())
		}
	})
	c.watchCtx, c.watchNC, c.watch = ctx, nc, w
	c.watches++
}

// unwatchLocked ends the registration, if any: when it returns, its
// callback has moved the deadline already or never will.
func (c *Client) unwatchLocked() {
	if c.watch == nil {
		return
	}
	c.watchStop()
	c.watch.mu.Lock()
	c.watch.live = false
	c.watch.mu.Unlock()
	c.watchCtx, c.watchNC, c.watch, c.watchStop = nil, nil, nil, nil
}

// deadlineLocked is when the call in progress gives up: the earlier of
// ctx's deadline and its own timeout (RequestWithin), 30 s without either.
func (c *Client) deadlineLocked(ctx context.Context) time.Time {
	deadline, ok := ctx.Deadline()
	if c.within > 0 {
		if d := time.Now().Add(c.within); !ok || d.Before(deadline) {
			return d
		}
	}
	if !ok {
		return time.Now().Add(30 * time.Second)
	}
	return deadline
}

// frameBuf returns a buffer of n bytes for a response frame.
func (c *Client) frameBuf(n int) []byte {
	if !c.reuseFrames {
		return make([]byte, n)
	}
	if cap(c.respBuf) < n {
		c.respBuf = make([]byte, n)
	}
	return c.respBuf[:n]
}

// decodeResponse decodes the body after the correlation id.
func (c *Client) decodeResponse(req kmsg.Request, rd *kbin.Reader) (kmsg.Response, error) {
	resp := req.ResponseKind()
	if resp.IsFlexible() && resp.Key() != ApiVersionsKey {
		skipTags(rd)
	}
	err := resp.ReadFrom(rd.Src)
	if err != nil && resp.Key() == ApiVersionsKey && resp.GetVersion() != 0 {
		// KIP-511: a version the peer does not support is answered at v0.
		resp.SetVersion(0)
		err = resp.ReadFrom(rd.Src)
	}
	if err != nil {
		return nil, fmt.Errorf("decoding key %d response from %s: %w", req.Key(), c.addr, err)
	}
	return resp, nil
}

// appendRequest appends a size-prefixed request frame to dst.
func appendRequest(dst []byte, correlationID int32, clientID string, req kmsg.Request) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = kbin.AppendInt16(dst, req.Key())
	dst = kbin.AppendInt16(dst, req.GetVersion())
	dst = kbin.AppendInt32(dst, correlationID)
	dst = kbin.AppendString(dst, clientID)
	if req.IsFlexible() {
		dst = append(dst, 0)
	}
	dst = req.AppendTo(dst)
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}

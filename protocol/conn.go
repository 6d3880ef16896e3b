package protocol

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/security/session"
)

// conn serves one client connection with a reader and a writer goroutine.
// The reader owns decoding and handling; the writer owns the socket's write
// side. They communicate only through pending, in request order.
type conn struct {
	srv  *Server
	nc   net.Conn
	info *ConnInfo
	log  *slog.Logger

	ctx    context.Context // done when the connection is closing
	cancel context.CancelFunc

	pending  chan pendingResponse // reader -> writer, request order
	inflight atomic.Int32         // requests read and not yet answered
	// copyVectors: the connection is TLS, so VectorResponses are copied
	// through the buffered writer (crypto/tls encrypts every write into
	// its own record; sendfile cannot go through it).
	copyVectors bool
}

type pendingResponse struct {
	req   *Request
	resp  Response
	start time.Time
	// raw, when req is nil, is a SASL token answered after SaslHandshake
	// v0: written as a size-prefixed frame without a response header.
	raw []byte
}

func (s *Server) serveConn(nc net.Conn, listenerName string) {
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	// Closing the socket is what unblocks a reader stuck in Read or a
	// handshake.
	stop := context.AfterFunc(ctx, func() { nc.Close() })
	defer stop()
	info := &ConnInfo{ID: s.nextConnID.Add(1), Listener: listenerName, Remote: nc.RemoteAddr(), server: s}
	log := s.log.With("conn", info.ID, "remote", info.Remote.String(), "listener", listenerName)
	sec := s.opts.Listeners[listenerName]
	info.security = &sec
	secured, state, sess, err := s.secureConn(ctx, nc, sec)
	if err != nil {
		if ctx.Err() == nil {
			s.authFailed(log, AuthFailure{Conn: info, Mechanism: "SSL", Reason: err.Error()})
		}
		nc.Close()
		return
	}
	info.TLS, info.Session = state, sess
	info.setPrincipal(sess.Principal())
	c := &conn{
		srv:         s,
		nc:          secured,
		info:        info,
		log:         log,
		ctx:         ctx,
		cancel:      cancel,
		pending:     make(chan pendingResponse, s.opts.MaxInflight),
		copyVectors: isTLS(secured),
	}
	if secured != nc {
		stopTLS := context.AfterFunc(ctx, func() { secured.Close() })
		defer stopTLS()
	}

	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		c.writeLoop()
	}()
	c.readLoop()
	<-writerDone
	if s.opts.OnConnClose != nil {
		s.opts.OnConnClose(info)
	}
}

// readLoop reads, decodes and handles requests in order until the connection
// fails, then closes pending so the writer finishes what was answered.
func (c *conn) readLoop() {
	defer close(c.pending)
	rd := bufio.NewReaderSize(c.nc, 64<<10)
	var sizeBuf [4]byte
	for {
		if err := c.nc.SetReadDeadline(time.Now().Add(c.srv.opts.IdleTimeout)); err != nil {
			return
		}
		frame, err := readFrame(rd, c.maxRequestBytes(), &sizeBuf, &c.srv.frames)
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() && c.inflight.Load() > 0 {
				continue // idle reading, but busy answering: not idle
			}
			c.logReadError(err)
			return
		}
		start := time.Now()
		req, err := ParseRequest(frame)
		if err != nil {
			c.log.Warn("closing connection: bad request", "key", req.Key, "version", req.Version,
				"correlation_id", req.CorrelationID, "client_id", req.ClientIDString(), "err", err)
			c.push(pendingResponse{req: req, resp: Response{Close: true}, start: start})
			return
		}
		req.Conn = c.info
		if !c.waitUnmuted() { // a quota throttled the connection (mute.go)
			return
		}
		if v := c.info.Session.Gate(req.Key); !v.Serve {
			// Kafka closes such a connection without an answer
			// (IllegalSaslStateException, or an expired session).
			c.log.Info("closing connection: request not allowed in its authentication state", "key", req.Key,
				"reason", v.Reason, "state", c.info.Session.State().String())
			c.push(pendingResponse{req: req, resp: Response{Close: true}, start: start})
			return
		}
		resp := c.handle(req)
		c.info.setPrincipal(c.info.Session.Principal())
		if recyclable(req.Key) {
			c.srv.frames.put(frame)
		}
		if resp.NoReply {
			if resp.Done != nil {
				resp.Done()
			}
			c.observe(req, nil, start)
			continue
		}
		if !c.push(pendingResponse{req: req, resp: resp, start: start}) || resp.Close || resp.CloseAfter {
			return
		}
		if c.info.Session.RawTokens() && !c.rawTokens(rd, &sizeBuf) {
			return
		}
	}
}

// maxPreAuthBytes bounds the frames of a connection that has not
// authenticated, as Kafka's sasl.server.max.receive.size (512 KiB).
const maxPreAuthBytes = 512 << 10

// maxRequestBytes is the largest frame the reader accepts now.
func (c *conn) maxRequestBytes() int32 {
	if c.info.Session.State() != session.StateAuthenticated {
		return min(c.srv.opts.MaxRequestBytes, maxPreAuthBytes)
	}
	return c.srv.opts.MaxRequestBytes
}

func (c *conn) logReadError(err error) {
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed), c.ctx.Err() != nil:
		return
	case errors.Is(err, os.ErrDeadlineExceeded):
		c.log.Debug("closing idle connection", "idle", c.srv.opts.IdleTimeout)
	case errors.Is(err, ErrFrameTooLarge), errors.Is(err, ErrBadFrame):
		c.log.Warn("closing connection: bad frame", "err", err)
	default:
		c.log.Debug("connection read failed", "err", err)
	}
}

// push queues a response for the writer; false if the connection is closing.
func (c *conn) push(p pendingResponse) bool {
	c.inflight.Add(1)
	select {
	case c.pending <- p:
		return true
	case <-c.ctx.Done():
		c.finish(p)
		return false
	}
}

// handle runs the handler and turns a panic into an error response: one bad
// request must not take down the connection's other requests or the broker.
func (c *conn) handle(req *Request) (resp Response) {
	defer func() {
		if r := recover(); r != nil {
			resp = c.recovered(req, r)
		}
	}()
	return c.srv.handler.Handle(c.ctx, req)
}

func (c *conn) recovered(req *Request, r any) Response {
	c.log.Error("request handler panicked", "key", req.Key, "version", req.Version,
		"correlation_id", req.CorrelationID, "client_id", req.ClientIDString(),
		"panic", fmt.Sprint(r), "stack", string(debug.Stack()))
	body := c.errorResponse(req)
	if body == nil {
		return Response{Close: true}
	}
	return Response{Body: body}
}

func (c *conn) errorResponse(req *Request) (body kmsg.Response) {
	defer func() {
		if r := recover(); r != nil {
			body = nil
		}
	}()
	return c.srv.handler.ErrorResponse(req, kerr.UnknownServerError.Code)
}

// writeLoop writes responses in request order. A deferred response blocks
// the responses behind it, exactly as Kafka's per-connection ordering needs.
func (c *conn) writeLoop() {
	defer c.cancel()
	defer c.drain()
	w := bufio.NewWriterSize(c.nc, 64<<10)
	var buf []byte
	var vw *vectorWriter // made on the first VectorResponse
	for p := range c.pending {
		if p.req == nil {
			if err := writeRawFrame(w, p.raw); err != nil {
				c.log.Debug("connection write failed", "err", err)
				return
			}
			c.inflight.Add(-1)
			continue
		}
		body := p.resp.Body
		if p.resp.Later != nil {
			body = c.waitLater(p.req, p.resp.Later)
		}
		if p.resp.Close || body == nil {
			w.Flush()
			c.finish(p)
			return
		}
		if body.Key() != ApiVersionsKey {
			body.SetVersion(p.req.Version)
		}
		if vr, ok := body.(VectorResponse); ok && c.copyVectors {
			err := copyVectors(w, p.req.CorrelationID, vr, &buf)
			c.finish(p)
			if err == nil && (len(c.pending) == 0 || p.resp.CloseAfter) {
				err = w.Flush()
			}
			if err != nil {
				c.log.Debug("connection write failed", "err", err)
				return
			}
			c.observe(p.req, body, p.start)
			continue
		}
		if vr, ok := body.(VectorResponse); ok {
			if vw == nil {
				vw = newVectorWriter(c.nc)
			}
			err := c.writeVectors(w, vw, p.req.CorrelationID, vr, &buf)
			c.finish(p) // the borrowed buffers are written
			if err != nil {
				c.log.Debug("connection write failed", "err", err)
				return
			}
			c.observe(p.req, body, p.start)
			continue
		}
		buf = appendResponse(buf[:0], p.req.CorrelationID, body)
		c.finish(p)
		if _, err := w.Write(buf); err != nil {
			c.log.Debug("connection write failed", "err", err)
			return
		}
		if len(c.pending) == 0 || p.resp.CloseAfter {
			if err := w.Flush(); err != nil {
				c.log.Debug("connection flush failed", "err", err)
				return
			}
		}
		c.observe(p.req, body, p.start)
		if p.resp.CloseAfter {
			return
		}
		if cap(buf) > 4<<20 {
			buf = nil // do not pin a huge fetch buffer to an idle connection
		}
	}
	w.Flush()
}

// writeVectors writes a VectorResponse: the buffered responses before it
// are flushed, then its frame goes out with writev and sendfile.
func (c *conn) writeVectors(w *bufio.Writer, vw *vectorWriter, correlationID int32, vr VectorResponse, scratch *[]byte) error {
	head := (*scratch)[:0]
	head = append(head, 0, 0, 0, 0)
	head = kbin.AppendInt32(head, correlationID)
	if vr.IsFlexible() {
		head = append(head, 0)
	}
	vs := vr.AppendVectors(append(vw.vecs[:0], Vector{B: head}), head[len(head):])
	total := 0
	for _, v := range vs {
		total += len(v.B)
	}
	binary.BigEndian.PutUint32(vs[0].B, uint32(total-4))
	err := w.Flush()
	if err == nil {
		err = vw.write(vs)
	}
	clear(vs) // do not pin mapped segments or files to an idle connection
	vw.vecs = vs[:0]
	if cap(head) <= 4<<20 {
		*scratch = head[:0]
	}
	return err
}

// finish releases what a response borrowed once it is encoded or dropped.
func (c *conn) finish(p pendingResponse) {
	c.inflight.Add(-1)
	if p.resp.Done != nil {
		p.resp.Done()
	}
}

// drain drops the responses still queued when the writer stops early, so
// that their Done hooks run; it returns when the reader has closed pending.
func (c *conn) drain() {
	c.cancel() // stop the reader
	for p := range c.pending {
		c.finish(p)
	}
}

func (c *conn) waitLater(req *Request, later func(context.Context) kmsg.Response) (body kmsg.Response) {
	defer func() {
		if r := recover(); r != nil {
			body = c.recovered(req, r).Body
		}
	}()
	return later(c.ctx)
}

func (c *conn) observe(req *Request, resp kmsg.Response, start time.Time) {
	if c.srv.opts.Observe != nil {
		c.srv.opts.Observe(req, resp, time.Since(start))
	}
}

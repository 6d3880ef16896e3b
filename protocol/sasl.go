package protocol

import (
	"bufio"
	"context"
	"encoding/binary"
	"io"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// SASL on the wire, as Kafka's SaslServerAuthenticator serves it:
//
//   - SaslHandshake v1 names the mechanism; SaslAuthenticate requests
//     carry the exchange (KIP-152). A failure is answered
//     SASL_AUTHENTICATION_FAILED with a message after
//     connection.failed.authentication.delay.ms, then the connection closes.
//   - SaslHandshake v0 (librdkafka without SaslAuthenticate, old Java
//     clients): the exchange follows as raw size-prefixed tokens, read by
//     the connection's reader (rawTokens); a failure closes the connection
//     after the delay, without an answer.
//   - A SaslHandshake on an authenticated connection re-authenticates it
//     (KIP-368); the principal must stay the same.

// API keys of SASL.
const (
	SaslHandshakeKey    = 17
	SaslAuthenticateKey = 36
)

// HandleSASL answers SaslHandshake and SaslAuthenticate with the
// connection's session. The broker's and the controller's handlers of the
// two APIs are this call.
func HandleSASL(req *Request) Response {
	sess := req.Conn.Session
	if sess == nil { // a connection made by a test, without a server
		return Response{Close: true}
	}
	switch r := req.Body.(type) {
	case *kmsg.SASLHandshakeRequest:
		resp, closeAfter := sess.HandleSaslHandshake(r)
		if closeAfter {
			req.Conn.authFailed(r.Mechanism, "SaslHandshake refused: mechanism "+quoteMechanism(r.Mechanism)+" is not enabled, or the state does not allow a handshake")
		}
		return Response{Body: resp, CloseAfter: closeAfter}
	case *kmsg.SASLAuthenticateRequest:
		resp, fail := sess.HandleSaslAuthenticate(r)
		if fail == nil {
			return Response{Body: resp}
		}
		req.Conn.authFailed(fail.Mechanism, fail.Err.Reason)
		delay := req.Conn.failedAuthDelay()
		return Response{CloseAfter: true, Later: func(ctx context.Context) kmsg.Response {
			sleepCtx(ctx, delay)
			return resp
		}}
	}
	return Response{Close: true}
}

// quoteMechanism bounds what a client's mechanism name puts in a log line.
func quoteMechanism(m string) string {
	if len(m) > 64 {
		m = m[:64] + "..."
	}
	return `"` + m + `"`
}

func (c *ConnInfo) failedAuthDelay() time.Duration {
	if c.security == nil {
		return 0
	}
	return c.security.FailedAuthDelay
}

// authFailed logs and reports a failed authentication of c.
func (c *ConnInfo) authFailed(mechanism, reason string) {
	if c.server == nil {
		return
	}
	log := c.server.log.With("conn", c.ID, "remote", c.Remote.String(), "listener", c.Listener)
	c.server.authFailed(log, AuthFailure{Conn: c, Mechanism: mechanism, Reason: reason})
}

func (s *Server) authFailed(log *slog.Logger, f AuthFailure) {
	log.Info("authentication failed", "mechanism", f.Mechanism, "reason", f.Reason)
	if s.opts.OnAuthFailure != nil {
		s.opts.OnAuthFailure(f)
	}
}

// rawTokens reads the SASL tokens that follow SaslHandshake v0, each a
// size-prefixed frame, and queues the replies, until the exchange is over.
// false: the connection must close (a read error or a failed exchange).
func (c *conn) rawTokens(rd *bufio.Reader, sizeBuf *[4]byte) bool {
	for c.info.Session.RawTokens() {
		if err := c.nc.SetReadDeadline(time.Now().Add(c.srv.opts.IdleTimeout)); err != nil {
			return false
		}
		token, err := readToken(rd, maxPreAuthBytes, sizeBuf)
		if err != nil {
			c.logReadError(err)
			return false
		}
		out, fail := c.info.Session.Token(token)
		if fail != nil {
			c.info.authFailed(fail.Mechanism, fail.Err.Reason)
			sleepCtx(c.ctx, c.info.failedAuthDelay())
			return false
		}
		c.info.setPrincipal(c.info.Session.Principal())
		if !c.push(pendingResponse{raw: out}) {
			return false
		}
	}
	return true
}

// readToken reads one size-prefixed raw SASL token (which, unlike a
// request, may be empty).
func readToken(rd *bufio.Reader, maxBytes int32, sizeBuf *[4]byte) ([]byte, error) {
	if _, err := io.ReadFull(rd, sizeBuf[:]); err != nil {
		return nil, err
	}
	size := int32(binary.BigEndian.Uint32(sizeBuf[:]))
	if size < 0 || size > maxBytes {
		return nil, ErrFrameTooLarge
	}
	buf := make([]byte, size)
	if _, err := io.ReadFull(rd, buf); err != nil {
		return nil, err
	}
	return buf, nil
}

// writeRawFrame writes a raw SASL token reply, size-prefixed, and flushes:
// the client waits for it before it sends anything else.
func writeRawFrame(w *bufio.Writer, b []byte) error {
	var size [4]byte
	binary.BigEndian.PutUint32(size[:], uint32(len(b)))
	if _, err := w.Write(size[:]); err != nil {
		return err
	}
	if _, err := w.Write(b); err != nil {
		return err
	}
	return w.Flush()
}

// copyVectors writes a VectorResponse through w, copying its pieces: on a
// TLS connection every write to the socket is one TLS record, so the small
// fields between record sets must be gathered, and sendfile cannot go
// through the encryption. Large pieces pass through w without a copy when
// its buffer is empty (bufio writes them directly).
func copyVectors(w *bufio.Writer, correlationID int32, vr VectorResponse, scratch *[]byte) error {
	head := (*scratch)[:0]
	head = append(head, 0, 0, 0, 0)
	head = kbin.AppendInt32(head, correlationID)
	if vr.IsFlexible() {
		head = append(head, 0)
	}
	vs := vr.AppendVectors([]Vector{{B: head}}, head[len(head):])
	total := 0
	for _, v := range vs {
		total += len(v.B)
	}
	binary.BigEndian.PutUint32(vs[0].B, uint32(total-4))
	var err error
	for _, v := range vs {
		if _, err = w.Write(v.B); err != nil {
			break
		}
	}
	clear(vs)
	if cap(head) <= 4<<20 {
		*scratch = head[:0]
	}
	return err
}

func sleepCtx(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

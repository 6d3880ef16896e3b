package protocol

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/security/principal"
	"github.com/kbroker/kbroker/security/session"
)

// ListenerSecurity is how the connections of one listener are secured:
// TLS (SSL and SASL_SSL listeners) and the authentication session every
// connection runs (security/session: SASL, the principal of a client
// certificate, or ANONYMOUS on PLAINTEXT). The zero value is PLAINTEXT.
type ListenerSecurity struct {
	// TLS is the listener's server config (tlsconf.Reloader.Config: each
	// handshake gets the current certificate); nil for plaintext listeners.
	// A connection that arrives already wrapped in TLS (the controller
	// port, which the controller routes after its own handshake) keeps it.
	TLS *tls.Config
	// Session is the listener's authentication setup; the zero Config
	// authenticates every connection as User:ANONYMOUS.
	Session session.Config
	// FailedAuthDelay is connection.failed.authentication.delay.ms: a
	// failed authentication's answer waits this long, then the connection
	// closes.
	FailedAuthDelay time.Duration
}

// AuthFailure describes a failed authentication, for ServerOptions.OnAuthFailure.
type AuthFailure struct {
	Conn      *ConnInfo
	Mechanism string
	Reason    string // never a secret
}

// handshakeTimeout bounds a TLS handshake: a client that connects and says
// nothing must not hold a goroutine for longer.
const handshakeTimeout = 10 * time.Second

// tlsConnectionState is what a TLS connection (or a wrapper of one)
// reports.
type tlsConnectionState interface {
	ConnectionState() tls.ConnectionState
}

// secureConn runs the TLS handshake of a listener with TLS (or takes the
// state of a connection that is TLS already) and starts the connection's
// authentication session. An error means the connection is refused.
func (s *Server) secureConn(ctx context.Context, nc net.Conn, sec ListenerSecurity) (net.Conn, *tls.ConnectionState, *session.Session, error) {
	var state *tls.ConnectionState
	switch tc := nc.(type) {
	case tlsConnectionState:
		st := tc.ConnectionState()
		state = &st
	default:
		if sec.TLS != nil {
			t := tls.Server(nc, sec.TLS)
			hctx, cancel := context.WithTimeout(ctx, handshakeTimeout)
			err := t.HandshakeContext(hctx)
			cancel()
			if err != nil {
				return nil, nil, nil, fmt.Errorf("TLS handshake: %w", err)
			}
			st := t.ConnectionState()
			nc, state = t, &st
		}
	}
	if sec.Session.Protocol.TLS() && state == nil {
		return nil, nil, nil, fmt.Errorf("listener expects TLS but has no TLS config")
	}
	sess, err := session.New(sec.Session, state)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("principal of the client certificate: %w", err)
	}
	return nc, state, sess, nil
}

// isTLS reports whether nc encrypts: sendfile cannot go through it, so
// responses are copied (see writeLoop).
func isTLS(nc net.Conn) bool {
	_, ok := nc.(tlsConnectionState)
	return ok
}

// Principal is the connection's authenticated principal: User:ANONYMOUS
// before (or without) authentication.
func (c *ConnInfo) Principal() principal.Principal {
	if p := c.principal.Load(); p != nil {
		return *p
	}
	return principal.Anonymous()
}

// setPrincipal is called by the reader after each request that may have
// changed the session's principal (authentication completes on the
// reader; Later closures on the writer read it).
// An unchanged principal costs no allocation: storing &p would move p to
// the heap on every call, once per request.
func (c *ConnInfo) setPrincipal(p principal.Principal) {
	if cur := c.principal.Load(); cur != nil && *cur == p {
		return
	}
	np := new(principal.Principal)
	*np = p
	c.principal.Store(np)
}

// ServeAuthentication authenticates a connection that no Server serves
// (the controller's Raft streams, which switch to their own protocol once
// authenticated): on a SASL listener it answers SaslHandshake v1 and
// SaslAuthenticate frames with a session of sec until the session is
// authenticated; other listeners authenticate at once (the client
// certificate, or ANONYMOUS). It returns the principal. A failure is
// answered after the failed-authentication delay and returned; so is any
// other request. The caller closes nc on an error.
func ServeAuthentication(ctx context.Context, nc net.Conn, sec ListenerSecurity) (principal.Principal, error) {
	var state *tls.ConnectionState
	if tc, ok := nc.(tlsConnectionState); ok {
		st := tc.ConnectionState()
		state = &st
	}
	sess, err := session.New(sec.Session, state)
	if err != nil {
		return principal.Principal{}, err
	}
	deadline := time.Now().Add(handshakeTimeout)
	nc.SetDeadline(deadline)
	defer nc.SetDeadline(time.Time{})
	info := &ConnInfo{Remote: nc.RemoteAddr(), Session: sess, security: &sec}
	var sizeBuf [4]byte
	var pool framePool
	for sess.State() != session.StateAuthenticated {
		frame, err := readFrame(nc, maxPreAuthBytes, &sizeBuf, &pool)
		if err != nil {
			return principal.Principal{}, fmt.Errorf("reading a SASL request: %w", err)
		}
		req, err := ParseRequest(frame)
		if err != nil {
			return principal.Principal{}, err
		}
		if (req.Key != SaslHandshakeKey || req.Version < 1) && req.Key != SaslAuthenticateKey {
			return principal.Principal{}, fmt.Errorf("%s v%d before authentication", apiName(req.Key), req.Version)
		}
		req.Conn = info
		resp := HandleSASL(req)
		body := resp.Body
		if resp.Later != nil {
			body = resp.Later(ctx)
		}
		if body != nil {
			if _, err := nc.Write(appendResponse(nil, req.CorrelationID, body)); err != nil {
				return principal.Principal{}, err
			}
		}
		if resp.CloseAfter || resp.Close {
			return principal.Principal{}, fmt.Errorf("SASL authentication failed")
		}
	}
	return sess.Principal(), nil
}

func apiName(key int16) string {
	if n := kmsg.NameForKey(key); n != "" {
		return n
	}
	return fmt.Sprintf("api key %d", key)
}

// ConnInfoFor describes a connection authenticated as p, for handlers
// driven without a Server (tests, benchmarks).
func ConnInfoFor(id uint64, listener string, remote net.Addr, p principal.Principal) *ConnInfo {
	info := &ConnInfo{ID: id, Listener: listener, Remote: remote}
	info.setPrincipal(p)
	return info
}

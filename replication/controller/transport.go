package controller

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/kbroker/kbroker/protocol"
)

// The controller listener is one TCP port carrying two protocols. A Raft
// connection starts with raftMarker, written by the dialer; every other
// connection is Kafka, whose first byte is the top byte of a big-endian
// frame size: 'R' (0x52) would mean a frame of at least 1.37 GB, far above
// any request size limit. Kafka connections are handed on, the peeked byte
// included.
const raftMarker byte = 'R'

// A Raft dialer follows the marker with its quorum fingerprint, and the
// listener refuses a connection whose fingerprint is not its own. Without it
// a node of another cluster that still dials an address this node now holds
// (a port reused on one host, a host reused after decommissioning) would
// replicate its metadata log into this one; Kafka's controllers refuse such
// requests by cluster id (INCONSISTENT_CLUSTER_ID), but a joining node does
// not know the cluster id yet, while every node of a cluster is configured
// with the same controller.quorum.voters.
const fingerprintSize = 8

// quorumFingerprint identifies a cluster by its configured voter set: the
// same on every node of one cluster, whatever the order it was listed in.
func quorumFingerprint(voters []Voter) uint64 {
	ids := make([]string, len(voters))
	for i, v := range voters {
		ids[i] = fmt.Sprintf("%d@%s", v.ID, v.Addr)
	}
	slices.Sort(ids)
	h := fnv.New64a()
	for _, id := range ids {
		h.Write([]byte(id))
		h.Write([]byte{0})
	}
	return h.Sum64()
}

// peekTimeout bounds how long a new connection may stay silent before it is
// routed (Kafka clients and Raft dialers both speak first).
const peekTimeout = 10 * time.Second

// mux accepts on the controller listener and routes each connection.
// With TLS, the handshake comes first and the routing byte is the first
// one inside it. A Raft stream on a SASL listener authenticates after its
// fingerprint (SaslHandshake and SaslAuthenticate frames, as a Kafka
// client would) and must be allowed to (Security.AuthorizeCaller).
type mux struct {
	ln  net.Listener
	log *slog.Logger
	sec *Security
	// fingerprint is this quorum's; Raft connections must carry it.
	fingerprint uint64
	raft        *chanListener
	kafka       *chanListener

	done      chan struct{}
	closeOnce sync.Once
	wg        sync.WaitGroup // accept loop and routing goroutines
}

func newMux(ln net.Listener, log *slog.Logger, fingerprint uint64, sec *Security) *mux {
	m := &mux{ln: ln, log: log, fingerprint: fingerprint, sec: sec, done: make(chan struct{})}
	m.raft = newChanListener(ln.Addr(), m.done)
	m.kafka = newChanListener(ln.Addr(), m.done)
	m.wg.Add(1)
	go m.acceptLoop()
	return m
}

func (m *mux) acceptLoop() {
	defer m.wg.Done()
	backoff := 5 * time.Millisecond
	for {
		c, err := m.ln.Accept()
		if err != nil {
			select {
			case <-m.done:
				return
			default:
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				m.log.Warn("controller listener accept failed; retrying", "err", err)
				select {
				case <-time.After(backoff):
				case <-m.done:
					return
				}
				backoff = min(2*backoff, time.Second)
				continue
			}
			m.log.Error("controller listener stopped", "err", err)
			return
		}
		backoff = 5 * time.Millisecond
		m.wg.Add(1)
		go m.route(c)
	}
}

// route peeks at the first byte and hands c to Raft or Kafka.
func (m *mux) route(c net.Conn) {
	defer m.wg.Done()
	_ = c.SetDeadline(time.Now().Add(peekTimeout))
	var tc *tls.Conn
	if m.sec.TLS != nil {
		tc = tls.Server(c, m.sec.TLS)
		if err := tc.Handshake(); err != nil {
			m.authFailed(c, "SSL", "TLS handshake: "+err.Error())
			c.Close()
			return
		}
		c = tc
	}
	var first [1]byte
	if _, err := io.ReadFull(c, first[:]); err != nil {
		c.Close()
		return
	}
	if first[0] == raftMarker {
		m.routeRaft(c)
		return
	}
	_ = c.SetDeadline(time.Time{})
	if tc != nil {
		m.kafka.deliver(&tlsPrefixConn{prefixConn: prefixConn{Conn: c, prefix: first[:]}, state: tc.ConnectionState()})
		return
	}
	m.kafka.deliver(&prefixConn{Conn: c, prefix: first[:]})
}

func (m *mux) authFailed(c net.Conn, mechanism, reason string) {
	m.log.Info("authentication failed", "listener", ControllerListenerName, "remote", c.RemoteAddr().String(),
		"mechanism", mechanism, "reason", reason)
	if m.sec.OnAuthFailure != nil {
		m.sec.OnAuthFailure(protocol.AuthFailure{Conn: &protocol.ConnInfo{Listener: ControllerListenerName, Remote: c.RemoteAddr()},
			Mechanism: mechanism, Reason: reason})
	}
}

// routeRaft checks a Raft dialer's fingerprint (the read deadline of the
// peek still applies) and hands the connection to Raft.
func (m *mux) routeRaft(c net.Conn) {
	var fp [fingerprintSize]byte
	if _, err := io.ReadFull(c, fp[:]); err != nil {
		c.Close()
		return
	}
	if got := binary.BigEndian.Uint64(fp[:]); got != m.fingerprint {
		m.log.Warn("refused a Raft connection from another quorum: its controller.quorum.voters differ from ours (a node of another cluster, or a misconfigured one)",
			"remote", c.RemoteAddr().String(), "fingerprint", fmt.Sprintf("%016x", got), "ours", fmt.Sprintf("%016x", m.fingerprint))
		c.Close()
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), peekTimeout)
	defer cancel()
	p, err := protocol.ServeAuthentication(ctx, c, m.sec.Listener)
	if err != nil {
		m.authFailed(c, "raft", err.Error())
		c.Close()
		return
	}
	if m.sec.AuthorizeCaller != nil && !m.sec.AuthorizeCaller(p, c.RemoteAddr(), RaftStreamKey) {
		m.log.Warn("refused a Raft connection: its principal may not act for the cluster (CLUSTER_ACTION)",
			"remote", c.RemoteAddr().String(), "principal", p.String())
		c.Close()
		return
	}
	_ = c.SetDeadline(time.Time{})
	m.raft.deliver(c)
}

func (m *mux) close() {
	m.closeOnce.Do(func() {
		close(m.done)
		m.ln.Close()
	})
	m.wg.Wait()
}

// chanListener is a net.Listener fed by the mux.
type chanListener struct {
	addr      net.Addr
	ch        chan net.Conn
	muxDone   <-chan struct{}
	closed    chan struct{}
	closeOnce sync.Once
}

func newChanListener(addr net.Addr, muxDone <-chan struct{}) *chanListener {
	return &chanListener{addr: addr, ch: make(chan net.Conn), muxDone: muxDone, closed: make(chan struct{})}
}

func (l *chanListener) deliver(c net.Conn) {
	select {
	case l.ch <- c:
	case <-l.closed:
		c.Close()
	case <-l.muxDone:
		c.Close()
	}
}

func (l *chanListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.closed:
	case <-l.muxDone:
	}
	return nil, net.ErrClosed
}

func (l *chanListener) Close() error {
	l.closeOnce.Do(func() { close(l.closed) })
	return nil
}

func (l *chanListener) Addr() net.Addr { return l.addr }

// prefixConn replays bytes already read from Conn.
type prefixConn struct {
	net.Conn
	prefix []byte
}

// tlsPrefixConn is a prefixConn over TLS: protocol reads the TLS state
// (the client certificate's principal) through ConnectionState.
type tlsPrefixConn struct {
	prefixConn
	state tls.ConnectionState
}

func (c *tlsPrefixConn) ConnectionState() tls.ConnectionState { return c.state }

func (c *prefixConn) Read(p []byte) (int, error) {
	if len(c.prefix) > 0 {
		n := copy(p, c.prefix)
		c.prefix = c.prefix[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}

// streamLayer is the raft.StreamLayer over the mux: it accepts the marked
// connections and marks the ones it dials (after TLS, before SASL).
type streamLayer struct {
	*chanListener
	advertise   string
	fingerprint uint64 // sent after the marker
	client      protocol.ClientSecurity
}

var _ raft.StreamLayer = (*streamLayer)(nil)

func (s *streamLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	c, err := s.client.DialTLS(ctx, string(address), timeout)
	if err != nil {
		return nil, err
	}
	_ = c.SetWriteDeadline(time.Now().Add(timeout))
	var hello [1 + fingerprintSize]byte
	hello[0] = raftMarker
	binary.BigEndian.PutUint64(hello[1:], s.fingerprint)
	if _, err := c.Write(hello[:]); err != nil {
		c.Close()
		return nil, err
	}
	_ = c.SetWriteDeadline(time.Time{})
	if s.client.SASL != nil {
		if err := protocol.AuthenticateConn(ctx, c, string(address), s.client.SASL); err != nil {
			c.Close()
			return nil, err
		}
	}
	return c, nil
}

// Addr is the advertised address: what other nodes dial.
func (s *streamLayer) Addr() net.Addr { return advertisedAddr(s.advertise) }

type advertisedAddr string

func (a advertisedAddr) Network() string { return "tcp" }
func (a advertisedAddr) String() string  { return string(a) }

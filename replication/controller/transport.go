package controller

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// The controller listener is one TCP port carrying two protocols. A Raft
// connection starts with raftMarker, written by the dialer; every other
// connection is Kafka, whose first byte is the top byte of a big-endian
// frame size: 'R' (0x52) would mean a frame of at least 1.37 GB, far above
// any request size limit. Kafka connections are handed on, the peeked byte
// included.
const raftMarker byte = 'R'

// peekTimeout bounds how long a new connection may stay silent before it is
// routed (Kafka clients and Raft dialers both speak first).
const peekTimeout = 10 * time.Second

// mux accepts on the controller listener and routes each connection.
type mux struct {
	ln    net.Listener
	log   *slog.Logger
	raft  *chanListener
	kafka *chanListener

	done      chan struct{}
	closeOnce sync.Once
	wg        sync.WaitGroup // accept loop and routing goroutines
}

func newMux(ln net.Listener, log *slog.Logger) *mux {
	m := &mux{ln: ln, log: log, done: make(chan struct{})}
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
	var first [1]byte
	_ = c.SetReadDeadline(time.Now().Add(peekTimeout))
	if _, err := io.ReadFull(c, first[:]); err != nil {
		c.Close()
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	if first[0] == raftMarker {
		m.raft.deliver(c)
		return
	}
	m.kafka.deliver(&prefixConn{Conn: c, prefix: first[:]})
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

func (c *prefixConn) Read(p []byte) (int, error) {
	if len(c.prefix) > 0 {
		n := copy(p, c.prefix)
		c.prefix = c.prefix[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}

// streamLayer is the raft.StreamLayer over the mux: it accepts the marked
// connections and marks the ones it dials.
type streamLayer struct {
	*chanListener
	advertise string
}

var _ raft.StreamLayer = (*streamLayer)(nil)

func (s *streamLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	c, err := net.DialTimeout("tcp", string(address), timeout)
	if err != nil {
		return nil, err
	}
	_ = c.SetWriteDeadline(time.Now().Add(timeout))
	if _, err := c.Write([]byte{raftMarker}); err != nil {
		c.Close()
		return nil, err
	}
	_ = c.SetWriteDeadline(time.Time{})
	return c, nil
}

// Addr is the advertised address: what other nodes dial.
func (s *streamLayer) Addr() net.Addr { return advertisedAddr(s.advertise) }

type advertisedAddr string

func (a advertisedAddr) Network() string { return "tcp" }
func (a advertisedAddr) String() string  { return string(a) }

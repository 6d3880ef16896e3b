package protocol

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ServerOptions tune a Server. Zero values take the defaults noted.
type ServerOptions struct {
	// MaxRequestBytes is socket.request.max.bytes (default 100 MiB).
	MaxRequestBytes int32
	// MaxInflight bounds the responses queued per connection before the reader
	// stops reading (default 100). It is backpressure, not an error.
	MaxInflight int
	// IdleTimeout closes a connection with nothing in flight and no request for
	// this long (connections.max.idle.ms; default 10 minutes).
	IdleTimeout time.Duration
	// MaxConnections refuses connections above this many (default unlimited).
	MaxConnections int
	// Observe, if set, is called after each response is written (metrics);
	// resp is nil for requests that get no response.
	Observe func(req *Request, resp kmsg.Response, dur time.Duration)
	// Listeners secures each listener by name; a listener not listed is
	// PLAINTEXT (every connection is User:ANONYMOUS).
	Listeners map[string]ListenerSecurity
	// OnAuthFailure, if set, is called for each failed authentication (a
	// TLS handshake or a SASL exchange), for metrics. The failure is logged
	// by the server.
	OnAuthFailure func(f AuthFailure)
	// ThrottleConnection, if set, is asked about each connection accepted
	// by Serve: a positive answer holds it that long unserved, then closes
	// it (connection rate quotas, connthrottle.go).
	ThrottleConnection func(remote net.Addr) time.Duration
	// OnConnClose, if set, is called once a connection that was served
	// is closed and its last response written or dropped: state kept per
	// connection elsewhere (share sessions, KIP-932) goes with it.
	OnConnClose func(c *ConnInfo)
	Logger      *slog.Logger
}

func (o *ServerOptions) withDefaults() ServerOptions {
	out := *o
	if out.MaxRequestBytes <= 0 {
		out.MaxRequestBytes = 100 << 20
	}
	if out.MaxInflight <= 0 {
		out.MaxInflight = 100
	}
	if out.IdleTimeout <= 0 {
		out.IdleTimeout = 10 * time.Minute
	}
	if out.Logger == nil {
		out.Logger = slog.New(slog.DiscardHandler)
	}
	return out
}

// Server accepts connections on any number of listeners and serves each with
// the same Handler.
type Server struct {
	opts    ServerOptions
	handler Handler
	log     *slog.Logger

	ctx    context.Context // cancelled by Close; parent of every connection's ctx
	cancel context.CancelFunc
	wg     sync.WaitGroup // accept loops and connections

	nextConnID atomic.Uint64
	numConns   atomic.Int64
	frames     framePool // recycled request buffers (pool.go)

	mu        sync.Mutex // guards listeners and closed
	listeners []net.Listener
	closed    bool
}

// NewServer returns a server that hands requests to h.
func NewServer(h Handler, opts ServerOptions) *Server {
	o := opts.withDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	return &Server{opts: o, handler: h, log: o.Logger, ctx: ctx, cancel: cancel}
}

// ErrServerClosed is returned by Serve after Close.
var ErrServerClosed = errors.New("protocol: server closed")

// Serve accepts connections on l until l fails or the server is closed. The
// server owns l from then on and closes it on Close.
func (s *Server) Serve(l net.Listener, listenerName string) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		l.Close()
		return ErrServerClosed
	}
	s.listeners = append(s.listeners, l)
	s.wg.Add(1)
	s.mu.Unlock()
	defer s.wg.Done()

	backoff := 5 * time.Millisecond
	for {
		nc, err := l.Accept()
		if err != nil {
			if s.ctx.Err() != nil {
				return ErrServerClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, syscallEMFILE) {
				// Out of file descriptors or a transient failure: keep serving
				// the connections we have and retry later.
				s.log.Warn("accept failed; retrying", "listener", listenerName, "err", err, "backoff", backoff)
				select {
				case <-time.After(backoff):
				case <-s.ctx.Done():
					return ErrServerClosed
				}
				backoff = min(backoff*2, time.Second)
				continue
			}
			return err
		}
		backoff = 5 * time.Millisecond
		if !s.admit(nc, listenerName) {
			continue
		}
		if d := s.connectionThrottle(nc); d > 0 {
			s.throttleConn(nc, listenerName, d)
			continue
		}
		go func() {
			defer s.wg.Done()
			defer s.numConns.Add(-1)
			s.serveConn(nc, listenerName)
		}()
	}
}

// ServeConn serves one already-accepted connection until it closes. It is
// used for connections that arrive through another listener (the controller
// port multiplexes Raft and Kafka traffic).
func (s *Server) ServeConn(nc net.Conn, listenerName string) {
	if !s.admit(nc, listenerName) {
		return
	}
	defer s.wg.Done()
	defer s.numConns.Add(-1)
	s.serveConn(nc, listenerName)
}

// admit counts nc as a live connection, or closes it when the server is
// closed or full. On true the caller must call wg.Done and numConns.Add(-1).
func (s *Server) admit(nc net.Conn, listenerName string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		nc.Close()
		return false
	}
	if s.opts.MaxConnections > 0 && s.numConns.Load() >= int64(s.opts.MaxConnections) {
		s.log.Warn("refusing connection: max.connections reached", "listener", listenerName,
			"remote", nc.RemoteAddr(), "max", s.opts.MaxConnections)
		nc.Close()
		return false
	}
	s.numConns.Add(1)
	s.wg.Add(1)
	return true
}

// NumConns returns the number of open connections.
func (s *Server) NumConns() int { return int(s.numConns.Load()) }

// Close stops accepting, closes every connection and waits for their
// goroutines to finish.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.cancel() // before closing listeners, so accept loops see a closed server
	for _, l := range s.listeners {
		l.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return nil
}

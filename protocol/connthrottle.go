package protocol

import (
	"net"
	"time"
)

// Connection rate quotas (KIP-612). A new connection over its address's
// connection_creation_rate is accepted but never served: it is held for
// the throttle time, then closed, as Kafka's Acceptor does with its
// throttled sockets, so that a client reconnecting in a loop is slowed
// down rather than refused at once.

// throttleConn holds a just-admitted connection for d, then closes it and
// releases what admit counted. Server.Close closes held connections at
// once.
func (s *Server) throttleConn(nc net.Conn, listenerName string, d time.Duration) {
	s.log.Debug("connection rate quota: closing the connection after the throttle time", "listener", listenerName,
		"remote", nc.RemoteAddr().String(), "throttle", d)
	go func() {
		defer s.wg.Done()
		defer nc.Close()
		defer s.numConns.Add(-1) // before the close the client sees
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-s.ctx.Done():
		}
	}()
}

// connectionThrottle asks ServerOptions.ThrottleConnection about a new
// connection: how long to hold it unserved, 0 to serve it.
func (s *Server) connectionThrottle(nc net.Conn) time.Duration {
	if s.opts.ThrottleConnection == nil {
		return 0
	}
	return s.opts.ThrottleConnection(nc.RemoteAddr())
}

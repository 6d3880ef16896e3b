package protocol

import (
	"context"
	"crypto/tls"
	"net"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/security/principal"
	"github.com/kbroker/kbroker/security/session"
)

// Header is a decoded request header.
type Header struct {
	Key           int16
	Version       int16
	CorrelationID int32
	ClientID      *string
}

// ConnInfo describes the connection a request arrived on.
type ConnInfo struct {
	ID       uint64   // unique per server, for logs
	Listener string   // listener name, e.g. PLAINTEXT or CONTROLLER
	Remote   net.Addr // peer address
	// TLS is the connection's TLS state; nil on a plaintext connection.
	TLS *tls.ConnectionState
	// Session is the connection's authentication (security/session). It
	// is driven by the reader goroutine only: SaslHandshake and
	// SaslAuthenticate handlers use it through HandleSASL; everything else
	// reads Principal.
	Session *session.Session

	principal  atomic.Pointer[principal.Principal] // see Principal
	mutedUntil atomic.Int64                        // unix ns; see Throttle (mute.go)
	security   *ListenerSecurity                   // the listener's; nil in tests
	server     *Server                             // for OnAuthFailure; nil in tests
}

// Request is one decoded request.
type Request struct {
	Header
	// Body is the decoded request. For an ApiVersions request at a version this
	// build cannot decode, Body is an empty ApiVersionsRequest carrying the
	// requested version so the handler can answer with the v0 fallback.
	Body kmsg.Request
	Conn *ConnInfo
	// Size is the frame size in bytes, header included.
	Size int
}

// ClientIDString returns the client id, or "" when null.
func (r *Request) ClientIDString() string {
	if r.ClientID == nil {
		return ""
	}
	return *r.ClientID
}

// Response is what a Handler returns for one request. Exactly one of Body,
// Later, NoReply or Close is meaningful.
type Response struct {
	// Body is an immediate answer.
	Body kmsg.Response
	// Later is a deferred answer: it runs on the connection's writer goroutine
	// when every earlier response has been written, and blocks until the answer
	// is ready. It must return promptly once ctx is done (the connection closed).
	Later func(ctx context.Context) kmsg.Response
	// NoReply means the request gets no response (produce with acks=0).
	NoReply bool
	// Close closes the connection once every earlier response has been written.
	Close bool
	// CloseAfter closes the connection once this response (Body or Later)
	// has been written: a failed authentication's answer.
	CloseAfter bool
	// Done, if set, runs once the response has been written or dropped (the
	// connection closed first). Handlers release what the body borrows, such
	// as mapped log segments, here.
	Done func()
}

// Handler serves decoded requests. Handle runs on the connection's reader
// goroutine: requests of one connection are handled one at a time, in order.
// The bytes of Produce and Fetch requests are recycled as soon as Handle
// returns: their handlers must not keep slices of the request (a Later
// closure may keep the decoded request, not its byte fields).
type Handler interface {
	Handle(ctx context.Context, req *Request) Response
	// ErrorResponse answers req with code in every error field its response
	// has. It returns nil when the API's response cannot carry an error; the
	// connection is then closed.
	ErrorResponse(req *Request, code int16) kmsg.Response
}

// VectorResponse is a response that encodes itself as a sequence of
// pieces, some of them borrowed (slices of mapped log segments, with the
// segment file when it is open), so that the connection writes them with
// writev or sendfile instead of copying them into its buffer.
// AppendVectors appends the encoded body (everything after the response
// header) to vs, putting small fields in scratch.
type VectorResponse interface {
	kmsg.Response
	AppendVectors(vs []Vector, scratch []byte) []Vector
}

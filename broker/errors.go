package broker

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/protocol"
)

// errorResponse answers req with code on every topic and partition it names
// (protocol.ErrorResponse), for a request that failed as a whole: an
// unsupported version, or a handler that panicked. It returns nil when the
// response has no place for the error; the connection is closed then.
func errorResponse(req *protocol.Request, code int16) kmsg.Response {
	return protocol.ErrorResponse(req.Body, code)
}

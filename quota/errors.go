package quota

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Error is a Kafka error code with its message, as one entity's or one
// request's answer carries it.
type Error struct {
	Code    int16
	Message string
}

func (e *Error) Error() string { return e.Message }

func invalid(format string, args ...any) *Error {
	return &Error{Code: kerr.InvalidRequest.Code, Message: fmt.Sprintf(format, args...)}
}

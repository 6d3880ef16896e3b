// Package coordkit holds what the share-group coordinators (broker/share,
// broker/sharestate, broker/sharepartition) share besides record bytes:
// the injected clock with its defaults, and how a failed append to an
// internal topic maps to the error code a client gets.
package coordkit

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Clock is the injected time of a component: Now (time.Now) and AfterFunc,
// which schedules f after d and returns a function that cancels it
// (time.AfterFunc). Tests replace both (internal/faketime). f may run on
// any goroutine; AfterFunc must not call it itself.
type Clock struct {
	Now       func() time.Time
	AfterFunc func(d time.Duration, f func()) (stop func() bool)
}

// OrDefault fills the unset functions with the real clock.
func (c Clock) OrDefault() Clock {
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.AfterFunc == nil {
		c.AfterFunc = func(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }
	}
	return c
}

// NowMs is Now in Unix milliseconds.
func (c Clock) NowMs() int64 { return c.Now().UnixMilli() }

// LoggerOrDiscard returns l, or a logger that drops everything.
func LoggerOrDiscard(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l
}

// appendCodes maps the error of a failed append to what the client gets,
// as Kafka's coordinator services' handleOperationException do: a partition
// that is unavailable for now means COORDINATOR_NOT_AVAILABLE, one this
// broker lost means NOT_COORDINATOR (the client looks the coordinator up
// again), a batch the log refuses is the server's fault.
var appendCodes = map[int16]int16{
	kerr.UnknownTopicOrPartition.Code:      kerr.CoordinatorNotAvailable.Code,
	kerr.NotEnoughReplicas.Code:            kerr.CoordinatorNotAvailable.Code,
	kerr.NotEnoughReplicasAfterAppend.Code: kerr.CoordinatorNotAvailable.Code,
	kerr.RequestTimedOut.Code:              kerr.CoordinatorNotAvailable.Code,
	kerr.NotLeaderForPartition.Code:        kerr.NotCoordinator.Code,
	kerr.KafkaStorageError.Code:            kerr.NotCoordinator.Code,
	kerr.FencedLeaderEpoch.Code:            kerr.NotCoordinator.Code,
	kerr.NotCoordinator.Code:               kerr.NotCoordinator.Code,
	kerr.MessageTooLarge.Code:              kerr.UnknownServerError.Code,
	kerr.RecordListTooLarge.Code:           kerr.UnknownServerError.Code,
	kerr.InvalidFetchSize.Code:             kerr.UnknownServerError.Code,
}

// AppendErrorCode maps a failed append: resigned (the partition was given
// up meanwhile) or a cancelled context is NOT_COORDINATOR, an error without
// a Kafka code (a timeout, I/O) COORDINATOR_NOT_AVAILABLE.
func AppendErrorCode(err error, resigned bool) int16 {
	if resigned || errors.Is(err, context.Canceled) {
		return kerr.NotCoordinator.Code
	}
	var ke *kerr.Error
	if !errors.As(err, &ke) {
		return kerr.CoordinatorNotAvailable.Code
	}
	if c, ok := appendCodes[ke.Code]; ok {
		return c
	}
	return ke.Code
}

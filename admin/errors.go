package admin

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// UnreachableError is a cluster none of whose seed brokers answers.
type UnreachableError struct {
	Brokers []string
	Err     error // the last dial error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("cannot reach any broker of %s: %v", strings.Join(e.Brokers, ","), e.Err)
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// KafkaError is a Kafka error code answered about one subject (a topic, a
// group, a partition): the code's name and meaning, the broker's own
// message, and which broker answered.
type KafkaError struct {
	Subject string // `topic "orders"`; may be empty
	Err     *kerr.Error
	Message string // the broker's error message, if it sent one
	Broker  string // "broker 2 (127.0.0.1:9093)", if known
}

func (e *KafkaError) Error() string {
	var b strings.Builder
	if e.Subject != "" {
		b.WriteString(e.Subject + ": ")
	}
	fmt.Fprintf(&b, "%s (Kafka error %d: %s)", e.Err.Message, e.Err.Code, strings.TrimSuffix(e.Err.Description, "."))
	if e.Broker != "" {
		b.WriteString(" from " + e.Broker)
	}
	if e.Message != "" && e.Message != e.Err.Message {
		b.WriteString(": " + e.Message)
	}
	return b.String()
}

func (e *KafkaError) Unwrap() error { return e.Err }

// NotFoundError is a topic or group that does not exist.
type NotFoundError struct{ What, Name string }

func (e *NotFoundError) Error() string { return fmt.Sprintf("%s %q does not exist", e.What, e.Name) }

// brokerName is how errors name a broker: "broker 2 (127.0.0.1:9093)".
func brokerName(m kgo.BrokerMetadata) string {
	if m.NodeID < 0 || m.Host == "" {
		if m.NodeID >= 0 {
			return fmt.Sprintf("broker %d", m.NodeID)
		}
		return ""
	}
	return fmt.Sprintf("broker %d (%s)", m.NodeID, net.JoinHostPort(m.Host, strconv.Itoa(int(m.Port))))
}

// codeErr turns a per-subject error of a response into a KafkaError naming
// the broker that last answered requests of key. Other errors are wrapped
// with the subject.
func (c *Client) codeErr(subject string, err error, msg *string, key int16) error {
	if err == nil {
		return nil
	}
	var ke *kerr.Error
	if !errors.As(err, &ke) {
		return fmt.Errorf("%s: %w", subject, err)
	}
	out := &KafkaError{Subject: subject, Err: ke}
	if msg != nil {
		out.Message = *msg
	}
	if m, ok := c.seen.last(key); ok {
		out.Broker = brokerName(m)
	}
	return out
}

// Explain rewrites an error of a request made under ctx for an operator:
// the cluster being unreachable, each failed broker of a sharded request
// with its Kafka error, a deadline with the last dial failure.
func (c *Client) Explain(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	var unreachable *UnreachableError
	if errors.As(context.Cause(ctx), &unreachable) {
		return unreachable
	}
	switch {
	case errors.As(err, &unreachable), errors.As(err, new(*KafkaError)), errors.As(err, new(*NotFoundError)):
		return err
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(context.Cause(ctx), context.DeadlineExceeded):
		return c.deadlineErr()
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) && opErr.Op == "dial" {
		if !c.dials.everConnected() {
			return &UnreachableError{Brokers: c.cfg.Brokers, Err: opErr}
		}
		return fmt.Errorf("cannot reach broker %s: %w", opErr.Addr, opErr.Err)
	}
	var shards *kadm.ShardErrors
	if errors.As(err, &shards) {
		return c.shardErr(shards)
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return &KafkaError{Err: ke}
	}
	return err
}

func (c *Client) deadlineErr() error {
	msg := fmt.Sprintf("no answer from the cluster within %v (request.timeout.ms)", c.cfg.RequestTimeout)
	if host, err := c.dials.lastDialError(); err != nil {
		msg += fmt.Sprintf("; last failure reaching %s: %v", host, err)
	}
	return errors.New(msg)
}

// shardErr names every broker a sharded request failed on; errors.Is
// and errors.As see each broker's error.
func (c *Client) shardErr(se *kadm.ShardErrors) error {
	var parts []string
	causes := make([]error, 0, len(se.Errs))
	for _, s := range se.Errs {
		causes = append(causes, s.Err)
		var ke *kerr.Error
		what := s.Err.Error()
		if errors.As(s.Err, &ke) {
			what = (&KafkaError{Err: ke}).Error()
		}
		if name := brokerName(s.Broker); name != "" {
			what = name + ": " + what
		}
		parts = append(parts, what)
	}
	return &shardsError{msg: fmt.Sprintf("%s failed: %s", strings.ToLower(se.Name), strings.Join(dedupe(parts), "; ")), causes: causes}
}

// shardsError is a sharded request's failures, each broker's its cause.
type shardsError struct {
	msg    string
	causes []error
}

func (e *shardsError) Error() string   { return e.msg }
func (e *shardsError) Unwrap() []error { return e.causes }

func dedupe(ss []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range ss {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

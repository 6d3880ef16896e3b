package broker

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// viewSignal wakes waiters each time a new metadata view is applied.
type viewSignal struct {
	mu sync.Mutex    // guards ch
	ch chan struct{} // closed and replaced on each applied view
}

func (s *viewSignal) wait() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch == nil {
		s.ch = make(chan struct{})
	}
	return s.ch
}

func (s *viewSignal) broadcast() {
	s.mu.Lock()
	if s.ch != nil {
		close(s.ch)
	}
	s.ch = make(chan struct{})
	s.mu.Unlock()
}

// waitForView waits until cond holds for the applied view or ctx ends.
func (b *Broker) waitForView(ctx context.Context, cond func(*metadataView) bool) bool {
	for {
		ch := b.viewChanged.wait()
		if cond(b.view()) {
			return true
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return false
		}
	}
}

// validTopicName applies Kafka's rules: 1-249 characters of [a-zA-Z0-9._-],
// not "." or "..".
func validTopicName(name string) error {
	if name == "" || name == "." || name == ".." {
		return fmt.Errorf("topic name %q is illegal", name)
	}
	if len(name) > 249 {
		return fmt.Errorf("topic name is longer than 249 characters")
	}
	for _, c := range name {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
		if !ok {
			return fmt.Errorf("topic name %q contains %q: only ASCII alphanumerics, '.', '_' and '-' are allowed", name, c)
		}
	}
	return nil
}

// autoCreateTopics creates topics with the broker defaults (Metadata's auto
// creation) and returns the error code to answer per name: LEADER_NOT_AVAILABLE
// when created (the client asks again), or the creation error.
func (b *Broker) autoCreateTopics(ctx context.Context, names []string) map[string]int16 {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.SetVersion(7)
	req.TimeoutMillis = 30000
	for _, name := range names {
		t := kmsg.NewCreateTopicsRequestTopic()
		t.Topic, t.NumPartitions, t.ReplicationFactor = name, -1, -1
		req.Topics = append(req.Topics, t)
	}
	out := make(map[string]int16, len(names))
	resp, err := b.ctrl.Forward(ctx, req)
	if err != nil {
		b.logger.Warn("auto-creating topics failed", "topics", names, "err", err)
		for _, name := range names {
			out[name] = kerr.LeaderNotAvailable.Code
		}
		return out
	}
	for _, t := range resp.(*kmsg.CreateTopicsResponse).Topics {
		switch err := kerr.ErrorForCode(t.ErrorCode); {
		case err == nil:
			b.logger.Info("auto-created topic", "topic", t.Topic, "partitions", t.NumPartitions)
			out[t.Topic] = kerr.LeaderNotAvailable.Code
		case errors.Is(err, kerr.TopicAlreadyExists):
			out[t.Topic] = kerr.LeaderNotAvailable.Code
		default:
			out[t.Topic] = t.ErrorCode
		}
	}
	// Give the new topics a moment to be applied here, so that the client's
	// next Metadata finds them led.
	wctx, cancel := context.WithTimeout(ctx, 2*1e9)
	defer cancel()
	b.waitForView(wctx, func(v *metadataView) bool {
		for _, name := range names {
			if _, ok := v.img.Topics[name]; !ok && out[name] == kerr.LeaderNotAvailable.Code {
				return false
			}
		}
		return true
	})
	return out
}

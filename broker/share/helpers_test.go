package share

import (
	"context"
	"iter"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/broker/shareconfig"
	"github.com/kbroker/kbroker/broker/sharestate"
	"github.com/kbroker/kbroker/internal/coordkit"
	"github.com/kbroker/kbroker/internal/faketime"
	"github.com/kbroker/kbroker/internal/sharetest"
)

// offsetsLog is a __consumer_offsets partition in memory (group.Store).
type offsetsLog struct{ sharetest.MemLog }

func (l *offsetsLog) Append(ctx context.Context, records []Record) error {
	_, err := l.MemLog.Append(ctx, records)
	return err
}

func (l *offsetsLog) all() iter.Seq2[Record, error] {
	recs := l.Records()
	return func(yield func(Record, error) bool) {
		for _, r := range recs {
			if !yield(r.Record, nil) {
				return
			}
		}
	}
}

// stateStore is the share coordinator over an in-memory __share_group_state.
type stateStore struct{ c *sharestate.Coordinator }

func (s stateStore) InitializeShareGroupState(ctx context.Context, req *kmsg.InitializeShareGroupStateRequest) (*kmsg.InitializeShareGroupStateResponse, error) {
	return s.c.InitializeShareGroupState(ctx, req), nil
}
func (s stateStore) ReadShareGroupStateSummary(ctx context.Context, req *kmsg.ReadShareGroupStateSummaryRequest) (*kmsg.ReadShareGroupStateSummaryResponse, error) {
	return s.c.ReadShareGroupStateSummary(ctx, req), nil
}
func (s stateStore) DeleteShareGroupState(ctx context.Context, req *kmsg.DeleteShareGroupStateRequest) (*kmsg.DeleteShareGroupStateResponse, error) {
	return s.c.DeleteShareGroupState(ctx, req), nil
}

type topicMeta struct {
	id         [16]byte
	partitions int32
}

// env is a broker leading __consumer_offsets-0 and __share_group_state-0.
type env struct {
	t      *testing.T
	clock  *faketime.Clock
	log    *offsetsLog
	state  *sharestate.Coordinator
	c      *Coordinator
	opts   Options
	mu     sync.Mutex
	topics map[string]topicMeta
	other  map[string]string
	left   []string
}

var (
	idFoo = [16]byte{0xf}
	idBar = [16]byte{0xb}
)

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{t: t, clock: faketime.New(time.Unix(1_700_000_000, 0)), log: &offsetsLog{},
		topics: map[string]topicMeta{"foo": {idFoo, 3}, "bar": {idBar, 2}}, other: map[string]string{}}
	clock := coordkit.Clock{Now: e.clock.Now, AfterFunc: e.clock.AfterFunc}
	ml := &sharetest.MemLog{}
	e.state = sharestate.NewCoordinator(sharestate.Options{NumPartitions: 1, Clock: coordkit.Clock{Now: e.clock.Now, AfterFunc: func(time.Duration, func()) func() bool { return func() bool { return true } }}})
	if err := e.state.BecomeLeader(0, ml, func(func(sharestate.LoggedRecord, error) bool) {}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.state.Close)
	e.opts = Options{
		NumPartitions: 1,
		Config:        func(string) shareconfig.Config { return shareconfig.DefaultBounds().Defaults() },
		TopicByName: func(n string) ([16]byte, int32, bool) {
			e.mu.Lock()
			defer e.mu.Unlock()
			m, ok := e.topics[n]
			return m.id, m.partitions, ok
		},
		TopicByID: func(id [16]byte) (string, int32, bool) {
			e.mu.Lock()
			defer e.mu.Unlock()
			for n, m := range e.topics {
				if m.id == id {
					return n, m.partitions, true
				}
			}
			return "", 0, false
		},
		OtherGroupType: func(g string) string { e.mu.Lock(); defer e.mu.Unlock(); return e.other[g] },
		State:          stateStore{e.state},
		LatestOffset:   func(context.Context, string, int32) (int64, bool) { return 100, true },
		MemberLeft:     func(g, m string) { e.mu.Lock(); e.left = append(e.left, m); e.mu.Unlock() },
		Clock:          clock,
	}
	e.start()
	return e
}

func (e *env) start() {
	e.c = NewCoordinator(e.opts)
	if err := e.c.BecomeLeader(0, e.log, e.log.all()); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(e.c.Close)
}

// failover: a new coordinator loads the partition.
func (e *env) failover() {
	e.c.Close()
	e.start()
}

var client = Client{ID: "cid", Host: "/127.0.0.1"}

func (e *env) heartbeat(group, member string, epoch int32, topics ...string) *kmsg.ShareGroupHeartbeatResponse {
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.Version = 1
	req.GroupID, req.MemberID, req.MemberEpoch = group, member, epoch
	if topics != nil {
		req.SubscribedTopicNames = topics
	}
	return e.c.ShareGroupHeartbeat(context.Background(), client, req)
}

// waitInitialized waits until the group's share state of topic is
// initialized (the initialization runs on its own goroutine).
func (e *env) waitInitialized(group string, id [16]byte, partitions int) {
	e.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		done := false
		e.c.withGroup(context.Background(), group, false, func(g *shareGroup) {
			done = g != nil && len(g.state.initialized[id].partitions) == partitions && len(g.state.initializing) == 0
		})
		if done {
			return
		}
		time.Sleep(time.Millisecond) // polling a condition with a deadline
	}
	e.t.Fatalf("group %s never initialized %x", group, id)
}

func assigned(r *kmsg.ShareGroupHeartbeatResponse) assignment {
	if r.Assignment == nil {
		return nil
	}
	a := assignment{}
	for _, t := range r.Assignment.TopicPartitions {
		a[t.TopicID] = t.Partitions
	}
	return a
}

package sharepartition

import (
	"context"
	"iter"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/broker/shareconfig"
	"github.com/kbroker/kbroker/broker/sharestate"
	"github.com/kbroker/kbroker/internal/coordkit"
	"github.com/kbroker/kbroker/internal/faketime"
	"github.com/kbroker/kbroker/internal/sharetest"
)

// fakeLog is a topic-partition's offsets, set by the test.
type fakeLog struct {
	mu                  sync.Mutex
	logStart, hw, lso   int64
	lsoSet              bool
	offsetForTimestamps map[int64]int64 // ts -> offset; the first key >= ts wins
}

func (l *fakeLog) LogStartOffset() int64 { l.mu.Lock(); defer l.mu.Unlock(); return l.logStart }
func (l *fakeLog) HighWatermark() int64  { l.mu.Lock(); defer l.mu.Unlock(); return l.hw }
func (l *fakeLog) LastStableOffset() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lsoSet {
		return l.lso
	}
	return l.hw
}
func (l *fakeLog) OffsetForTimestamp(ts int64) (int64, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	best, found := int64(0), false
	bestTs := int64(1 << 62)
	for t, off := range l.offsetForTimestamps {
		if t >= ts && t < bestTs {
			best, bestTs, found = off, t, true
		}
	}
	return best, found
}

func (l *fakeLog) setHW(hw int64) { l.mu.Lock(); l.hw = hw; l.mu.Unlock() }

// store is the share coordinator over an in-memory __share_group_state,
// with a switch that makes writes answer an error code.
type store struct {
	c         *sharestate.Coordinator
	log       *sharetest.MemLog
	failWrite atomic.Int32 // a code the next write answers
	writes    atomic.Int32
}

func (s *store) ReadShareGroupState(ctx context.Context, req *kmsg.ReadShareGroupStateRequest) (*kmsg.ReadShareGroupStateResponse, error) {
	return s.c.ReadShareGroupState(ctx, req), nil
}

func (s *store) WriteShareGroupState(ctx context.Context, req *kmsg.WriteShareGroupStateRequest) (*kmsg.WriteShareGroupStateResponse, error) {
	s.writes.Add(1)
	if code := int16(s.failWrite.Swap(0)); code != 0 {
		resp := req.ResponseKind().(*kmsg.WriteShareGroupStateResponse)
		resp.Topics = []kmsg.WriteShareGroupStateResponseTopic{{TopicID: req.Topics[0].TopicID,
			Partitions: []kmsg.WriteShareGroupStateResponseTopicPartition{{Partition: req.Topics[0].Partitions[0].Partition, ErrorCode: code}}}}
		return resp, nil
	}
	return s.c.WriteShareGroupState(ctx, req), nil
}

func records(l *sharetest.MemLog) iter.Seq2[sharestate.LoggedRecord, error] {
	recs := l.Records()
	return func(yield func(sharestate.LoggedRecord, error) bool) {
		for _, r := range recs {
			if !yield(sharestate.LoggedRecord{Offset: r.Offset, Record: r.Record}, nil) {
				return
			}
		}
	}
}

// env is one broker's share-partitions of group "g" on topic T-0 with a
// share coordinator, a log and a manual clock.
type env struct {
	t         *testing.T
	clock     *faketime.Clock
	log       *fakeLog
	store     *store
	cfg       shareconfig.Config
	m         *Manager
	available atomic.Int32
	epoch     int32
}

var (
	topic = [16]byte{0x7}
	key   = Key{Group: "g", TopicID: topic, Topic: "T", Partition: 0}
)

func newEnv(t *testing.T, tweak func(*shareconfig.Config)) *env {
	t.Helper()
	clock := faketime.New(time.Unix(1_700_000_000, 0))
	cfg := shareconfig.DefaultBounds().Defaults()
	cfg.AutoOffsetReset = shareconfig.Reset{Strategy: shareconfig.Earliest}
	cfg.PartitionMaxRecordLocks = 100
	if tweak != nil {
		tweak(&cfg)
	}
	e := &env{t: t, clock: clock, log: &fakeLog{hw: 10}, cfg: cfg, epoch: 1}
	ml := &sharetest.MemLog{}
	sc := sharestate.NewCoordinator(sharestate.Options{NumPartitions: 1, Clock: coordkit.Clock{Now: clock.Now, AfterFunc: func(time.Duration, func()) func() bool { return func() bool { return true } }}})
	if err := sc.BecomeLeader(0, ml, records(ml)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sc.Close)
	initializeState(t, sc, key)
	e.store = &store{c: sc, log: ml}
	e.m = e.newManager()
	return e
}

// initializeState is what the group coordinator does before it assigns a
// share-partition (InitializeShareGroupState, start offset -1): the share
// coordinator refuses to read or write a share-partition without it.
func initializeState(t *testing.T, sc *sharestate.Coordinator, k Key) {
	t.Helper()
	req := kmsg.NewPtrInitializeShareGroupStateRequest()
	req.GroupID = k.Group
	req.Topics = []kmsg.InitializeShareGroupStateRequestTopic{{TopicID: k.TopicID,
		Partitions: []kmsg.InitializeShareGroupStateRequestTopicPartition{{Partition: k.Partition, StateEpoch: 0, StartOffset: -1}}}}
	resp := sc.InitializeShareGroupState(context.Background(), req)
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("initializing the share state of %v: code %d", k, code)
	}
}

func (e *env) newManager() *Manager {
	m := NewManager(Options{
		Store:       e.store,
		Config:      func(string) shareconfig.Config { return e.cfg },
		OnAvailable: func(Key) { e.available.Add(1) },
		Clock:       coordkit.Clock{Now: e.clock.Now, AfterFunc: e.clock.AfterFunc},
	})
	e.t.Cleanup(m.Close)
	return m
}

// part returns the share-partition at the env's leader epoch.
func (e *env) part() *Partition {
	e.t.Helper()
	p, code := e.m.Partition(context.Background(), key, e.epoch, e.log)
	if code != 0 {
		e.t.Fatalf("Partition: code %d", code)
	}
	return p
}

// failover is a new leader (next leader epoch, new broker).
func (e *env) failover() *Partition {
	e.t.Helper()
	e.epoch++
	e.m = e.newManager()
	return e.part()
}

// batches describes the log from..to-1 as batches of size records.
func batches(from, to, size int64) []Batch {
	var out []Batch
	for b := from; b < to; b += size {
		out = append(out, Batch{BaseOffset: b, LastOffset: min(b+size, to) - 1})
	}
	return out
}

func (e *env) acquire(p *Partition, member string, max int32) []AcquiredRange {
	e.t.Helper()
	next := p.NextFetchOffset()
	got, code := p.Acquire(AcquireRequest{Member: member, MaxRecords: max, Mode: RecordLimit, Batches: batches(next, e.log.HighWatermark(), 1)})
	if code != 0 {
		e.t.Fatalf("Acquire: code %d", code)
	}
	return got
}

func ack(first, last int64, types ...AckType) AckBatch {
	return AckBatch{FirstOffset: first, LastOffset: last, Types: types}
}

func (e *env) ack(p *Partition, member string, bs ...AckBatch) int16 {
	return p.Acknowledge(context.Background(), member, bs, true)
}

func rng(first, last int64, count int16) AcquiredRange {
	return AcquiredRange{FirstOffset: first, LastOffset: last, DeliveryCount: count}
}

// states returns the window's records as "state/count" runs, for messages.
func states(p *Partition) []recordSnapshot {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]recordSnapshot, p.w.size())
	for i := range p.w.size() {
		out[i] = p.w.rec(i).snapshot()
	}
	return out
}

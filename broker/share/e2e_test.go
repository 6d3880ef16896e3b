package share

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/broker/shareconfig"
	"github.com/kbroker/kbroker/broker/sharepartition"
	"github.com/kbroker/kbroker/broker/sharestate"
	"github.com/kbroker/kbroker/internal/coordkit"
	"github.com/kbroker/kbroker/internal/sharetest"
)

// The three packages together, as issue 16's acceptance describes: three
// share consumers on one partition; one is killed with records acquired,
// which the others get after the lock duration; then the partition leader
// and the share coordinator fail over. Every record is accepted exactly
// once and only records not accepted before a fault are delivered again.
func TestQueueEndToEnd(t *testing.T) {
	e := newEnv(t)
	cfg := shareconfig.DefaultBounds().Defaults()
	cfg.AutoOffsetReset = shareconfig.Reset{Strategy: shareconfig.Earliest}
	e.c.opts.Config = func(string) shareconfig.Config { return cfg }

	// The share coordinator over its own log, so that it can fail over.
	stateLog := &sharetest.MemLog{}
	clock := coordkit.Clock{Now: e.clock.Now, AfterFunc: func(time.Duration, func()) func() bool { return func() bool { return true } }}
	newState := func() *sharestate.Coordinator {
		sc := sharestate.NewCoordinator(sharestate.Options{NumPartitions: 1, Clock: clock})
		recs := stateLog.Records()
		if err := sc.BecomeLeader(0, stateLog, func(yield func(sharestate.LoggedRecord, error) bool) {
			for _, r := range recs {
				if !yield(sharestate.LoggedRecord{Offset: r.Offset, Record: r.Record}, nil) {
					return
				}
			}
		}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(sc.Close)
		return sc
	}
	var stateMu sync.Mutex
	state := newState()
	store := &switchableStore{get: func() *sharestate.Coordinator { stateMu.Lock(); defer stateMu.Unlock(); return state }}
	e.c.opts.State = store

	log := &e2eLog{hw: 30}
	leaderEpoch := int32(1)
	newManager := func() *sharepartition.Manager {
		m := sharepartition.NewManager(sharepartition.Options{
			Store: store, Config: func(string) shareconfig.Config { return cfg },
			Clock: coordkit.Clock{Now: e.clock.Now, AfterFunc: e.clock.AfterFunc},
		})
		t.Cleanup(m.Close)
		return m
	}
	m := newManager()
	key := sharepartition.Key{Group: "q", TopicID: idFoo, Topic: "foo", Partition: 0}
	e.topics["foo"] = topicMeta{idFoo, 1}

	// Three consumers join and, once the share state is initialized, all
	// get the only partition. A heartbeat response carries the assignment
	// only on a join or when it changed (Kafka's shareGroupHeartbeat), so
	// each member keeps the last one it was sent, as a client does: a
	// member that joins after the initialization completed gets the
	// partition in its join response and never again.
	members := []string{"a", "b", "c"}
	epochs := map[string]int32{}
	held := map[string]assignment{}
	note := func(id string, r *kmsg.ShareGroupHeartbeatResponse) {
		if r.ErrorCode != 0 {
			t.Fatalf("%s heartbeat: %+v", id, r)
		}
		epochs[id] = r.MemberEpoch
		if r.Assignment != nil {
			held[id] = assigned(r)
		}
	}
	for _, id := range members {
		note(id, e.heartbeat("q", id, 0, "foo"))
	}
	e.waitInitialized("q", idFoo, 1)
	for _, id := range members {
		note(id, e.heartbeat("q", id, epochs[id]))
	}
	for _, id := range members {
		if len(held[id][idFoo]) != 1 {
			t.Fatalf("%s not assigned: holds %v at epoch %d", id, held[id], epochs[id])
		}
	}

	accepted := map[int64]int{}
	deliveries := map[int64]int16{}
	consume := func(member string, n int32, accept bool) int {
		p, code := m.Partition(context.Background(), key, leaderEpoch, log)
		if code != 0 {
			t.Fatalf("partition: %d", code)
		}
		got, code := p.Acquire(sharepartition.AcquireRequest{Member: member, MaxRecords: n, Mode: sharepartition.RecordLimit,
			Batches: []sharepartition.Batch{{BaseOffset: p.NextFetchOffset(), LastOffset: log.HighWatermark() - 1}}})
		if code != 0 {
			t.Fatalf("acquire: %d", code)
		}
		count := 0
		for _, ar := range got {
			for off := ar.FirstOffset; off <= ar.LastOffset; off++ {
				if accepted[off] > 0 {
					t.Fatalf("offset %d delivered after it was accepted", off)
				}
				deliveries[off] = ar.DeliveryCount
				count++
			}
			if accept {
				if code := p.Acknowledge(context.Background(), member, []sharepartition.AckBatch{{FirstOffset: ar.FirstOffset, LastOffset: ar.LastOffset, Types: []sharepartition.AckType{sharepartition.AckAccept}}}, false); code != 0 {
					t.Fatalf("ack: %d", code)
				}
				for off := ar.FirstOffset; off <= ar.LastOffset; off++ {
					accepted[off]++
				}
			}
		}
		return count
	}

	consume("a", 10, false) // a is killed mid-batch: 0..9 stay acquired
	for consume("b", 5, true)+consume("c", 5, true) > 0 {
	}
	if len(accepted) != 20 {
		t.Fatalf("accepted %d before the lock expired", len(accepted))
	}
	e.clock.Advance(cfg.RecordLockDuration) // a's locks expire
	for consume("b", 3, true)+consume("c", 3, true) > 0 {
	}
	for off := int64(0); off < 10; off++ {
		if deliveries[off] != 2 {
			t.Fatalf("offset %d delivered %d times, want 2 (redelivered after a's lock)", off, deliveries[off])
		}
	}

	// b acquires 30..34 and the partition leader fails over; then the share
	// coordinator fails over too. Nothing accepted comes back.
	log.setHW(40)
	consume("b", 5, false)
	leaderEpoch++
	m = newManager()
	stateMu.Lock()
	state.Close()
	state = newState()
	stateMu.Unlock()
	for consume("c", 4, true) > 0 {
	}
	for off := int64(0); off < 40; off++ {
		if accepted[off] != 1 {
			t.Fatalf("offset %d accepted %d times", off, accepted[off])
		}
	}
	// The admin view agrees: the start offset is past everything.
	d := e.describeOffsets("q", nil)
	if len(d.Topics) != 1 || d.Topics[0].Partitions[0].StartOffset != 40 {
		t.Fatalf("described %+v", d)
	}
}

type e2eLog struct {
	mu sync.Mutex
	hw int64
}

func (l *e2eLog) LogStartOffset() int64                  { return 0 }
func (l *e2eLog) HighWatermark() int64                   { l.mu.Lock(); defer l.mu.Unlock(); return l.hw }
func (l *e2eLog) LastStableOffset() int64                { return l.HighWatermark() }
func (l *e2eLog) OffsetForTimestamp(int64) (int64, bool) { return 0, false }
func (l *e2eLog) setHW(hw int64)                         { l.mu.Lock(); l.hw = hw; l.mu.Unlock() }

// switchableStore is the persister over whichever share coordinator leads.
type switchableStore struct {
	get func() *sharestate.Coordinator
}

func (s *switchableStore) InitializeShareGroupState(ctx context.Context, r *kmsg.InitializeShareGroupStateRequest) (*kmsg.InitializeShareGroupStateResponse, error) {
	return s.get().InitializeShareGroupState(ctx, r), nil
}
func (s *switchableStore) ReadShareGroupStateSummary(ctx context.Context, r *kmsg.ReadShareGroupStateSummaryRequest) (*kmsg.ReadShareGroupStateSummaryResponse, error) {
	return s.get().ReadShareGroupStateSummary(ctx, r), nil
}
func (s *switchableStore) DeleteShareGroupState(ctx context.Context, r *kmsg.DeleteShareGroupStateRequest) (*kmsg.DeleteShareGroupStateResponse, error) {
	return s.get().DeleteShareGroupState(ctx, r), nil
}
func (s *switchableStore) ReadShareGroupState(ctx context.Context, r *kmsg.ReadShareGroupStateRequest) (*kmsg.ReadShareGroupStateResponse, error) {
	return s.get().ReadShareGroupState(ctx, r), nil
}
func (s *switchableStore) WriteShareGroupState(ctx context.Context, r *kmsg.WriteShareGroupStateRequest) (*kmsg.WriteShareGroupStateResponse, error) {
	return s.get().WriteShareGroupState(ctx, r), nil
}

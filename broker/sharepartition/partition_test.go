package sharepartition

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/broker/shareconfig"
)

// share.auto.offset.reset decides the start of a share-partition without
// one (Kafka's SharePartitionTest testMaybeInitialize*).
func TestInitializeResetStrategies(t *testing.T) {
	cases := []struct {
		name  string
		reset shareconfig.Reset
		want  int64
	}{
		{"earliest", shareconfig.Reset{Strategy: shareconfig.Earliest}, 3},
		{"latest", shareconfig.Reset{Strategy: shareconfig.Latest}, 10},
		{"by_duration finds a record", shareconfig.Reset{Strategy: shareconfig.ByDuration, Duration: time.Hour}, 6},
		{"by_duration after the last record is latest", shareconfig.Reset{Strategy: shareconfig.ByDuration, Duration: time.Second}, 10},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, func(cfg *shareconfig.Config) { cfg.AutoOffsetReset = c.reset })
			now := e.clock.Now().UnixMilli()
			e.log.logStart = 3
			e.log.offsetForTimestamps = map[int64]int64{now - 50*60*1000: 6}
			if start, end := e.part().Offsets(); start != c.want || end != c.want-1 {
				t.Fatalf("offsets %d..%d, want start %d", start, end, c.want)
			}
		})
	}
}

// The persisted state becomes the window: terminal runs, available runs
// with their counts, and the offsets between persisted batches available
// with no deliveries.
func TestInitializeFromState(t *testing.T) {
	e := newEnv(t, nil)
	req := kmsg.NewPtrWriteShareGroupStateRequest()
	req.Version = 1
	req.GroupID = "g"
	req.Topics = []kmsg.WriteShareGroupStateRequestTopic{{TopicID: topic, Partitions: []kmsg.WriteShareGroupStateRequestTopicPartition{{
		Partition: 0, StartOffset: 2, LeaderEpoch: 0, DeliveryCompleteCount: 1,
		StateBatches: []kmsg.WriteShareGroupStateRequestTopicPartitionStateBatch{
			{FirstOffset: 0, LastOffset: 2, DeliveryState: 2, DeliveryCount: 1},
			{FirstOffset: 3, LastOffset: 4, DeliveryState: 0, DeliveryCount: 2},
			{FirstOffset: 7, LastOffset: 7, DeliveryState: 4, DeliveryCount: 5},
		},
	}}}}
	if code := e.store.c.WriteShareGroupState(context.Background(), req).Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatal(code)
	}
	p := e.part()
	want := []recordSnapshot{{state: Available, deliveryCount: 2}, {state: Available, deliveryCount: 2},
		{state: Available}, {state: Available}, {state: Archived, deliveryCount: 5}}
	if start, _ := p.Offsets(); start != 3 || !reflect.DeepEqual(states(p), want) {
		t.Fatalf("start %d, window %+v", start, states(p))
	}
	got := e.acquire(p, "m", 10)
	if !reflect.DeepEqual(got, []AcquiredRange{rng(3, 4, 3), rng(5, 6, 1), rng(8, 9, 1)}) {
		t.Fatalf("acquired %v", got)
	}
}

// A failed read fails the partition with Kafka's mapped error; the manager
// makes a new one on the next request.
func TestInitializeFailures(t *testing.T) {
	cases := []struct {
		code, want int16
	}{
		{kerr.NotCoordinator.Code, kerr.CoordinatorNotAvailable.Code},
		{kerr.CoordinatorLoadInProgress.Code, kerr.CoordinatorNotAvailable.Code},
		{kerr.FencedLeaderEpoch.Code, kerr.NotLeaderForPartition.Code},
		{kerr.FencedStateEpoch.Code, kerr.FencedStateEpoch.Code},
		{kerr.UnknownTopicOrPartition.Code, kerr.UnknownTopicOrPartition.Code},
		{kerr.InvalidRequest.Code, kerr.UnknownServerError.Code},
	}
	for _, c := range cases {
		rs := &readFailStore{code: c.code}
		m := NewManager(Options{Store: rs})
		if _, code := m.Partition(context.Background(), key, 1, &fakeLog{}); code != c.want {
			t.Fatalf("read %d: code %d, want %d", c.code, code, c.want)
		}
		rs.code = 0
		if _, code := m.Partition(context.Background(), key, 1, &fakeLog{}); code != 0 {
			t.Fatalf("retry after %d: code %d", c.code, code)
		}
		m.Close()
	}
}

type readFailStore struct{ code int16 }

func (s *readFailStore) ReadShareGroupState(_ context.Context, req *kmsg.ReadShareGroupStateRequest) (*kmsg.ReadShareGroupStateResponse, error) {
	resp := req.ResponseKind().(*kmsg.ReadShareGroupStateResponse)
	resp.Topics = []kmsg.ReadShareGroupStateResponseTopic{{TopicID: req.Topics[0].TopicID,
		Partitions: []kmsg.ReadShareGroupStateResponseTopicPartition{{Partition: req.Topics[0].Partitions[0].Partition, ErrorCode: s.code, StartOffset: -1}}}}
	return resp, nil
}

func (s *readFailStore) WriteShareGroupState(context.Context, *kmsg.WriteShareGroupStateRequest) (*kmsg.WriteShareGroupStateResponse, error) {
	return nil, context.DeadlineExceeded
}

func TestAcquireLimits(t *testing.T) {
	t.Run("record limit", func(t *testing.T) {
		e := newEnv(t, nil)
		p := e.part()
		if got := e.acquire(p, "m", 4); !reflect.DeepEqual(got, []AcquiredRange{rng(0, 3, 1)}) {
			t.Fatalf("acquired %v", got)
		}
		if got := e.acquire(p, "n", 100); !reflect.DeepEqual(got, []AcquiredRange{rng(4, 9, 1)}) {
			t.Fatalf("acquired %v", got)
		}
		if got := e.acquire(p, "n", 100); len(got) != 0 {
			t.Fatalf("acquired past the high watermark: %v", got)
		}
	})
	t.Run("batch optimized finishes the batch", func(t *testing.T) {
		e := newEnv(t, nil)
		p := e.part()
		got, _ := p.Acquire(AcquireRequest{Member: "m", MaxRecords: 3, Mode: BatchOptimized, Batches: batches(0, 10, 5)})
		if !reflect.DeepEqual(got, []AcquiredRange{rng(0, 4, 1)}) {
			t.Fatalf("acquired %v", got)
		}
	})
	t.Run("batch size splits ranges", func(t *testing.T) {
		e := newEnv(t, nil)
		p := e.part()
		got, _ := p.Acquire(AcquireRequest{Member: "m", MaxRecords: 100, BatchSize: 4, Mode: BatchOptimized, Batches: batches(0, 10, 10)})
		if !reflect.DeepEqual(got, []AcquiredRange{rng(0, 3, 1), rng(4, 7, 1), rng(8, 9, 1)}) {
			t.Fatalf("acquired %v", got)
		}
	})
	t.Run("record locks bound the window", func(t *testing.T) {
		e := newEnv(t, func(c *shareconfig.Config) { c.PartitionMaxRecordLocks = 4 })
		p := e.part()
		if got := e.acquire(p, "m", 100); !reflect.DeepEqual(got, []AcquiredRange{rng(0, 3, 1)}) {
			t.Fatalf("acquired %v", got)
		}
		if p.CanAcquire() {
			t.Fatal("a full window can acquire")
		}
		// Acknowledging the head makes room.
		if code := e.ack(p, "m", ack(0, 1, AckAccept)); code != 0 {
			t.Fatal(code)
		}
		if got := e.acquire(p, "m", 100); !reflect.DeepEqual(got, []AcquiredRange{rng(4, 5, 1)}) {
			t.Fatalf("acquired %v", got)
		}
	})
	t.Run("zero max records acquires nothing", func(t *testing.T) {
		e := newEnv(t, nil)
		if got := e.acquire(e.part(), "m", 0); len(got) != 0 {
			t.Fatalf("acquired %v", got)
		}
	})
}

// Compacted gaps are archived, read_committed stops at the LSO and never
// hands out aborted records, a moved log start drops what is gone.
func TestAcquireLogShapes(t *testing.T) {
	t.Run("compaction gaps", func(t *testing.T) {
		e := newEnv(t, nil)
		p := e.part()
		got, _ := p.Acquire(AcquireRequest{Member: "m", MaxRecords: 100, Mode: RecordLimit,
			Batches: []Batch{{BaseOffset: 2, LastOffset: 3}, {BaseOffset: 6, LastOffset: 7}}})
		if !reflect.DeepEqual(got, []AcquiredRange{rng(2, 3, 1), rng(6, 7, 1)}) {
			t.Fatalf("acquired %v", got)
		}
		if code := e.ack(p, "m", ack(2, 3, AckAccept), ack(6, 7, AckAccept)); code != 0 {
			t.Fatal(code)
		}
		if start, _ := p.Offsets(); start != 8 {
			t.Fatalf("start %d past the gaps", start)
		}
	})
	t.Run("read committed", func(t *testing.T) {
		e := newEnv(t, func(c *shareconfig.Config) { c.ReadCommitted = true })
		e.log.lso, e.log.lsoSet = 8, true
		p := e.part()
		bs := []Batch{
			{BaseOffset: 0, LastOffset: 1},
			{BaseOffset: 2, LastOffset: 3, ProducerID: 9, Transactional: true},
			{BaseOffset: 4, LastOffset: 4, ProducerID: 9, Transactional: true, Control: true, Abort: true},
			{BaseOffset: 5, LastOffset: 6, ProducerID: 9, Transactional: true},
			{BaseOffset: 7, LastOffset: 9},
		}
		got, _ := p.Acquire(AcquireRequest{Member: "m", MaxRecords: 100, Mode: RecordLimit, Batches: bs,
			Aborted: []AbortedTxn{{ProducerID: 9, FirstOffset: 2}}})
		if !reflect.DeepEqual(got, []AcquiredRange{rng(0, 1, 1), rng(4, 7, 1)}) {
			t.Fatalf("acquired %v", got)
		}
	})
	t.Run("log start moved", func(t *testing.T) {
		e := newEnv(t, nil)
		p := e.part()
		e.acquire(p, "m", 5)
		e.log.logStart = 3
		if got := e.acquire(p, "m", 2); !reflect.DeepEqual(got, []AcquiredRange{rng(5, 6, 1)}) {
			t.Fatalf("acquired %v", got)
		}
		if start, _ := p.Offsets(); start != 3 {
			t.Fatalf("start %d", start)
		}
		if code := e.ack(p, "m", ack(0, 2, AckAccept)); code != kerr.InvalidRecordState.Code {
			t.Fatalf("ack below the log start: %d", code)
		}
	})
}

// Accept, release, reject and gap as Kafka's SharePartition applies them,
// and the start offset moving past completed records.
func TestAcknowledgeTypes(t *testing.T) {
	e := newEnv(t, nil)
	p := e.part()
	e.acquire(p, "m", 10)
	code := e.ack(p, "m",
		ack(0, 1, AckAccept),
		ack(2, 2, AckRelease),
		ack(3, 3, AckReject),
		ack(4, 6, AckAccept, AckGap, AckRelease))
	if code != 0 {
		t.Fatal(code)
	}
	want := []recordSnapshot{{state: Available, deliveryCount: 1}, {state: Archived, deliveryCount: 1},
		{state: Acknowledged, deliveryCount: 1}, {state: Archived, deliveryCount: 1}, {state: Available, deliveryCount: 1},
		{state: Acquired, deliveryCount: 1, member: "m", lockExpiryMs: e.clock.Now().UnixMilli() + 30000},
		{state: Acquired, deliveryCount: 1, member: "m", lockExpiryMs: e.clock.Now().UnixMilli() + 30000},
		{state: Acquired, deliveryCount: 1, member: "m", lockExpiryMs: e.clock.Now().UnixMilli() + 30000}}
	if start, _ := p.Offsets(); start != 2 || !reflect.DeepEqual(states(p), want) {
		t.Fatalf("start %d window %+v", start, states(p))
	}
	// The released records go to the next member with their second delivery.
	if got := e.acquire(p, "n", 10); !reflect.DeepEqual(got, []AcquiredRange{rng(2, 2, 2), rng(6, 6, 2)}) {
		t.Fatalf("redelivered %v", got)
	}
	if e.available.Load() == 0 {
		t.Fatal("no wake-up for released records")
	}
	st := p.Stats()
	if st.AcceptedTotal != 3 || st.ReleasedTotal != 2 || st.ArchivedTotal != 2 || st.RejectedTotal != 1 || st.AcquiredTotal != 12 {
		t.Fatalf("stats %+v", st)
	}
}

// Bad acknowledgements get Kafka's errors and change nothing, even when
// an earlier batch of the same request was fine.
func TestAcknowledgeErrors(t *testing.T) {
	e := newEnv(t, nil)
	p := e.part()
	e.acquire(p, "m", 5) // 0..4 by m
	e.acquire(p, "n", 2) // 5..6 by n
	e.ack(p, "m", ack(0, 0, AckAccept))
	before := states(p)
	cases := []struct {
		name    string
		member  string
		batches []AckBatch
		renew   bool
		want    int16
	}{
		{"last before first", "m", []AckBatch{ack(3, 2, AckAccept)}, false, kerr.InvalidRequest.Code},
		{"no types", "m", []AckBatch{{FirstOffset: 1, LastOffset: 2}}, false, kerr.InvalidRequest.Code},
		{"types do not match the range", "m", []AckBatch{ack(1, 3, AckAccept, AckAccept)}, false, kerr.InvalidRequest.Code},
		{"unknown type", "m", []AckBatch{ack(1, 1, AckType(5))}, true, kerr.InvalidRequest.Code},
		{"renew without IsRenewAck", "m", []AckBatch{ack(1, 1, AckRenew)}, false, kerr.InvalidRequest.Code},
		{"overlapping batches", "m", []AckBatch{ack(1, 2, AckAccept), ack(2, 3, AckAccept)}, false, kerr.InvalidRequest.Code},
		{"descending batches", "m", []AckBatch{ack(3, 3, AckAccept), ack(1, 1, AckAccept)}, false, kerr.InvalidRequest.Code},
		{"negative offset", "m", []AckBatch{ack(-1, 1, AckAccept)}, false, kerr.InvalidRequest.Code},
		{"below the start offset", "m", []AckBatch{ack(0, 1, AckAccept)}, false, kerr.InvalidRecordState.Code},
		{"past the end offset", "m", []AckBatch{ack(4, 8, AckAccept)}, false, kerr.InvalidRequest.Code},
		{"another member's records", "m", []AckBatch{ack(5, 5, AckAccept)}, false, kerr.InvalidRecordState.Code},
		{"unknown member", "x", []AckBatch{ack(1, 1, AckAccept)}, false, kerr.InvalidRecordState.Code},
		{"good batch then bad batch", "m", []AckBatch{ack(1, 2, AckAccept), ack(5, 5, AckAccept)}, false, kerr.InvalidRecordState.Code},
	}
	for _, c := range cases {
		if code := p.Acknowledge(context.Background(), c.member, c.batches, c.renew); code != c.want {
			t.Errorf("%s: code %d, want %d", c.name, code, c.want)
		}
		if !reflect.DeepEqual(states(p), before) {
			t.Fatalf("%s changed the state: %+v", c.name, states(p))
		}
	}
	// Acknowledged already: a second accept is refused.
	e.ack(p, "m", ack(1, 1, AckAccept))
	if code := e.ack(p, "m", ack(1, 1, AckAccept)); code != kerr.InvalidRecordState.Code {
		t.Fatalf("double accept: %d", code)
	}
}

// A record delivered share.delivery.count.limit times is archived when
// released or when its lock expires (a poison record).
func TestDeliveryCountLimit(t *testing.T) {
	e := newEnv(t, func(c *shareconfig.Config) { c.DeliveryCountLimit = 3 })
	e.log.setHW(1)
	p := e.part()
	for delivery := int16(1); delivery <= 3; delivery++ {
		got := e.acquire(p, "m", 10)
		if !reflect.DeepEqual(got, []AcquiredRange{rng(0, 0, delivery)}) {
			t.Fatalf("delivery %d: %v", delivery, got)
		}
		if delivery < 3 {
			if code := e.ack(p, "m", ack(0, 0, AckRelease)); code != 0 {
				t.Fatal(code)
			}
			continue
		}
		e.clock.Advance(e.cfg.RecordLockDuration) // the third lock expires
	}
	if start, _ := p.Offsets(); start != 1 {
		t.Fatalf("poison record not archived: start %d, %+v", start, states(p))
	}
	if got := e.acquire(p, "m", 10); len(got) != 0 {
		t.Fatalf("poison record delivered again: %v", got)
	}
}

// Locks expire after share.record.lock.duration.ms and the records go to
// others; RENEW (KIP-1222) extends them.
func TestLockTimeoutAndRenew(t *testing.T) {
	e := newEnv(t, nil)
	p := e.part()
	e.acquire(p, "m", 4) // 0..3
	e.clock.Advance(20 * time.Second)
	if code := e.ack(p, "m", ack(2, 3, AckRenew)); code != 0 {
		t.Fatal(code)
	}
	e.clock.Advance(10 * time.Second) // 0..1 expire, 2..3 were renewed
	if got := e.acquire(p, "n", 10); !reflect.DeepEqual(got, []AcquiredRange{rng(0, 1, 2), rng(4, 9, 1)}) {
		t.Fatalf("after expiry %v", got)
	}
	if code := e.ack(p, "m", ack(0, 0, AckAccept)); code != kerr.InvalidRecordState.Code {
		t.Fatalf("ack after the lock expired: %d", code)
	}
	if code := e.ack(p, "m", ack(2, 3, AckAccept)); code != 0 {
		t.Fatalf("ack of renewed records: %d", code)
	}
	if st := p.Stats(); st.LockTimeoutsTotal != 2 {
		t.Fatalf("stats %+v", st)
	}
	// Renewal off by group config: RENEW is refused.
	e.cfg.RenewAcknowledge = false
	if code := e.ack(p, "n", ack(0, 0, AckRenew)); code != kerr.InvalidRequest.Code {
		t.Fatalf("renew disabled: %d", code)
	}
}

// A failed write rolls the acknowledgement back: the member still holds
// the records and may acknowledge them again.
func TestWriteFailureRollsBack(t *testing.T) {
	e := newEnv(t, nil)
	p := e.part()
	e.acquire(p, "m", 3)
	before := states(p)
	e.store.failWrite.Store(int32(kerr.CoordinatorLoadInProgress.Code))
	if code := e.ack(p, "m", ack(0, 2, AckAccept)); code != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("code %d", code)
	}
	if !reflect.DeepEqual(states(p), before) {
		t.Fatalf("state changed: %+v", states(p))
	}
	if code := e.ack(p, "m", ack(0, 2, AckAccept)); code != 0 {
		t.Fatal(code)
	}
	// A fenced state epoch fences the partition for good.
	e.acquire(p, "m", 1)
	e.store.failWrite.Store(int32(kerr.FencedStateEpoch.Code))
	if code := e.ack(p, "m", ack(3, 3, AckAccept)); code != kerr.FencedStateEpoch.Code {
		t.Fatalf("code %d", code)
	}
	if _, code := p.Acquire(AcquireRequest{Member: "m", MaxRecords: 1}); code != kerr.NotLeaderForPartition.Code {
		t.Fatalf("fenced partition acquired: %d", code)
	}
	if _, code := e.m.Existing(key); code != kerr.NotLeaderForPartition.Code {
		t.Fatalf("Existing: %d", code)
	}
}

// A leader failover loses no acknowledgement and redelivers only what was
// not acknowledged; the old leader is fenced by the share coordinator.
func TestFailover(t *testing.T) {
	e := newEnv(t, nil)
	old := e.part()
	e.acquire(old, "m", 10)
	if code := e.ack(old, "m", ack(0, 3, AckAccept), ack(5, 5, AckReject), ack(7, 7, AckRelease)); code != 0 {
		t.Fatal(code)
	}
	p := e.failover()
	if start, _ := p.Offsets(); start != 4 {
		t.Fatalf("start %d", start)
	}
	got := e.acquire(p, "n", 100)
	want := []AcquiredRange{rng(4, 4, 1), rng(6, 6, 1), rng(7, 7, 2), rng(8, 9, 1)}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("redelivered %v, want %v", got, want)
	}
	// The old leader's write is refused: FENCED_LEADER_EPOCH, mapped to
	// NOT_LEADER_OR_FOLLOWER, and it stops serving.
	if code := e.ack(old, "m", ack(4, 4, AckAccept)); code != kerr.NotLeaderForPartition.Code {
		t.Fatalf("old leader ack: %d", code)
	}
}

func TestReleaseMemberAndLeadershipLost(t *testing.T) {
	e := newEnv(t, nil)
	p := e.part()
	e.acquire(p, "m", 3)
	e.acquire(p, "n", 3)
	e.m.ReleaseSession(context.Background(), ClosedSession{Key: SessionKey{"g", "m"}, Partitions: []TopicIDPartition{{topic, 0}}})
	if got := e.acquire(p, "o", 10); !reflect.DeepEqual(got, []AcquiredRange{rng(0, 2, 2), rng(6, 9, 1)}) {
		t.Fatalf("after release %v", got)
	}
	e.m.LeadershipLost(topic, 0)
	if code := e.ack(p, "n", ack(3, 3, AckAccept)); code != kerr.NotLeaderForPartition.Code {
		t.Fatalf("after leadership lost: %d", code)
	}
	if _, code := e.m.Existing(key); code != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("Existing after leadership lost: %d", code)
	}
}

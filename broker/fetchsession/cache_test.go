package fetchsession

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// clock is a settable time for the cache.
type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }

// ids hands out 1, 2, 3...
func ids() func() int32 {
	n := int32(0)
	return func() int32 { n++; return n }
}

func newTestCache(slots int) (*Cache, *clock) {
	clk := &clock{t: time.Unix(1000, 0)}
	return New(Options{MaxSlots: slots, Now: clk.now, NewID: ids()}), clk
}

func parts(topic string, n int, offset int64) []Partition {
	out := make([]Partition, n)
	for i := range out {
		out[i] = Partition{Key: Key{Topic: topic, Partition: int32(i)}, Params: Params{FetchOffset: offset, MaxBytes: 1 << 20}}
	}
	return out
}

// quiet is a result with no news for a partition last answered at hw.
func quiet(hw int64) Result {
	return Result{HighWatermark: hw, LastStableOffset: hw, LogStartOffset: 0, PreferredReadReplica: -1}
}

// open creates a session of the partitions through a full fetch answered
// at hw 10 everywhere; it returns the session id.
func open(t *testing.T, c *Cache, follower bool, ps []Partition) int32 {
	t.Helper()
	x := c.NewContext(Request{Version: 12, Epoch: InitialEpoch, Follower: follower, Partitions: ps})
	if x.Kind != Full {
		t.Fatalf("kind %v, want full", x.Kind)
	}
	res := make([]Result, x.Len())
	for i := range res {
		res[i] = quiet(10)
	}
	return x.Respond(res, make([]bool, x.Len()))
}

func TestFullFetchCreatesSessionAtEpochOne(t *testing.T) {
	c, _ := newTestCache(10)
	id := open(t, c, false, parts("a", 3, 0))
	if id <= 0 {
		t.Fatalf("session id %d", id)
	}
	x := c.NewContext(Request{Version: 12, SessionID: id, Epoch: 1})
	if x.Kind != Incremental || x.Len() != 3 {
		t.Fatalf("kind %v len %d, want incremental of 3", x.Kind, x.Len())
	}
	// The epoch moved on: the same epoch again is refused.
	if x := c.NewContext(Request{Version: 12, SessionID: id, Epoch: 1}); x.ErrorCode != kerr.InvalidFetchSessionEpoch.Code {
		t.Fatalf("repeated epoch: code %d", x.ErrorCode)
	}
	if x := c.NewContext(Request{Version: 12, SessionID: id, Epoch: 2}); x.Kind != Incremental {
		t.Fatalf("epoch 2: kind %v", x.Kind)
	}
}

func TestSessionErrors(t *testing.T) {
	c, _ := newTestCache(10)
	id := open(t, c, false, parts("a", 1, 0))
	cases := []struct {
		name string
		req  Request
		code int16
	}{
		{"unknown id", Request{Version: 12, SessionID: id + 100, Epoch: 1}, kerr.FetchSessionIDNotFound.Code},
		{"wrong epoch", Request{Version: 12, SessionID: id, Epoch: 7}, kerr.InvalidFetchSessionEpoch.Code},
		{"topic ids in a names session", Request{Version: 13, SessionID: id, Epoch: 1}, kerr.FetchSessionTopicIDError.Code},
	}
	for _, tc := range cases {
		x := c.NewContext(tc.req)
		if x.Kind != Failed || x.ErrorCode != tc.code {
			t.Errorf("%s: kind %v code %d, want failed %d", tc.name, x.Kind, x.ErrorCode, tc.code)
		}
	}
}

// Kafka's FINAL epoch: a sessionless full fetch whatever the session id
// (kafka-go's Client.Fetch sends id -1), closing a session it names.
func TestFinalEpochIsSessionless(t *testing.T) {
	c, _ := newTestCache(10)
	for _, id := range []int32{-1, 0, 12345} {
		x := c.NewContext(Request{Version: 11, SessionID: id, Epoch: FinalEpoch, Partitions: parts("a", 2, 0)})
		keep := make([]bool, 2)
		if x.Kind != Sessionless || x.Respond([]Result{quiet(1), quiet(1)}, keep) != 0 || !keep[0] || !keep[1] {
			t.Fatalf("id %d: kind %v keep %v", id, x.Kind, keep)
		}
	}
	id := open(t, c, false, parts("a", 1, 0))
	c.NewContext(Request{Version: 12, SessionID: id, Epoch: FinalEpoch})
	if c.Stats().Sessions != 0 {
		t.Fatal("a final-epoch fetch naming a session did not close it")
	}
}

func TestIncrementalMergesAndForgets(t *testing.T) {
	c, _ := newTestCache(10)
	id := open(t, c, false, parts("a", 3, 0))
	// a-1 moves to offset 5, b-0 joins, a-2 is forgotten.
	x := c.NewContext(Request{Version: 12, SessionID: id, Epoch: 1,
		Partitions: []Partition{{Key: Key{Topic: "a", Partition: 1}, Params: Params{FetchOffset: 5}},
			{Key: Key{Topic: "b", Partition: 0}, Params: Params{FetchOffset: 7}}},
		Forgotten: []Key{{Topic: "a", Partition: 2}}})
	want := []struct {
		topic  string
		p      int32
		offset int64
	}{{"a", 0, 0}, {"a", 1, 5}, {"b", 0, 7}}
	if x.Len() != len(want) {
		t.Fatalf("len %d, want %d", x.Len(), len(want))
	}
	for i, w := range want {
		if p := x.Partition(i); p.Topic != w.topic || p.Key.Partition != w.p || p.FetchOffset != w.offset {
			t.Errorf("partition %d: %+v, want %+v", i, p, w)
		}
	}
	if got := c.Stats().Partitions; got != 3 {
		t.Errorf("cached partitions %d, want 3", got)
	}
}

// The incremental response rule (Kafka's CachedPartition.maybeUpdateResponseData,
// with the last stable offset).
func TestIncrementalAnswersOnlyNews(t *testing.T) {
	c, _ := newTestCache(10)
	id := open(t, c, false, parts("a", 1, 0))
	epoch := int32(1)
	respond := func(r Result) bool {
		t.Helper()
		x := c.NewContext(Request{Version: 12, SessionID: id, Epoch: epoch})
		epoch = NextEpoch(epoch)
		keep := make([]bool, 1)
		if got := x.Respond([]Result{r}, keep); got != id {
			t.Fatalf("session id %d, want %d", got, id)
		}
		return keep[0]
	}
	steps := []struct {
		name string
		r    Result
		want bool
	}{
		{"nothing new", quiet(10), false},
		{"records", Result{Records: true, HighWatermark: 10, LastStableOffset: 10, PreferredReadReplica: -1}, true},
		{"high watermark", quiet(11), true},
		{"same again", quiet(11), false},
		{"last stable offset", Result{HighWatermark: 11, LastStableOffset: 9, PreferredReadReplica: -1}, true},
		{"log start", Result{HighWatermark: 11, LastStableOffset: 9, LogStartOffset: 3, PreferredReadReplica: -1}, true},
		{"error", Result{ErrorCode: 6, HighWatermark: -1, LastStableOffset: -1, LogStartOffset: 3, PreferredReadReplica: -1}, true},
		{"error gone, same offsets as before it", Result{HighWatermark: 11, LastStableOffset: 9, LogStartOffset: 3, PreferredReadReplica: -1}, true},
		{"preferred read replica", Result{HighWatermark: 11, LastStableOffset: 9, LogStartOffset: 3, PreferredReadReplica: 2}, true},
		{"diverging epoch", Result{HighWatermark: 11, LastStableOffset: 9, LogStartOffset: 3, PreferredReadReplica: -1, Diverging: true}, true},
		{"quiet", Result{HighWatermark: 11, LastStableOffset: 9, LogStartOffset: 3, PreferredReadReplica: -1}, false},
	}
	for _, s := range steps {
		if got := respond(s.r); got != s.want {
			t.Errorf("%s: answered %v, want %v", s.name, got, s.want)
		}
	}
}

// A partition that returned records is read last next time.
func TestPartitionWithRecordsMovesBack(t *testing.T) {
	c, _ := newTestCache(10)
	id := open(t, c, false, parts("a", 3, 0))
	x := c.NewContext(Request{Version: 12, SessionID: id, Epoch: 1})
	rec := quiet(10)
	rec.Records = true
	x.Respond([]Result{rec, quiet(10), quiet(10)}, make([]bool, 3))
	x = c.NewContext(Request{Version: 12, SessionID: id, Epoch: 2})
	var order []int32
	for i := range x.Len() {
		order = append(order, x.Partition(i).Key.Partition)
	}
	if order[0] != 1 || order[1] != 2 || order[2] != 0 {
		t.Fatalf("order %v, want [1 2 0]", order)
	}
}

func TestHasNewsDoesNotRecord(t *testing.T) {
	c, _ := newTestCache(10)
	id := open(t, c, true, parts("a", 1, 0))
	x := c.NewContext(Request{Version: 12, SessionID: id, Epoch: 1, Follower: true})
	if !x.HasNews(0, quiet(12)) || !x.HasNews(0, quiet(12)) || x.HasNews(0, quiet(10)) {
		t.Fatal("HasNews must compare with the last answer without recording")
	}
}

func TestEmptiedSessionIsClosed(t *testing.T) {
	c, _ := newTestCache(10)
	id := open(t, c, false, parts("a", 1, 0))
	x := c.NewContext(Request{Version: 12, SessionID: id, Epoch: 1, Forgotten: []Key{{Topic: "a"}}})
	if x.Kind != Sessionless || c.Stats().Sessions != 0 {
		t.Fatalf("kind %v sessions %d", x.Kind, c.Stats().Sessions)
	}
}

func TestFullCacheAnswersSessionZero(t *testing.T) {
	c, _ := newTestCache(1)
	open(t, c, false, parts("a", 5, 0))
	if id := open(t, c, false, parts("b", 5, 0)); id != 0 {
		t.Fatalf("a consumer session of equal size displaced a young one: id %d", id)
	}
	if c.Stats().Sessions != 1 {
		t.Fatal("sessions")
	}
}

func TestZeroSlotsCreatesNothing(t *testing.T) {
	c, _ := newTestCache(0)
	if id := open(t, c, true, parts("a", 1, 0)); id != 0 {
		t.Fatalf("id %d", id)
	}
}

// Kafka's FetchSessionCache eviction: stale first, then by privilege and size.
func TestEviction(t *testing.T) {
	t.Run("stale session goes first", func(t *testing.T) {
		c, clk := newTestCache(2)
		stale := open(t, c, true, parts("a", 50, 0))
		clk.advance(time.Second)
		fresh := open(t, c, true, parts("b", 50, 0))
		clk.advance(EvictionAge)
		c.NewContext(Request{Version: 12, SessionID: fresh, Epoch: 1}) // keeps b in use
		clk.advance(time.Second)
		if id := open(t, c, false, parts("c", 1, 0)); id == 0 {
			t.Fatal("a stale session was not evicted")
		}
		if x := c.NewContext(Request{Version: 12, SessionID: stale, Epoch: 1}); x.ErrorCode != kerr.FetchSessionIDNotFound.Code {
			t.Fatal("the stale session survived")
		}
		if c.Stats().Evictions != 1 {
			t.Fatalf("evictions %d", c.Stats().Evictions)
		}
	})
	t.Run("a follower evicts a young consumer session", func(t *testing.T) {
		c, _ := newTestCache(1)
		open(t, c, false, parts("a", 100, 0))
		if id := open(t, c, true, parts("b", 1, 0)); id == 0 {
			t.Fatal("a privileged session could not evict a young consumer session")
		}
	})
	t.Run("nothing evicts a young follower session", func(t *testing.T) {
		c, _ := newTestCache(1)
		open(t, c, true, parts("a", 1, 0))
		if id := open(t, c, true, parts("b", 100, 0)); id != 0 {
			t.Fatal("a young privileged session was evicted")
		}
	})
	t.Run("old sessions go to larger ones", func(t *testing.T) {
		c, clk := newTestCache(1)
		small := open(t, c, false, parts("a", 2, 0))
		clk.advance(EvictionAge + time.Second)
		c.NewContext(Request{Version: 12, SessionID: small, Epoch: 1}) // used: not stale, now old
		if id := open(t, c, false, parts("b", 1, 0)); id != 0 {
			t.Fatal("a smaller session evicted a larger one")
		}
		if id := open(t, c, false, parts("c", 3, 0)); id == 0 {
			t.Fatal("a larger consumer session could not evict an old smaller one")
		}
	})
}

func TestNextEpochWraps(t *testing.T) {
	if NextEpoch(1<<31-1) != 1 || NextEpoch(0) != 1 || NextEpoch(5) != 6 {
		t.Fatal("NextEpoch")
	}
}

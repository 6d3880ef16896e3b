package group

import (
	"context"
	"errors"
	"iter"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/internal/testsupport"
)

// memStore is an in-memory __consumer_offsets partition.
type memStore struct {
	mu      sync.Mutex
	records []Record
	failErr error // when set, Append fails with it
	appends int
}

func (s *memStore) Append(ctx context.Context, recs []Record) error {
	return s.append(ctx, recs, nil)
}

// append stores recs (of producer p's transaction when p is not nil).
func (s *memStore) append(ctx context.Context, recs []Record, p *TxnProducer) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failErr != nil {
		return s.failErr
	}
	s.appends++
	for _, r := range recs {
		stored := Record{Key: slices.Clone(r.Key), Value: slices.Clone(r.Value)}
		if p != nil {
			stored.Transactional, stored.ProducerID = true, p.ID
		}
		s.records = append(s.records, stored)
	}
	return nil
}

// AppendTxn makes memStore a TxnStore: the records carry their producer,
// as a replay reads them.
func (s *memStore) AppendTxn(ctx context.Context, p TxnProducer, recs []Record) error {
	return s.append(ctx, recs, &p)
}

// mark appends a transaction marker of producer pid.
func (s *memStore) mark(pid int64, commit bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := AbortMarker
	if commit {
		m = CommitMarker
	}
	s.records = append(s.records, Record{ProducerID: pid, Marker: m})
}

func (s *memStore) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failErr = err
}

func (s *memStore) snapshot() []Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.records)
}

func seqOf(recs []Record) iter.Seq2[Record, error] {
	return func(yield func(Record, error) bool) {
		for i, r := range recs {
			r.Offset = int64(i)
			if !yield(r, nil) {
				return
			}
		}
	}
}

func newFakeClock() *testsupport.Clock {
	return testsupport.NewClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
}

// advanceUntil moves the clock a second at a time until cond holds.
func (h *harness) advanceUntil(cond func() bool) {
	h.t.Helper()
	for range 120 {
		if cond() {
			return
		}
		h.clock.Advance(time.Second)
	}
	h.t.Fatal("condition never held")
}

// harness is a coordinator leading every partition, with a fake clock and
// in-memory stores.
type harness struct {
	t      *testing.T
	c      *Coordinator
	opts   Options
	clock  *testsupport.Clock
	stores map[int32]*memStore
	topics map[string]int32
	mu     sync.Mutex
}

const testPartitions = 4

func newHarness(t *testing.T, mod func(*Options)) *harness {
	t.Helper()
	h := &harness{t: t, clock: newFakeClock(), stores: make(map[int32]*memStore), topics: map[string]int32{"t1": 4, "t2": 3}}
	h.opts = Options{
		NumPartitions:         testPartitions,
		MinSessionTimeout:     time.Second,
		MaxSessionTimeout:     time.Minute,
		InitialRebalanceDelay: 3 * time.Second,
		Now:                   h.clock.Now,
		AfterFunc:             h.clock.AfterFunc,
		TopicPartitions: func(topic string) (int32, bool) {
			h.mu.Lock()
			defer h.mu.Unlock()
			n, ok := h.topics[topic]
			return n, ok
		},
		TopicID: func(topic string) ([16]byte, bool) {
			h.mu.Lock()
			defer h.mu.Unlock()
			_, ok := h.topics[topic]
			return testTopicID(topic), ok
		},
		AllTopics: func() []string {
			h.mu.Lock()
			defer h.mu.Unlock()
			var out []string
			for t := range h.topics {
				out = append(out, t)
			}
			sort.Strings(out)
			return out
		},
	}
	if mod != nil {
		mod(&h.opts)
	}
	h.c = NewCoordinator(h.opts)
	t.Cleanup(h.c.Close)
	for p := int32(0); p < testPartitions; p++ {
		h.stores[p] = &memStore{}
		if err := h.c.BecomeLeader(p, h.stores[p], seqOf(nil)); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

func testTopicID(topic string) [16]byte {
	var id [16]byte
	copy(id[:], topic)
	id[15] = 0xAB
	return id
}

func (h *harness) setTopic(topic string, partitions int32) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.topics[topic] = partitions
}

func (h *harness) store(group string) *memStore { return h.stores[h.c.PartitionFor(group)] }

// allRecords is every record written so far, per partition.
func (h *harness) allRecords() map[int32][]Record {
	out := make(map[int32][]Record)
	for p, s := range h.stores {
		out[p] = s.snapshot()
	}
	return out
}

var ctxBG = context.Background()

// ---- classic protocol helpers ----

type joinOpt func(*kmsg.JoinGroupRequest)

func withInstance(id string) joinOpt {
	return func(r *kmsg.JoinGroupRequest) { r.InstanceID = &id }
}

func withVersion(v int16) joinOpt { return func(r *kmsg.JoinGroupRequest) { r.Version = v } }

func withProtocols(ps ...string) joinOpt {
	return func(r *kmsg.JoinGroupRequest) {
		r.Protocols = nil
		for _, p := range ps {
			r.Protocols = append(r.Protocols, kmsg.JoinGroupRequestProtocol{Name: p, Metadata: []byte(p + "-meta")})
		}
	}
}

func withTimeouts(session, rebalance time.Duration) joinOpt {
	return func(r *kmsg.JoinGroupRequest) {
		r.SessionTimeoutMillis = int32(session.Milliseconds())
		r.RebalanceTimeoutMillis = int32(rebalance.Milliseconds())
	}
}

func withMetadata(topics ...string) joinOpt {
	return func(r *kmsg.JoinGroupRequest) {
		meta := kmsg.ConsumerMemberMetadata{Version: 0, Topics: topics}
		r.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: meta.AppendTo(nil)}}
	}
}

func joinReq(group, member string, opts ...joinOpt) *kmsg.JoinGroupRequest {
	r := kmsg.NewPtrJoinGroupRequest()
	r.Version = 9
	r.Group, r.MemberID, r.ProtocolType = group, member, "consumer"
	r.SessionTimeoutMillis, r.RebalanceTimeoutMillis = 10000, 30000
	r.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte("range-meta")}}
	for _, o := range opts {
		o(r)
	}
	return r
}

// joinAsync runs a JoinGroup on its group and returns the channel its
// response arrives on: when joinAsync returns, the request was processed
// (answered, or parked in the group).
func (h *harness) joinAsync(req *kmsg.JoinGroupRequest) <-chan *kmsg.JoinGroupResponse {
	ch := make(chan *kmsg.JoinGroupResponse, 1)
	if code := h.c.startJoin(ctxBG, Client{ID: "client", Host: "/127.0.0.1"}, req, ch); code != 0 {
		ch <- joinError(code, req.MemberID)
	}
	return ch
}

// join sends a JoinGroup that must answer at once.
func (h *harness) join(req *kmsg.JoinGroupRequest) *kmsg.JoinGroupResponse {
	h.t.Helper()
	return recv(h.t, h.joinAsync(req))
}

// joinNew joins with MEMBER_ID_REQUIRED (v4+) and returns the parked second
// join with the member id.
func (h *harness) joinNew(group string, opts ...joinOpt) (string, <-chan *kmsg.JoinGroupResponse) {
	h.t.Helper()
	first := h.join(joinReq(group, "", opts...))
	if first.ErrorCode != codeMemberIDRequired {
		h.t.Fatalf("first join: error %d, want MEMBER_ID_REQUIRED", first.ErrorCode)
	}
	return first.MemberID, h.joinAsync(joinReq(group, first.MemberID, opts...))
}

// syncAsync runs a SyncGroup on its group (processed when it returns).
func (h *harness) syncAsync(group, member string, gen int32, assignments map[string]string) <-chan *kmsg.SyncGroupResponse {
	req := kmsg.NewPtrSyncGroupRequest()
	req.Version = 5
	req.Group, req.MemberID, req.Generation = group, member, gen
	for _, id := range sortedKeys(assignments) {
		req.GroupAssignment = append(req.GroupAssignment, kmsg.SyncGroupRequestGroupAssignment{MemberID: id, MemberAssignment: []byte(assignments[id])})
	}
	ch := make(chan *kmsg.SyncGroupResponse, 1)
	if code := h.c.startSync(ctxBG, req, ch); code != 0 {
		ch <- syncError(code)
	}
	return ch
}

func (h *harness) heartbeat(group, member string, gen int32) int16 {
	req := kmsg.NewPtrHeartbeatRequest()
	req.Version = 4
	req.Group, req.MemberID, req.Generation = group, member, gen
	return h.c.Heartbeat(ctxBG, req).ErrorCode
}

// describe returns the DescribeGroups entry of one group; it also serves as
// a barrier: everything queued on the group before it has run.
func (h *harness) describe(group string) kmsg.DescribeGroupsResponseGroup {
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Version = 5
	req.Groups = []string{group}
	return h.c.DescribeGroups(ctxBG, req).Groups[0]
}

func (h *harness) state(group string) string { return h.describe(group).State }

func recv[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(5 * time.Second):
		t.Fatal("no response")
	}
	var zero T
	return zero
}

// parked asserts that nothing arrived on ch; call it after a barrier.
func parked[T any](t *testing.T, ch <-chan T) {
	t.Helper()
	select {
	case v := <-ch:
		t.Fatalf("unexpected response %+v", v)
	default:
	}
}

// ---- offsets helpers ----

func commitReq(group, member string, gen int32, offsets map[string]map[int32]int64) *kmsg.OffsetCommitRequest {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version = 9
	req.Group, req.MemberID, req.Generation = group, member, gen
	for _, topic := range sortedKeys(offsets) {
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = topic
		ps := make([]int32, 0)
		for p := range offsets[topic] {
			ps = append(ps, p)
		}
		slices.Sort(ps)
		for _, p := range ps {
			rp := kmsg.NewOffsetCommitRequestTopicPartition()
			rp.Partition, rp.Offset = p, offsets[topic][p]
			rp.Metadata = kmsg.StringPtr("meta-" + topic)
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	return req
}

// commitCodes flattens an OffsetCommit response.
func commitCodes(resp *kmsg.OffsetCommitResponse) map[string]int16 {
	out := make(map[string]int16)
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			out[tpKey(t.Topic, p.Partition)] = p.ErrorCode
		}
	}
	return out
}

func tpKey(topic string, p int32) string { return topic + "/" + string(rune('0'+p)) }

func (h *harness) commit(group, member string, gen int32, offsets map[string]map[int32]int64) map[string]int16 {
	return commitCodes(h.c.OffsetCommit(ctxBG, commitReq(group, member, gen, offsets)))
}

// fetch returns offset and metadata per "topic/partition" (nil topics: all).
func (h *harness) fetch(group string, topics map[string][]int32) (int16, map[string]kmsg.OffsetFetchResponseGroupTopicPartition) {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version = 8
	rg := kmsg.NewOffsetFetchRequestGroup()
	rg.Group = group
	if topics != nil {
		rg.Topics = []kmsg.OffsetFetchRequestGroupTopic{}
	}
	for _, t := range sortedKeys(topics) {
		rt := kmsg.NewOffsetFetchRequestGroupTopic()
		rt.Topic, rt.Partitions = t, topics[t]
		rg.Topics = append(rg.Topics, rt)
	}
	req.Groups = []kmsg.OffsetFetchRequestGroup{rg}
	resp := h.c.OffsetFetch(ctxBG, req)
	out := make(map[string]kmsg.OffsetFetchResponseGroupTopicPartition)
	for _, t := range resp.Groups[0].Topics {
		for _, p := range t.Partitions {
			out[tpKey(t.Topic, p.Partition)] = p
		}
	}
	return resp.Groups[0].ErrorCode, out
}

var errBoom = errors.New("boom")

func allZero(t *testing.T, codes map[string]int16) {
	t.Helper()
	for k, c := range codes {
		if c != 0 {
			t.Fatalf("%s: error %d", k, c)
		}
	}
}

package txn

import (
	"context"
	"iter"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/internal/testsupport"
)

var ctxBG = context.Background()

// memLog is an in-memory __transaction_state partition. hold, when set,
// makes Append wait until it is closed (or ctx ends).
type memLog struct {
	mu      sync.Mutex
	records []Record
	failErr error
	hold    chan struct{}
	appends int
}

func (l *memLog) Append(ctx context.Context, recs []Record) error {
	l.mu.Lock()
	hold := l.hold
	l.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return err
	}
	if l.failErr != nil {
		return l.failErr
	}
	l.appends++
	for _, r := range recs {
		l.records = append(l.records, Record{Key: slices.Clone(r.Key), Value: slices.Clone(r.Value)})
	}
	return nil
}

func (l *memLog) fail(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.failErr = err
}

func (l *memLog) snapshot() []Record {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.records)
}

// states decodes the records written for id, in order.
func (l *memLog) states(t *testing.T, id string) []*txnState {
	t.Helper()
	var out []*txnState
	for _, r := range l.snapshot() {
		rid, st, err := decodeRecord(r)
		if err != nil {
			t.Fatal(err)
		}
		if rid == id {
			out = append(out, st)
		}
	}
	return out
}

func seqOf(recs []Record) iter.Seq2[Record, error] {
	return func(yield func(Record, error) bool) {
		for _, r := range recs {
			if !yield(r, nil) {
				return
			}
		}
	}
}

// fakeMarkers records the markers written. code, when set, answers each
// partition; hold makes WriteMarkers wait until it is closed.
type fakeMarkers struct {
	mu      sync.Mutex
	written []Marker
	code    func(m Marker, tp TopicPartition) int16
	hold    chan struct{}
	calls   atomic.Int64 // WriteMarkers calls started
}

func (f *fakeMarkers) WriteMarkers(ctx context.Context, m Marker) map[TopicPartition]int16 {
	f.calls.Add(1)
	f.mu.Lock()
	hold, code := f.hold, f.code
	f.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
			return nil
		}
	}
	out := make(map[TopicPartition]int16)
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, tp := range m.Partitions {
		var c int16
		if code != nil {
			c = code(m, tp)
		}
		out[tp] = c
	}
	m.Partitions = slices.Clone(m.Partitions)
	f.written = append(f.written, m)
	return out
}

func (f *fakeMarkers) set(code func(Marker, TopicPartition) int16, hold chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.code, f.hold = code, hold
}

func (f *fakeMarkers) all() []Marker {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.written)
}

// counterIDs allocates producer ids 1000, 1001, ...
type counterIDs struct {
	next atomic.Int64
	fail atomic.Bool
}

func (c *counterIDs) AllocateProducerID(context.Context) (int64, error) {
	if c.fail.Load() {
		return -1, context.DeadlineExceeded
	}
	return 1000 + c.next.Add(1) - 1, nil
}

// manualClock is the shared manual clock (testsupport.Clock): timers run,
// in deadline order and on the caller's goroutine, when the test advances
// the time.
type manualClock = testsupport.Clock

func newManualClock() *manualClock {
	return testsupport.NewClock(time.UnixMilli(1_700_000_000_000))
}

// waitFor polls cond until it holds or 10s pass, advancing the clock by
// step each time (0: the clock stays).
func waitFor(t *testing.T, clock *manualClock, step time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		if step > 0 {
			clock.Advance(step)
		}
		time.Sleep(time.Millisecond)
	}
}

// harness is a coordinator leading every partition of a small
// __transaction_state topic.
type harness struct {
	t       *testing.T
	clock   *manualClock
	logs    map[int32]*memLog
	markers *fakeMarkers
	ids     *counterIDs
	opts    Options
	c       *Coordinator
	epoch   int32
}

const testPartitions = 4

func newHarness(t *testing.T, opts *Options) *harness {
	t.Helper()
	h := &harness{t: t, clock: newManualClock(), logs: map[int32]*memLog{}, markers: &fakeMarkers{}, ids: &counterIDs{}, epoch: 1}
	if opts != nil {
		h.opts = *opts
	}
	h.opts.NumPartitions = testPartitions
	h.opts.Now, h.opts.AfterFunc = h.clock.Now, h.clock.AfterFunc
	h.opts.TopicPartitions = func(topic string) (int32, bool) {
		switch topic {
		case "topic", "other", OffsetsTopicName:
			return 3, true
		}
		return 0, false
	}
	h.c = NewCoordinator(h.markers, h.ids, h.opts)
	t.Cleanup(h.c.Close)
	for p := range int32(testPartitions) {
		h.logs[p] = &memLog{}
		if err := h.c.BecomeLeader(p, h.epoch, h.logs[p], seqOf(nil)); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

func (h *harness) logOf(id string) *memLog { return h.logs[h.c.PartitionFor(id)] }

// failover starts a new coordinator (the next leader) that loads the
// records of every partition, compacted when compact is set.
func (h *harness) failover(compact bool) *harness {
	h.t.Helper()
	n := &harness{t: h.t, clock: h.clock, logs: map[int32]*memLog{}, markers: h.markers, ids: h.ids, opts: h.opts, epoch: h.epoch + 1}
	h.c.Close()
	n.c = NewCoordinator(n.markers, n.ids, n.opts)
	h.t.Cleanup(n.c.Close)
	for p, l := range h.logs {
		recs := l.snapshot()
		if compact {
			recs = compactRecords(recs)
		}
		n.logs[p] = &memLog{records: slices.Clone(recs)}
		if err := n.c.BecomeLeader(p, n.epoch, n.logs[p], seqOf(recs)); err != nil {
			h.t.Fatal(err)
		}
	}
	return n
}

// compactRecords keeps the last record of every key and drops tombstones,
// as log compaction eventually does: a pass from the end keeps the first
// record seen per key.
func compactRecords(recs []Record) []Record {
	seen := map[string]bool{}
	var kept []Record
	for _, r := range slices.Backward(recs) {
		if !seen[string(r.Key)] {
			seen[string(r.Key)] = true
			kept = append(kept, r)
		}
	}
	slices.Reverse(kept)
	return slices.DeleteFunc(kept, func(r Record) bool { return r.Value == nil })
}

// ---- requests ----

// begin initializes id and opens a transaction on tps.
func (h *harness) begin(id string, tps ...TopicPartition) (int64, int16) {
	h.t.Helper()
	pid, epoch := h.mustInit(id)
	if code := h.add(id, pid, epoch, tps...); code != 0 {
		h.t.Fatalf("AddPartitionsToTxn(%s): code %d", id, code)
	}
	return pid, epoch
}

// mustEnd ends id's transaction (EndTxn v3).
func (h *harness) mustEnd(id string, pid int64, epoch int16, commit bool) {
	h.t.Helper()
	if code := h.end(id, pid, epoch, commit); code != 0 {
		h.t.Fatalf("EndTxn(%s, commit=%v): code %d", id, commit, code)
	}
}

// committing commits a transaction of id on tp0 with its markers held
// (PrepareCommit, CompleteCommit pending) until release is called.
func (h *harness) committing(id string) (pid int64, epoch int16, release func()) {
	h.t.Helper()
	pid, epoch = h.begin(id, tp0)
	release = h.holdMarkers()
	h.mustEnd(id, pid, epoch, true)
	return pid, epoch, release
}

// holdMarkers makes marker writes wait until release is called.
func (h *harness) holdMarkers() (release func()) {
	hold := make(chan struct{})
	h.markers.set(nil, hold)
	return func() {
		h.markers.set(nil, nil)
		close(hold)
	}
}

func (h *harness) initV(version int16, id *string, timeoutMs int32, pid int64, epoch int16) (int64, int16, int16) {
	req := kmsg.NewPtrInitProducerIDRequest()
	req.Version, req.TransactionalID, req.TransactionTimeoutMillis = version, id, timeoutMs
	req.ProducerID, req.ProducerEpoch = pid, epoch
	r := h.c.InitProducerID(ctxBG, req)
	return r.ProducerID, r.ProducerEpoch, r.ErrorCode
}

// init is InitProducerId v5 of a new producer with a 60s timeout.
func (h *harness) init(id string) (int64, int16, int16) {
	return h.initV(5, &id, 60000, -1, -1)
}

// mustInit initializes id, retrying CONCURRENT_TRANSACTIONS while an
// abort completes.
func (h *harness) mustInit(id string) (int64, int16) {
	h.t.Helper()
	var pid int64
	var epoch, code int16
	waitFor(h.t, h.clock, 0, "InitProducerId of "+id, func() bool {
		pid, epoch, code = h.init(id)
		return code != codeConcurrentTransactions
	})
	if code != 0 {
		h.t.Fatalf("InitProducerId(%s): code %d", id, code)
	}
	return pid, epoch
}

func (h *harness) addV(version int16, id string, pid int64, epoch int16, tps ...TopicPartition) map[TopicPartition]int16 {
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.Version, req.TransactionalID, req.ProducerID, req.ProducerEpoch = version, id, pid, epoch
	for _, tp := range tps {
		rt := kmsg.NewAddPartitionsToTxnRequestTopic()
		rt.Topic, rt.Partitions = tp.Topic, []int32{tp.Partition}
		req.Topics = append(req.Topics, rt)
	}
	resp := h.c.AddPartitionsToTxn(ctxBG, req)
	out := map[TopicPartition]int16{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			out[TopicPartition{t.Topic, p.Partition}] = p.ErrorCode
		}
	}
	return out
}

// add is AddPartitionsToTxn v3; it returns the one code of all partitions
// (-100 if they differ).
func (h *harness) add(id string, pid int64, epoch int16, tps ...TopicPartition) int16 {
	return oneCode(h.addV(3, id, pid, epoch, tps...))
}

func oneCode(codes map[TopicPartition]int16) int16 {
	first := true
	var code int16
	for _, c := range codes {
		if !first && c != code {
			return -100
		}
		code, first = c, false
	}
	return code
}

// broker sends AddPartitionsToTxn v5 for one transaction.
func (h *harness) broker(id string, pid int64, epoch int16, verifyOnly bool, tps ...TopicPartition) map[TopicPartition]int16 {
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.Version = 5
	tx := kmsg.NewAddPartitionsToTxnRequestTransaction()
	tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch, tx.VerifyOnly = id, pid, epoch, verifyOnly
	for _, tp := range tps {
		rt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
		rt.Topic, rt.Partitions = tp.Topic, []int32{tp.Partition}
		tx.Topics = append(tx.Topics, rt)
	}
	req.Transactions = append(req.Transactions, tx)
	resp := h.c.AddPartitionsToTxn(ctxBG, req)
	out := map[TopicPartition]int16{}
	for _, t := range resp.Transactions[0].Topics {
		for _, p := range t.Partitions {
			out[TopicPartition{t.Topic, p.Partition}] = p.ErrorCode
		}
	}
	return out
}

func (h *harness) addOffsets(version int16, id string, pid int64, epoch int16, group string) int16 {
	req := kmsg.NewPtrAddOffsetsToTxnRequest()
	req.Version, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group = version, id, pid, epoch, group
	return h.c.AddOffsetsToTxn(ctxBG, req).ErrorCode
}

func (h *harness) endV(version int16, id string, pid int64, epoch int16, commit bool) (int64, int16, int16) {
	req := kmsg.NewPtrEndTxnRequest()
	req.Version, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = version, id, pid, epoch, commit
	r := h.c.EndTxn(ctxBG, req)
	return r.ProducerID, r.ProducerEpoch, r.ErrorCode
}

func (h *harness) end(id string, pid int64, epoch int16, commit bool) int16 {
	_, _, code := h.endV(3, id, pid, epoch, commit)
	return code
}

func (h *harness) describe(id string) kmsg.DescribeTransactionsResponseTransactionState {
	req := kmsg.NewPtrDescribeTransactionsRequest()
	req.TransactionalIDs = []string{id}
	return h.c.DescribeTransactions(req).TransactionStates[0]
}

func (h *harness) state(id string) string { return h.describe(id).State }

// waitState waits until id is in state s (markers are written
// asynchronously).
func (h *harness) waitState(id string, s State) {
	h.t.Helper()
	waitFor(h.t, h.clock, 0, id+" in "+s.String(), func() bool { return h.state(id) == s.String() })
}

var tp0, tp1, tp2 = TopicPartition{"topic", 0}, TopicPartition{"topic", 1}, TopicPartition{"other", 2}

// metadataOf returns a copy of id's metadata.
func (h *harness) metadataOf(id string) txnMetadata {
	h.t.Helper()
	e, code := h.c.lookup(id, nil)
	if code != 0 || e == nil {
		h.t.Fatalf("lookup %s: %d", id, code)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	m := *e.md
	m.txnState = *m.clone()
	return m
}

// setEpoch moves id's epoch (as if many transactions ran).
func (h *harness) setEpoch(id string, epoch int16) {
	e, _ := h.c.lookup(id, nil)
	e.mu.Lock()
	defer e.mu.Unlock()
	e.md.producerEpoch = epoch
}

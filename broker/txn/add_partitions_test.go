package txn

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// These follow Kafka's TransactionCoordinatorTest for
// handleAddPartitionsToTransaction and handleVerifyPartitionsInTransaction.

func TestAddPartitionsErrors(t *testing.T) {
	h := newHarness(t, nil)
	pid, epoch := h.mustInit("t")
	for _, tc := range []struct {
		name    string
		version int16
		id      string
		pid     int64
		epoch   int16
		want    int16
	}{
		{"empty id", 3, "", pid, epoch, codeInvalidRequest},
		{"unknown id", 3, "nope", pid, epoch, codeInvalidProducerIDMapping},
		{"other producer id", 3, "t", pid + 1, epoch, codeInvalidProducerIDMapping},
		{"stale epoch", 3, "t", pid, epoch - 1, codeProducerFenced},
		{"stale epoch v2", 2, "t", pid, epoch - 1, codeProducerFenced},
		{"stale epoch v1", 1, "t", pid, epoch - 1, codeInvalidProducerEpoch},
		{"stale epoch v0", 0, "t", pid, epoch - 1, codeInvalidProducerEpoch},
		{"future epoch", 3, "t", pid, epoch + 1, codeProducerFenced},
	} {
		if got := oneCode(h.addV(tc.version, tc.id, tc.pid, tc.epoch, tp0)); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
	// Unknown topics and partitions: UNKNOWN_TOPIC_OR_PARTITION, the rest
	// is not attempted.
	codes := h.addV(3, "t", pid, epoch, tp0, TopicPartition{"missing", 0}, TopicPartition{"topic", 9})
	if codes[tp0] != codeOperationNotAttempted || codes[TopicPartition{"missing", 0}] != codeUnknownTopicOrPartition ||
		codes[TopicPartition{"topic", 9}] != codeUnknownTopicOrPartition {
		t.Errorf("unknown topic: %v", codes)
	}
	if h.state("t") != "Empty" {
		t.Errorf("refused requests changed the state: %s", h.state("t"))
	}
}

func TestAddPartitionsStartsTransaction(t *testing.T) {
	h := newHarness(t, nil)
	pid, epoch := h.mustInit("t")
	h.clock.Advance(5000)
	start := h.clock.Now().UnixMilli()
	if code := h.add("t", pid, epoch, tp0, tp1); code != 0 {
		t.Fatal(code)
	}
	d := h.describe("t")
	if d.State != "Ongoing" || d.StartTimestamp != start || len(d.Topics) != 1 || len(d.Topics[0].Partitions) != 2 {
		t.Fatalf("describe: %+v", d)
	}
	l := h.logOf("t")
	appends := len(l.snapshot())
	// Already in the transaction: answered without a write.
	if code := h.add("t", pid, epoch, tp1); code != 0 || len(l.snapshot()) != appends {
		t.Fatalf("re-add: code %d, %d records (had %d)", code, len(l.snapshot()), appends)
	}
	h.clock.Advance(1000)
	if code := h.add("t", pid, epoch, tp2); code != 0 {
		t.Fatal(code)
	}
	st := l.states(t, "t")
	last := st[len(st)-1]
	if last.state != Ongoing || len(last.partitions) != 3 || last.startMs != start || last.clientVersion != TV0 {
		t.Fatalf("record: %v", last)
	}
}

// TestAddPartitionsWhileCompleting: PrepareCommit with its markers pending
// answers CONCURRENT_TRANSACTIONS, as does a pending write.
func TestAddPartitionsWhileCompleting(t *testing.T) {
	h := newHarness(t, nil)
	pid, epoch, release := h.committing("t")
	if code := h.add("t", pid, epoch, tp1); code != codeConcurrentTransactions {
		t.Fatalf("during markers: %d", code)
	}
	if codes := h.broker("t", pid, epoch, true, tp0); codes[tp0] != codeConcurrentTransactions {
		t.Fatalf("verify during markers: %v", codes)
	}
	release()
	h.waitState("t", CompleteCommit)
	if code := h.add("t", pid, epoch, tp1); code != 0 {
		t.Fatalf("next transaction: %d", code)
	}
}

func TestAddPartitionsLogFailure(t *testing.T) {
	h := newHarness(t, nil)
	pid, epoch := h.mustInit("t")
	h.logOf("t").fail(kerr.NotEnoughReplicas)
	if code := h.add("t", pid, epoch, tp0); code != codeCoordinatorNotAvailable {
		t.Fatalf("log down: %d", code)
	}
	if h.state("t") != "Empty" {
		t.Fatal("memory changed before the write")
	}
	h.logOf("t").fail(nil)
	if code := h.add("t", pid, epoch, tp0); code != 0 {
		t.Fatalf("retry: %d", code)
	}
}

// TestVerifyPartitions is KIP-890 part 1: the partition leader asks
// whether a transactional produce's partition is in the transaction.
func TestVerifyPartitions(t *testing.T) {
	h := newHarness(t, nil)
	pid, epoch := h.begin("t", tp0)
	codes := h.broker("t", pid, epoch, true, tp0, tp1)
	if codes[tp0] != 0 || codes[tp1] != codeTransactionAbortable {
		t.Fatalf("verify: %v", codes)
	}
	for _, tc := range []struct {
		name  string
		id    string
		pid   int64
		epoch int16
		want  int16
	}{
		{"empty id", "", pid, epoch, codeInvalidRequest},
		{"unknown id", "nope", pid, epoch, codeInvalidProducerIDMapping},
		{"other producer", "t", pid + 1, epoch, codeInvalidProducerIDMapping},
		{"stale epoch", "t", pid, epoch - 1, codeProducerFenced},
	} {
		if got := oneCode(h.broker(tc.id, tc.pid, tc.epoch, true, tp0)); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
	if codes := h.broker("t", pid, epoch, true, TopicPartition{"missing", 1}, tp0); codes[tp0] != codeOperationNotAttempted {
		t.Errorf("unknown topic: %v", codes)
	}
	if st := h.logOf("t").states(t, "t"); len(st) != 2 {
		t.Fatalf("verification wrote: %d records", len(st))
	}
}

// TestBrokerAddsPartitions is KIP-890 part 2: a produce under transaction
// version 2 adds its partition through AddPartitionsToTxn v5; several
// transactions go in one request.
func TestBrokerAddsPartitions(t *testing.T) {
	h := newHarness(t, nil)
	pa, ea := h.mustInit("a")
	pb, eb := h.mustInit("b")
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.Version = 5
	for _, tx := range []struct {
		id    string
		pid   int64
		epoch int16
	}{{"a", pa, ea}, {"b", pb, eb + 1}} {
		rt := kmsg.NewAddPartitionsToTxnRequestTransaction()
		rt.TransactionalID, rt.ProducerID, rt.ProducerEpoch = tx.id, tx.pid, tx.epoch
		topic := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
		topic.Topic, topic.Partitions = "topic", []int32{0, 1}
		rt.Topics = []kmsg.AddPartitionsToTxnRequestTransactionTopic{topic}
		req.Transactions = append(req.Transactions, rt)
	}
	resp := h.c.AddPartitionsToTxn(ctxBG, req)
	if len(resp.Transactions) != 2 || resp.Transactions[0].TransactionalID != "a" || resp.Transactions[1].TransactionalID != "b" {
		t.Fatalf("response: %+v", resp)
	}
	for i, want := range []int16{0, codeProducerFenced} {
		for _, p := range resp.Transactions[i].Topics[0].Partitions {
			if p.ErrorCode != want {
				t.Errorf("transaction %d partition %d: %d, want %d", i, p.Partition, p.ErrorCode, want)
			}
		}
	}
	if m := h.metadataOf("a"); m.state != Ongoing || m.clientVersion != TV2 || len(m.partitions) != 2 {
		t.Fatalf("a: %v", &m.txnState)
	}
}

func TestAddOffsetsToTxn(t *testing.T) {
	h := newHarness(t, &Options{OffsetsPartitionFor: func(g string) int32 { return int32(len(g)) }})
	pid, epoch := h.mustInit("t")
	if code := h.addOffsets(3, "t", pid, epoch, "group"); code != 0 {
		t.Fatal(code)
	}
	m := h.metadataOf("t")
	if _, ok := m.partitions[TopicPartition{OffsetsTopicName, 5}]; !ok || m.state != Ongoing {
		t.Fatalf("offsets partition not added: %v", &m.txnState)
	}
	for _, tc := range []struct {
		version int16
		id      string
		pid     int64
		epoch   int16
		want    int16
	}{
		{3, "", pid, epoch, codeInvalidRequest},
		{3, "nope", pid, epoch, codeInvalidProducerIDMapping},
		{3, "t", pid + 1, epoch, codeInvalidProducerIDMapping},
		{3, "t", pid, epoch + 1, codeProducerFenced},
		{1, "t", pid, epoch + 1, codeInvalidProducerEpoch},
	} {
		if got := h.addOffsets(tc.version, tc.id, tc.pid, tc.epoch, "g"); got != tc.want {
			t.Errorf("%+v: %d", tc, got)
		}
	}
	// The default is Kafka's: the group's hash over 50 partitions.
	d := newHarness(t, nil)
	pid, epoch = d.mustInit("t")
	d.addOffsets(4, "t", pid, epoch, "my-transactional-id")
	if m := d.metadataOf("t"); len(m.partitions) != 1 {
		t.Fatal("not added")
	} else if _, ok := m.partitions[TopicPartition{OffsetsTopicName, 46}]; !ok {
		t.Fatalf("partitions %v", m.partitions)
	}
}

// TestDecideAddPartitions covers the state checks one by one, including
// states the API cannot reach without races.
func TestDecideAddPartitions(t *testing.T) {
	for _, tc := range []struct {
		state   State
		pending bool
		want    int16
		writes  bool
		illegal bool
	}{
		{Empty, false, 0, true, false},
		{Ongoing, false, 0, true, false},
		{CompleteCommit, false, 0, true, false},
		{CompleteAbort, false, 0, true, false},
		{PrepareCommit, false, codeConcurrentTransactions, false, false},
		{PrepareAbort, false, codeConcurrentTransactions, false, false},
		{Ongoing, true, codeConcurrentTransactions, false, false},
		{Dead, false, 0, false, true},
		{PrepareEpochFence, false, 0, false, true},
	} {
		m := metadataAt(tc.state, 1, 3, -1)
		if tc.pending {
			m.pending = m.clone()
		}
		d := decideAddPartitions(m, 1, 3, []TopicPartition{{"x", 0}}, TV0, 5000)
		if d.code != tc.want || (d.t != nil) != tc.writes || (d.internal != nil) != tc.illegal {
			t.Errorf("%v pending=%v: %+v", tc.state, tc.pending, d)
		}
	}
}

// TestCompletionWait: under transaction version 2 a producer's first
// produce of its next transaction meets the previous one's markers still
// being written; with CompletionWait the coordinator holds the add until
// the completion ends and then adds the partition, rather than answer
// CONCURRENT_TRANSACTIONS (franz-go backs off 250 ms and more after it,
// and fails the batches pipelined behind). Past CompletionWait the client
// gets CONCURRENT_TRANSACTIONS as before.
func TestCompletionWait(t *testing.T) {
	h := newHarness(t, &Options{ConcurrentWait: time.Second})
	pid, epoch := h.mustInit("t")
	allZero(t, h.broker("t", pid, epoch, false, tp0))
	add := func(epoch int16) chan map[TopicPartition]int16 {
		got := make(chan map[TopicPartition]int16, 1)
		go func() { got <- h.broker("t", pid, epoch, false, tp1) }()
		return got
	}
	waits := func(n int64) func() bool { return func() bool { return h.c.Stats().ConcurrentWaits == n } }

	release := h.holdMarkers()
	_, next, code := h.endV(5, "t", pid, epoch, true)
	if code != 0 || next != epoch+1 {
		t.Fatalf("commit: epoch %d, code %d", next, code)
	}
	got := add(next)
	waitFor(t, h.clock, 0, "the add to wait for the completion", waits(1))
	select {
	case codes := <-got:
		t.Fatalf("answered while the markers are written: %v", codes)
	default:
	}
	release()
	allZero(t, <-got)
	if md := h.metadataOf("t"); md.state != Ongoing || len(md.partitions) != 1 {
		t.Fatalf("after the wait: %v %v", md.state, md.partitions)
	}

	// Markers that take longer than CompletionWait: the client gets
	// CONCURRENT_TRANSACTIONS once it passed.
	release = h.holdMarkers()
	defer release()
	if _, next, code = h.endV(5, "t", pid, next, true); code != 0 {
		t.Fatalf("second commit: %d", code)
	}
	got = add(next)
	waitFor(t, h.clock, 0, "the second add to wait", waits(2))
	h.clock.Advance(time.Second)
	if codes := <-got; codes[tp1] != codeConcurrentTransactions {
		t.Fatalf("past the wait: %v", codes)
	}
}

// TestConcurrentAddsWait: under transaction version 2 the leaders of a
// transaction's partitions add them at once; with ConcurrentWait an add
// that meets another's state write in flight waits for it and then adds
// its partition, rather than answer CONCURRENT_TRANSACTIONS.
func TestConcurrentAddsWait(t *testing.T) {
	h := newHarness(t, &Options{ConcurrentWait: time.Second})
	pid, epoch := h.mustInit("t")
	l := h.logOf("t")
	hold := make(chan struct{})
	l.mu.Lock()
	l.hold = hold
	l.mu.Unlock()
	first, second := make(chan map[TopicPartition]int16, 1), make(chan map[TopicPartition]int16, 1)
	go func() { first <- h.broker("t", pid, epoch, false, tp0) }()
	waitFor(t, h.clock, 0, "the first add's write", func() bool { return h.metadataOf("t").pending != nil })
	go func() { second <- h.broker("t", pid, epoch, false, tp1) }()
	waitFor(t, h.clock, 0, "the second add to wait", func() bool { return h.c.Stats().ConcurrentWaits == 1 })
	l.mu.Lock()
	l.hold = nil
	l.mu.Unlock()
	close(hold)
	allZero(t, <-first)
	allZero(t, <-second)
	if md := h.metadataOf("t"); md.state != Ongoing || len(md.partitions) != 2 {
		t.Fatalf("after both adds: %v %v", md.state, md.partitions)
	}
}

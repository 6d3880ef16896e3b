package txn

import (
	"math"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// These follow Kafka's TransactionCoordinatorTest for handleEndTransaction.

// TestEndTxnCommit: PrepareCommit is written and answered, markers go to
// every partition with the coordinator epoch, then CompleteCommit.
func TestEndTxnCommit(t *testing.T) {
	for _, commit := range []bool{true, false} {
		h := newHarness(t, nil)
		pid, epoch := h.begin("t", tp0, tp2)
		h.mustEnd("t", pid, epoch, commit)
		want := CompleteAbort
		if commit {
			want = CompleteCommit
		}
		h.waitState("t", want)
		st := h.logOf("t").states(t, "t")
		prep, done := st[len(st)-2], st[len(st)-1]
		if prep.state != resultState(commit) || len(prep.partitions) != 2 || prep.producerEpoch != epoch {
			t.Fatalf("prepare record: %v", prep)
		}
		if done.state != want || len(done.partitions) != 0 || done.startMs != prep.startMs {
			t.Fatalf("complete record: %v", done)
		}
		mk := h.markers.all()
		if len(mk) != 1 || mk[0].Commit != commit || mk[0].ProducerID != pid || mk[0].ProducerEpoch != epoch ||
			mk[0].CoordinatorEpoch != h.epoch || len(mk[0].Partitions) != 2 || mk[0].TransactionVersion != TV0 {
			t.Fatalf("markers: %+v", mk)
		}
		st0 := h.c.Stats()
		if commit && st0.Commits != 1 || !commit && st0.Aborts != 1 || st0.Open != 0 {
			t.Fatalf("stats: %+v", st0)
		}
	}
}

func TestEndTxnErrors(t *testing.T) {
	h := newHarness(t, nil)
	pid, epoch := h.mustInit("t")
	for _, tc := range []struct {
		name    string
		version int16
		id      string
		pid     int64
		epoch   int16
		commit  bool
		want    int16
	}{
		{"empty id", 3, "", pid, epoch, true, codeInvalidRequest},
		{"unknown id", 3, "nope", pid, epoch, true, codeInvalidProducerIDMapping},
		{"other producer id", 3, "t", pid + 1, epoch, true, codeInvalidProducerIDMapping},
		{"stale epoch", 3, "t", pid, epoch - 1, true, codeProducerFenced},
		{"stale epoch v1", 1, "t", pid, epoch - 1, true, codeInvalidProducerEpoch},
		{"future epoch", 2, "t", pid, epoch + 1, true, codeProducerFenced},
		{"commit with no transaction", 3, "t", pid, epoch, true, codeInvalidTxnState},
		{"abort with no transaction", 3, "t", pid, epoch, false, codeInvalidTxnState},
		{"TV2 commit with no transaction", 5, "t", pid, epoch, true, codeInvalidTxnState},
	} {
		if _, _, got := h.endV(tc.version, tc.id, tc.pid, tc.epoch, tc.commit); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}

// TestEndTxnRetries (TV0/TV1): a commit retried after it completed
// succeeds; the other result is INVALID_TXN_STATE; while the markers are
// written, CONCURRENT_TRANSACTIONS.
func TestEndTxnRetries(t *testing.T) {
	h := newHarness(t, nil)
	pid, epoch, release := h.committing("t")
	for _, commit := range []bool{true, false} {
		if code := h.end("t", pid, epoch, commit); code != codeConcurrentTransactions {
			t.Fatalf("commit=%v while completing: %d", commit, code)
		}
	}
	if d := h.describe("t"); d.State != "PrepareCommit" {
		t.Fatalf("state %s", d.State)
	}
	release()
	h.waitState("t", CompleteCommit)
	if code := h.end("t", pid, epoch, true); code != 0 {
		t.Fatalf("commit retried: %d", code)
	}
	if code := h.end("t", pid, epoch, false); code != codeInvalidTxnState {
		t.Fatalf("abort after commit: %d", code)
	}
}

// TestEndTxnV2 is KIP-890 part 2: each EndTxn v5 bumps the epoch and
// answers the producer id and epoch of the next transaction; a retry
// (the epoch before the bump) gets the same answer.
func TestEndTxnV2(t *testing.T) {
	h := newHarness(t, nil)
	pid, epoch := h.mustInit("t")
	allZero(t, h.broker("t", pid, epoch, false, tp0))
	release := h.holdMarkers()
	p, e, code := h.endV(5, "t", pid, epoch, true)
	if code != 0 || p != pid || e != epoch+1 {
		t.Fatalf("commit: %d/%d %d", p, e, code)
	}
	if _, _, code := h.endV(5, "t", pid, epoch, true); code != codeConcurrentTransactions {
		t.Fatalf("retry while completing: %d", code)
	}
	release()
	h.waitState("t", CompleteCommit)
	if mk := h.markers.all(); mk[0].ProducerEpoch != epoch+1 || mk[0].TransactionVersion != TV2 {
		t.Fatalf("markers carry the bumped epoch: %+v", mk)
	}
	if p2, e2, code := h.endV(5, "t", pid, epoch, true); code != 0 || p2 != pid || e2 != epoch+1 {
		t.Fatalf("retry: %d/%d %d", p2, e2, code)
	}
	if _, _, code := h.endV(5, "t", pid, epoch, false); code != codeInvalidTxnState {
		t.Fatalf("abort retried after commit: %d", code)
	}
	if _, _, code := h.endV(5, "t", pid, epoch-1, true); code != codeProducerFenced {
		t.Fatalf("two epochs back: %d", code)
	}
	// The next EndTxn carries the new epoch: an abort with nothing
	// added still bumps (franz-go aborts when every produce failed).
	p3, e3, code := h.endV(5, "t", pid, epoch+1, false)
	if code != 0 || p3 != pid || e3 != epoch+2 {
		t.Fatalf("empty abort: %d/%d %d", p3, e3, code)
	}
	h.waitState("t", CompleteAbort)
	if _, _, code := h.endV(5, "t", pid, epoch+1, false); code != 0 {
		t.Fatalf("empty abort retried: %d", code)
	}
	if _, _, code := h.endV(5, "t", pid, epoch+2, true); code != codeInvalidTxnState {
		t.Fatalf("commit with no transaction: %d", code)
	}
	if _, _, code := h.endV(5, "t", pid, epoch+2, false); code != 0 {
		t.Fatalf("a second empty abort: %d", code)
	}
}

// TestEndTxnV2Overflow: the EndTxn that exhausts the epoch moves the
// producer to a new producer id with epoch 0; its retry with the old id
// is recognised.
func TestEndTxnV2Overflow(t *testing.T) {
	h := newHarness(t, nil)
	pid, _ := h.mustInit("t")
	last := int16(math.MaxInt16 - 1)
	h.setEpoch("t", last)
	allZero(t, h.broker("t", pid, last, false, tp0))
	p, e, code := h.endV(5, "t", pid, last, true)
	if code != 0 || p == pid || e != 0 {
		t.Fatalf("overflow: %d/%d %d", p, e, code)
	}
	h.waitState("t", CompleteCommit)
	if mk := h.markers.all(); mk[0].ProducerID != pid || mk[0].ProducerEpoch != math.MaxInt16 {
		t.Fatalf("markers carry the old id and MaxInt16: %+v", mk)
	}
	if p2, e2, code := h.endV(5, "t", pid, last, true); code != 0 || p2 != p || e2 != 0 {
		t.Fatalf("retry after overflow: %d/%d %d", p2, e2, code)
	}
	if _, _, code := h.endV(5, "t", pid, last-1, true); code != codeInvalidProducerIDMapping {
		t.Fatalf("old id, other epoch: %d", code)
	}
	allZero(t, h.broker("t", p, 0, false, tp1))
	if _, e, code := h.endV(5, "t", p, 0, true); code != 0 || e != 1 {
		t.Fatalf("next transaction on the new id: %d %d", e, code)
	}
}

// TestDecideEndTxn covers every state for both protocol versions,
// including those the API only reaches in races.
func TestDecideEndTxn(t *testing.T) {
	type want struct {
		code    int16
		writes  bool
		illegal bool
	}
	ok, none := want{writes: true}, want{}
	bad, busy, ill := want{code: codeInvalidTxnState}, want{code: codeConcurrentTransactions}, want{illegal: true}
	for _, tc := range []struct {
		state          State
		commit         bool
		v1, v2, v2next want // v2: the epoch of the state; v2next: a retry (epoch-1)
	}{
		{Ongoing, true, ok, ok, want{code: codeProducerFenced}},
		{Ongoing, false, ok, ok, want{code: codeProducerFenced}},
		{Empty, true, bad, bad, want{code: codeProducerFenced}},
		{Empty, false, bad, ok, want{code: codeProducerFenced}},
		{CompleteCommit, true, none, bad, none},
		{CompleteCommit, false, bad, ok, bad},
		{CompleteAbort, true, bad, bad, bad},
		{CompleteAbort, false, none, ok, none},
		{PrepareCommit, true, busy, want{code: codeProducerFenced}, busy},
		{PrepareCommit, false, bad, want{code: codeProducerFenced}, bad},
		{PrepareAbort, false, busy, want{code: codeProducerFenced}, busy},
		{PrepareAbort, true, bad, want{code: codeProducerFenced}, bad},
		{Dead, true, ill, ill, want{code: codeProducerFenced}},
	} {
		check := func(name string, d decision, w want) {
			if d.code != w.code || (d.t != nil) != w.writes || (d.internal != nil) != w.illegal {
				t.Errorf("%v commit=%v %s: %+v, want %+v", tc.state, tc.commit, name, d, w)
			}
		}
		check("v1", decideEndTxnV1(metadataAt(tc.state, 1, 5, -1), 1, 5, tc.commit, 9000), tc.v1)
		check("v2", decideEndTxnV2(metadataAt(tc.state, 1, 5, -1), 1, 5, tc.commit, -1, 9000), tc.v2)
		check("v2 retry", decideEndTxnV2(metadataAt(tc.state, 1, 5, -1), 1, 4, tc.commit, -1, 9000), tc.v2next)
	}
	// A pending transition answers CONCURRENT_TRANSACTIONS, after the
	// producer checks under TV0 and before them under TV2.
	m := metadataAt(Ongoing, 1, 5, -1)
	m.pending = m.clone()
	if d := decideEndTxnV1(m, 2, 5, true, 9000); d.code != codeInvalidProducerIDMapping {
		t.Errorf("v1 pending, other id: %+v", d)
	}
	if d := decideEndTxnV1(m, 1, 5, true, 9000); d.code != codeConcurrentTransactions {
		t.Errorf("v1 pending: %+v", d)
	}
	if d := decideEndTxnV2(m, 2, 5, true, -1, 9000); d.code != codeConcurrentTransactions {
		t.Errorf("v2 pending, other id: %+v", d)
	}
	// Exhausting the epoch needs a new producer id first.
	m = metadataAt(Ongoing, 1, math.MaxInt16-1, -1)
	if d := decideEndTxnV2(m, 1, math.MaxInt16-1, true, -1, 9000); !d.needPID {
		t.Errorf("overflow without a new id: %+v", d)
	}
}

// TestMarkerRetries: retriable marker errors are retried after the
// backoff, a fenced marker stops the completion, unknown errors are
// retried with a log line.
func TestMarkerRetries(t *testing.T) {
	h := newHarness(t, nil)
	pid, epoch := h.begin("t", tp0, tp1, tp2)
	failures := map[TopicPartition][]int16{
		tp0: {codeNotLeaderOrFollower, codeRequestTimedOut},
		tp1: {kerr.InvalidRecord.Code},
		tp2: {codeUnsupportedForMessageFormat},
	}
	h.markers.set(func(m Marker, tp TopicPartition) int16 {
		if f := failures[tp]; len(f) > 0 {
			failures[tp] = f[1:]
			return f[0]
		}
		return 0
	}, nil)
	h.mustEnd("t", pid, epoch, true)
	waitFor(t, h.clock, 100*time.Millisecond, "markers retried", func() bool { return h.state("t") == "CompleteCommit" })
	mk := h.markers.all()
	// Round 1: all; round 2: tp0 (not leader) and tp1 (unexpected error);
	// round 3: tp0 (timed out). tp2 cannot take markers: done.
	if len(mk) != 3 || len(mk[0].Partitions) != 3 || len(mk[1].Partitions) != 2 || len(mk[2].Partitions) != 1 || mk[2].Partitions[0] != tp0 {
		t.Fatalf("marker rounds: %+v", mk)
	}

	// INVALID_PRODUCER_EPOCH: the transaction is left alone.
	if code := h.add("t", pid, epoch, tp0); code != 0 {
		t.Fatal(code)
	}
	h.markers.set(func(Marker, TopicPartition) int16 { return codeInvalidProducerEpoch }, nil)
	h.mustEnd("t", pid, epoch, false)
	waitFor(t, h.clock, 0, "fenced markers", func() bool { return len(h.markers.all()) == 4 })
	h.clock.Advance(time.Second)
	if s := h.state("t"); s != "PrepareAbort" {
		t.Fatalf("state after fenced markers: %s", s)
	}
	if code := h.end("t", pid, epoch, false); code != codeConcurrentTransactions {
		t.Fatalf("stays pending: %d", code)
	}
}

// TestCompletionWriteRetried: CompleteX is retried until the state log
// takes it.
func TestCompletionWriteRetried(t *testing.T) {
	h := newHarness(t, nil)
	_, _, release := h.committing("t")
	l := h.logOf("t")
	l.fail(kerr.NotEnoughReplicas)
	release()
	waitFor(t, h.clock, 0, "markers written", func() bool { return len(h.markers.all()) == 1 })
	h.clock.Advance(time.Second)
	if s := h.state("t"); s != "PrepareCommit" {
		t.Fatalf("completed without the log: %s", s)
	}
	l.fail(nil)
	waitFor(t, h.clock, 100*time.Millisecond, "completion", func() bool { return h.state("t") == "CompleteCommit" })
}

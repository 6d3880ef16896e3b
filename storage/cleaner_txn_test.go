package storage

import (
	"testing"
	"time"

	"github.com/kbroker/kbroker/record"
)

// txnBatch is a transactional batch of producer pid (epoch 0) starting at
// sequence seq.
func txnBatch(pid int64, seq int32, recs ...kv) kvBatch {
	b := batchOf(recs...)
	b.pid, b.epoch, b.seq, b.txn = pid, 0, seq, true
	return b
}

func appendTxnBatch(t *testing.T, l *Log, b kvBatch) {
	t.Helper()
	guard := l.BeginTxnVerification(b.pid, b.epoch, false)
	if _, err := l.AppendAsLeader(leaderBatches(t, b.build(t)), 0, AppendOptions{TxnVerification: guard}); err != nil {
		t.Fatalf("transactional append: %v", err)
	}
}

// dataRecords lists key=value of the log's data records (markers skipped).
func dataRecords(t *testing.T, l *Log) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, b := range readBatches(t, l) {
		if h, _ := record.ParseBatchHeader(b); h.IsControl() {
			continue
		}
		for _, r := range decodeGot(t, b) {
			out[r.key+"="+r.value] = true
		}
	}
	return out
}

func markers(t *testing.T, l *Log) map[int64]record.BatchHeader {
	t.Helper()
	out := map[int64]record.BatchHeader{}
	for _, b := range readBatches(t, l) {
		if h, _ := record.ParseBatchHeader(b); h.IsControl() {
			out[h.ProducerID] = h
		}
	}
	return out
}

// Kafka's cleaner rules for transactional data: aborted batches go (their
// keys never shadow committed ones), markers stay while their
// transaction's data is being removed or read, then get a delete horizon
// and go; the cleaned segment keeps the aborted index entries still needed.
func TestCompactTransactions(t *testing.T) {
	e := newTestEnv(t)
	cfg := compactConfig()
	cfg.DeleteRetentionMs = time.Hour.Milliseconds()
	l := e.open(cfg, LogState{})
	defer l.Close()

	e.clock.Advance(2 * time.Minute)
	appendTxnBatch(t, l, txnBatch(10, 0, rec("k1", "a1", 0), rec("k2", "a2", 0))) // 0-1
	mustEndTxn(t, l, 10, 0, true)                                                 // 2
	appendInNewSegment(t, e.clock, l)
	appendTxnBatch(t, l, txnBatch(11, 0, rec("k1", "aborted", 0))) // 3
	appendTxnBatch(t, l, txnBatch(12, 0, rec("k3", "c", 0)))       // 4
	mustEndTxn(t, l, 11, 0, false)                                 // 5
	mustEndTxn(t, l, 12, 0, true)                                  // 6
	appendInNewSegment(t, e.clock, l, batchOf(rec("k9", "z", 0)))  // 7: active segment
	l.SetHighWatermark(l.LogEndOffset())
	abortedBefore := l.AbortedTransactions(0, l.LogEndOffset())
	if len(abortedBefore) != 1 || abortedBefore[0].ProducerID != 11 {
		t.Fatalf("aborted before cleaning %+v", abortedBefore)
	}
	// The producers are gone (expired), so nothing is kept for their state.
	l.ProducerIDExpire(e.clock.Now().Add(time.Hour), time.Minute)

	st := mustCompact(t, l, e.clock.Now())
	if st.AbortedBatchesRemoved != 1 {
		t.Fatalf("stats %+v", st)
	}
	data := dataRecords(t, l)
	for _, want := range []string{"k1=a1", "k2=a2", "k3=c", "k9=z"} {
		if !data[want] {
			t.Fatalf("record %s missing after cleaning: %v", want, data)
		}
	}
	if data["k1=aborted"] {
		t.Fatalf("aborted record kept: %v", data)
	}
	ms := markers(t, l)
	for _, pid := range []int64{10, 11, 12} {
		if h, ok := ms[pid]; !ok || h.Attributes&record.AttrDeleteHorizon != 0 {
			t.Fatalf("producer %d's marker after the first cleaning: %+v (present %v)", pid, h, ok)
		}
	}
	if got := l.AbortedTransactions(0, l.LogEndOffset()); len(got) != 1 || got[0] != abortedBefore[0] {
		t.Fatalf("aborted after the first cleaning %+v", got)
	}

	// Second cleaning: the aborted data is gone, so its marker and index
	// entry may go: the marker gets a horizon, the entry is not copied.
	appendInNewSegment(t, e.clock, l, batchOf(rec("k8", "y", 0)))
	l.SetHighWatermark(l.LogEndOffset())
	mustCompact(t, l, e.clock.Now())
	ms = markers(t, l)
	if h := ms[11]; h.Attributes&record.AttrDeleteHorizon == 0 {
		t.Fatalf("abort marker without a horizon after the second cleaning: %+v", h)
	}
	if h := ms[10]; h.Attributes&record.AttrDeleteHorizon != 0 {
		t.Fatalf("a commit marker whose data stays got a horizon: %+v", h)
	}
	if got := l.AbortedTransactions(0, l.LogEndOffset()); len(got) != 0 {
		t.Fatalf("aborted after the second cleaning %+v", got)
	}
	if files := segmentFiles(t, l.Dir()); files["00000000000000000000.txnindex"] {
		t.Fatal("the cleaned segment still has a transaction index")
	}

	// After delete.retention.ms the marker goes.
	e.clock.Advance(2 * time.Hour)
	appendInNewSegment(t, e.clock, l, batchOf(rec("k7", "x", 0)))
	l.SetHighWatermark(l.LogEndOffset())
	st = mustCompact(t, l, e.clock.Now())
	if _, ok := markers(t, l)[11]; ok || st.MarkersRemoved != 1 {
		t.Fatalf("abort marker kept past its horizon (stats %+v)", st)
	}
}

// Nothing at or after the last stable offset is cleaned: an open
// transaction in an old segment holds the cleaner back.
func TestCompactStopsAtLastStableOffset(t *testing.T) {
	e := newTestEnv(t)
	l := e.open(compactConfig(), LogState{})
	defer l.Close()
	e.clock.Advance(2 * time.Minute)
	for _, b := range updates(0, 4, 2, 0) {
		if _, err := l.AppendAsLeader(leaderBatches(t, b.build(t)), 0, AppendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	appendInNewSegment(t, e.clock, l)
	appendTxnBatch(t, l, txnBatch(5, 0, rec("k0", "open", 0))) // 4: never ends
	appendInNewSegment(t, e.clock, l, updates(5, 4, 2, 0)...)
	appendInNewSegment(t, e.clock, l, batchOf(rec("z", "z", 0)))
	l.SetHighWatermark(l.LogEndOffset())
	checkLSO(t, l, 4)
	st := mustCompact(t, l, e.clock.Now())
	if st.EndOffset > 4 {
		t.Fatalf("cleaned up to %d, past the LSO 4", st.EndOffset)
	}
	if data := dataRecords(t, l); len(data) != 2+1+4+1 {
		t.Fatalf("records after cleaning below the LSO: %v", data)
	}
}

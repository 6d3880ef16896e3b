package storage

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/kbroker/kbroker/record"
)

// txnProduce appends n transactional records of producer pid at epoch and
// sequence seq, verifying with the log first as the broker does with the
// coordinator.
func txnProduce(t *testing.T, l *Log, pid int64, epoch int16, seq int32, n int) AppendInfo {
	t.Helper()
	info, err := txnAppend(t, l, pid, epoch, seq, n, l.BeginTxnVerification(pid, epoch, false))
	if err != nil {
		t.Fatalf("transactional append of producer %d: %v", pid, err)
	}
	return info
}

func txnAppend(t *testing.T, l *Log, pid int64, epoch int16, seq int32, n int, guard VerificationGuard) (AppendInfo, error) {
	t.Helper()
	s := spec(n, 0).idempotent(pid, epoch, seq)
	s.txn = true
	return l.AppendAsLeader(leaderBatches(t, s.build(t)), 0, AppendOptions{TxnVerification: guard})
}

// appendMarker appends a marker as WriteTxnMarkers does.
func appendMarker(t *testing.T, l *Log, pid int64, epoch int16, commit bool, coordinatorEpoch int32) (AppendInfo, error) {
	t.Helper()
	typ := record.ControlAbort
	if commit {
		typ = record.ControlCommit
	}
	b := record.NewEndTxnMarkerBatch(pid, epoch, 0, record.EndTxnMarker{Type: typ, CoordinatorEpoch: coordinatorEpoch})
	return l.AppendAsLeader([]record.Batch{b}, 0, AppendOptions{})
}

func mustEndTxn(t *testing.T, l *Log, pid int64, epoch int16, commit bool) AppendInfo {
	t.Helper()
	info, err := appendMarker(t, l, pid, epoch, commit, 0)
	if err != nil {
		t.Fatalf("marker of producer %d: %v", pid, err)
	}
	return info
}

func checkLSO(t *testing.T, l *Log, want int64) {
	t.Helper()
	if got := l.LastStableOffset(); got != want {
		t.Fatalf("LSO %d, want %d (HW %d, LEO %d)", got, want, l.HighWatermark(), l.LogEndOffset())
	}
}

// The LSO is min(first offset of an open or unreplicated transaction, HW)
// (Kafka's UnifiedLog.lastStableOffset) and never moves back.
func TestTxnLastStableOffset(t *testing.T) {
	e := newTestEnv(t)
	l := e.open(smallConfig(), LogState{})
	defer l.Close()

	appendN(t, l, 1, 2, 0) // 0-1, no producer
	l.SetHighWatermark(2)
	checkLSO(t, l, 2)
	txnProduce(t, l, 7, 0, 0, 3) // 2-4: producer 7 opens at 2
	appendN(t, l, 1, 1, 0)       // 5
	txnProduce(t, l, 8, 0, 0, 1) // 6: producer 8 opens at 6
	l.SetHighWatermark(7)
	checkLSO(t, l, 2)
	if l.OpenTransactions() != 2 {
		t.Fatalf("open transactions %d", l.OpenTransactions())
	}
	mustEndTxn(t, l, 7, 0, true) // 7: commits 2-4, not replicated yet
	checkLSO(t, l, 2)
	l.SetHighWatermark(8) // the marker is below the HW now: 8's transaction holds the LSO
	checkLSO(t, l, 6)
	mustEndTxn(t, l, 8, 0, false) // 8
	checkLSO(t, l, 6)
	l.SetHighWatermark(9)
	checkLSO(t, l, 9)
	if l.OpenTransactions() != 0 {
		t.Fatalf("open transactions %d", l.OpenTransactions())
	}
	// The producers show their transactions closed and the coordinator epoch.
	for _, p := range l.Producers() {
		if p.CurrentTxnFirstOffset != -1 || p.CoordinatorEpoch != 0 {
			t.Fatalf("producer %+v", p)
		}
	}
}

// KIP-890 part 1: a transactional batch opens a transaction only with the
// guard of a verification that no marker has spent since; a producer with
// an open transaction may not write outside it.
func TestTxnVerification(t *testing.T) {
	e := newTestEnv(t)
	l := e.open(smallConfig(), LogState{})
	defer l.Close()

	if _, err := txnAppend(t, l, 1, 0, 0, 1, 0); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("unverified transactional batch: %v", err)
	}
	guard := l.BeginTxnVerification(1, 0, false)
	if guard == 0 || l.BeginTxnVerification(1, 0, false) != guard {
		t.Fatal("concurrent verifications of one producer and epoch share a guard")
	}
	if _, err := txnAppend(t, l, 1, 0, 0, 1, guard+1); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("wrong guard: %v", err)
	}
	if l.LogEndOffset() != 0 {
		t.Fatal("a refused batch was written")
	}
	if _, err := txnAppend(t, l, 1, 0, 0, 1, guard); err != nil {
		t.Fatal(err)
	}
	// Open: no verification needed, and none given.
	if g := l.BeginTxnVerification(1, 0, false); g != 0 {
		t.Fatalf("open transaction needs no verification, got guard %d", g)
	}
	if _, err := txnAppend(t, l, 1, 0, 1, 1, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := produce(t, l, 1, 0, 2, 1); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("non-transactional batch inside a transaction: %v", err)
	}
	// A verification spent by a marker (the transaction aborted by its
	// timeout between the check and the append) refuses the append.
	mustEndTxn(t, l, 1, 0, false)
	guard = l.BeginTxnVerification(1, 0, false)
	mustEndTxn(t, l, 1, 0, false) // a marker with nothing open still ends the verification
	if _, err := txnAppend(t, l, 1, 0, 2, 1, guard); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("append after its verification was spent: %v", err)
	}
	// A newer epoch needs its own.
	old := l.BeginTxnVerification(1, 0, false)
	if g := l.BeginTxnVerification(1, 1, false); g == old {
		t.Fatal("a new epoch reused the old epoch's guard")
	}
}

// Markers: a stale coordinator epoch is TRANSACTION_COORDINATOR_FENCED, a
// stale producer epoch INVALID_PRODUCER_EPOCH; nothing is written.
func TestTxnMarkerChecks(t *testing.T) {
	e := newTestEnv(t)
	l := e.open(smallConfig(), LogState{})
	defer l.Close()

	txnProduce(t, l, 1, 3, 0, 1)
	if _, err := appendMarker(t, l, 1, 3, true, 5); err != nil {
		t.Fatal(err)
	}
	txnProduce(t, l, 1, 3, 1, 1)
	end := l.LogEndOffset()
	if _, err := appendMarker(t, l, 1, 3, true, 4); !errors.Is(err, ErrTransactionCoordinatorFenced) {
		t.Fatalf("stale coordinator: %v", err)
	}
	if _, err := appendMarker(t, l, 1, 2, false, 5); !errors.Is(err, ErrInvalidProducerEpoch) {
		t.Fatalf("stale producer epoch: %v", err)
	}
	if l.LogEndOffset() != end {
		t.Fatal("a refused marker was written")
	}
	// A marker of a newer epoch (the coordinator fenced the producer)
	// aborts; the old epoch's batches are refused after it.
	if _, err := appendMarker(t, l, 1, 4, false, 6); err != nil {
		t.Fatal(err)
	}
	if _, err := txnAppend(t, l, 1, 3, 2, 1, l.BeginTxnVerification(1, 3, false)); !errors.Is(err, ErrInvalidProducerEpoch) {
		t.Fatalf("zombie append: %v", err)
	}
	// Control batches from anything but a marker are refused on the leader.
	s := spec(1, 0).idempotent(1, 4, -1)
	s.control = true
	if _, err := l.AppendAsLeader(leaderBatches(t, s.build(t)), 0, AppendOptions{}); !errors.Is(err, record.ErrInvalidRecord) {
		t.Fatalf("control batch without a marker: %v", err)
	}
}

func txnIndexFile(t *testing.T, l *Log, base int64) []AbortedTxn {
	t.Helper()
	data, err := os.ReadFile(segmentFileName(l.Dir(), base, txnIndexSuffix))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	if len(data)%abortedTxnSize != 0 {
		t.Fatalf("txnindex of %d bytes", len(data))
	}
	entries, err := decodeAbortedTxns(data)
	if err != nil {
		t.Fatal(err)
	}
	return entries
}

// An abort writes Kafka's 34-byte entry to the .txnindex of the segment
// holding its marker; a commit writes nothing. AbortedTransactions answers
// Kafka's collectAbortedTxns over the segments.
func TestTxnIndexAborts(t *testing.T) {
	e := newTestEnv(t)
	l := e.open(smallConfig(), LogState{})
	defer l.Close()

	txnProduce(t, l, 1, 0, 0, 2)  // 0-1
	txnProduce(t, l, 2, 0, 0, 1)  // 2
	mustEndTxn(t, l, 1, 0, false) // 3: aborts 0-1 while 2 is open: LSO 2
	mustEndTxn(t, l, 2, 0, true)  // 4: commit, no entry
	want := []AbortedTxn{{ProducerID: 1, FirstOffset: 0, LastOffset: 3, LastStableOffset: 2}}
	if got := txnIndexFile(t, l, 0); !reflect.DeepEqual(got, want) {
		t.Fatalf("txnindex %+v, want %+v", got, want)
	}
	// Fill segments until the next abort lands in a later one.
	for l.NumSegments() < 3 {
		appendN(t, l, 1, 20, 0)
	}
	base := l.Segments()[2].BaseOffset
	first := txnProduce(t, l, 3, 0, 0, 1).FirstOffset
	abort := mustEndTxn(t, l, 3, 0, false).FirstOffset
	second := AbortedTxn{ProducerID: 3, FirstOffset: first, LastOffset: abort, LastStableOffset: abort + 1}
	if got := txnIndexFile(t, l, base); !reflect.DeepEqual(got, []AbortedTxn{second}) {
		t.Fatalf("txnindex of segment %d: %+v", base, got)
	}
	for _, c := range []struct {
		from, upTo int64
		want       []AbortedTxn
	}{
		{0, 1, want},                         // stops at the first entry: its LSO 2 >= 1
		{0, abort + 1, append(want, second)}, // the first entry's LSO 2 < upTo: the search goes on to the later segment
		{4, abort + 1, []AbortedTxn{second}}, // the first marker is below 4
		{first, first + 1, []AbortedTxn{second}},
		{abort + 1, abort + 2, nil},
	} {
		got := l.AbortedTransactions(c.from, c.upTo)
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("AbortedTransactions(%d, %d) = %+v, want %+v", c.from, c.upTo, got, c.want)
		}
	}
	// Retention deletes the index with its segment.
	l.SetHighWatermark(l.LogEndOffset())
	if err := l.SetLogStartOffset(base); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(segmentFileName(l.Dir(), 0, txnIndexSuffix)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the deleted segment's txnindex is still there: %v", err)
	}
}

// Recovery: entries beyond a segment's valid data are dropped, a torn
// tail is cut, and the replay from the recovery point writes again the
// entries a crash lost. Producer snapshots carry open transactions.
func TestTxnIndexRecovery(t *testing.T) {
	e := newTestEnv(t)
	l := e.open(smallConfig(), LogState{})
	txnProduce(t, l, 1, 0, 0, 2)
	mustEndTxn(t, l, 1, 0, false) // 2
	txnProduce(t, l, 2, 0, 0, 1)  // 3: open at close
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	path := segmentFileName(e.dir, 0, txnIndexSuffix)
	want := txnIndexFile(t, l, 0)

	// Clean reopen: the snapshot has producer 2 open.
	l = e.open(smallConfig(), LogState{CleanShutdown: true, HighWatermark: 4})
	checkLSO(t, l, 3)
	if got := l.AbortedTransactions(0, 4); !reflect.DeepEqual(got, want) {
		t.Fatalf("after reopen: %+v, want %+v", got, want)
	}
	l.Close()

	// The index lost (a crash before its write reached the disk) with the
	// data after the recovery point: the replay writes it again.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"00000000000000000004.snapshot"} {
		os.Remove(filepath.Join(e.dir, f))
	}
	l = e.open(smallConfig(), LogState{RecoveryPoint: 0, HighWatermark: 4})
	if got := txnIndexFile(t, l, 0); !reflect.DeepEqual(got, want) {
		t.Fatalf("rebuilt txnindex %+v, want %+v", got, want)
	}
	checkLSO(t, l, 3)
	l.Close()

	// A torn entry and an entry for a marker the log does not have.
	extra := appendAbortedTxn(nil, AbortedTxn{ProducerID: 9, FirstOffset: 3, LastOffset: 40, LastStableOffset: 41})
	data := append(appendAbortedTxn(nil, want[0]), extra...)
	if err := os.WriteFile(path, append(data, 1, 2, 3), 0o644); err != nil {
		t.Fatal(err)
	}
	l = e.open(smallConfig(), LogState{CleanShutdown: true, HighWatermark: 4})
	defer l.Close()
	if got := txnIndexFile(t, l, 0); !reflect.DeepEqual(got, want) {
		t.Fatalf("repaired txnindex %+v, want %+v", got, want)
	}
	if !strings.Contains(e.logs.String(), "dropped transaction index entries") {
		t.Fatal("no log line about the dropped entries")
	}
}

// A recovery point checkpointed before retention moved the log start
// past it (crash suite seed 5720): the transaction's data lies in a
// deleted segment, its ABORT marker in the first segment left. Recovery
// raises the recovery point to the log start, as Kafka does, and replays
// producer state from the snapshot taken at the log start, which holds the
// open transaction: the marker's .txnindex entry is written again, and a
// read_committed fetch from the log start gets it (its first offset below
// the log start, as Kafka's collectAbortedTxns returns it).
func TestTxnIndexRecoveryPointBelowLogStart(t *testing.T) {
	for _, c := range []struct {
		name string
		// before: records appended in the marker's segment before it.
		before int
	}{{"marker first in its segment", 0}, {"marker later in its segment", 2}} {
		t.Run(c.name, func(t *testing.T) {
			e := newTestEnv(t)
			cfg := smallConfig()
			cfg.SegmentMs = time.Hour
			l := e.open(cfg, LogState{})
			appendN(t, l, 1, 4, 0)         // 0-3
			txnProduce(t, l, 7, 0, 0, 3)   // 4-6, in segment 0
			e.clock.Advance(2 * time.Hour) // segment.ms: the next append rolls
			base := l.LogEndOffset()
			appendN(t, l, c.before, 1, 0)
			abort := mustEndTxn(t, l, 7, 0, false).FirstOffset
			appendN(t, l, 1, 2, 0)
			if got := l.Segments()[1].BaseOffset; got != base {
				t.Fatalf("second segment starts at %d, want %d", got, base)
			}
			want := []AbortedTxn{{ProducerID: 7, FirstOffset: 4, LastOffset: abort, LastStableOffset: abort + 1}}
			if got := txnIndexFile(t, l, base); !reflect.DeepEqual(got, want) {
				t.Fatalf("txnindex of segment %d: %+v, want %+v", base, got, want)
			}
			if err := l.Flush(); err != nil {
				t.Fatal(err)
			}
			leo := l.LogEndOffset()
			l.SetHighWatermark(leo)
			if err := l.SetLogStartOffset(base); err != nil { // retention deletes segment 0
				t.Fatal(err)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}

			// The power was cut: the checkpoints are those of before the
			// roll (recovery point 4, log start 0).
			l = e.open(cfg, LogState{RecoveryPoint: 4, LogStartOffset: 0, HighWatermark: 4})
			defer l.Close()
			if got := txnIndexFile(t, l, base); !reflect.DeepEqual(got, want) {
				t.Fatalf("recovered txnindex of segment %d: %+v, want %+v", base, got, want)
			}
			if got := l.AbortedTransactions(base, leo); !reflect.DeepEqual(got, want) {
				t.Fatalf("AbortedTransactions(%d, %d) = %+v, want %+v", base, leo, got, want)
			}
			l.SetHighWatermark(leo)
			checkLSO(t, l, leo)
			if start, rp := l.LogStartOffset(), l.RecoveryPoint(); start != base || rp < start {
				t.Fatalf("log start %d, recovery point %d: want start %d and the recovery point at or above it", start, rp, base)
			}
		})
	}
}

// Truncation below a marker removes its entry and reopens the
// transaction; a follower appending the leader's batches ends with the
// same LSO and aborted index.
func TestTxnTruncateAndFollow(t *testing.T) {
	e := newTestEnv(t)
	leader := e.open(smallConfig(), LogState{})
	defer leader.Close()
	txnProduce(t, leader, 1, 0, 0, 2)  // 0-1
	txnProduce(t, leader, 2, 0, 0, 1)  // 2
	mustEndTxn(t, leader, 1, 0, false) // 3
	mustEndTxn(t, leader, 2, 0, true)  // 4

	fe := newTestEnv(t)
	follower := fe.open(smallConfig(), LogState{})
	defer follower.Close()
	res, err := leader.Read(0, 1<<20, leader.LogEndOffset(), true)
	if err != nil {
		t.Fatal(err)
	}
	buf := append([]byte(nil), res.Data...)
	res.Release()
	if _, err := follower.AppendAsFollower(buf); err != nil {
		t.Fatal(err)
	}
	leader.SetHighWatermark(4) // the abort is below it, the commit not yet
	follower.SetHighWatermark(4)
	if a, b := leader.LastStableOffset(), follower.LastStableOffset(); a != 2 || b != 2 {
		t.Fatalf("LSO leader %d follower %d, want 2", a, b)
	}
	if a, b := leader.AbortedTransactions(0, 5), follower.AbortedTransactions(0, 5); !reflect.DeepEqual(a, b) || len(a) != 1 {
		t.Fatalf("aborted: leader %+v follower %+v", a, b)
	}

	// The follower truncates below the abort marker: the entry goes and
	// producer 1's transaction is open again.
	if err := follower.TruncateTo(3); err != nil {
		t.Fatal(err)
	}
	if got := follower.AbortedTransactions(0, 5); len(got) != 0 {
		t.Fatalf("aborted after truncation: %+v", got)
	}
	if got := txnIndexFile(t, follower, 0); len(got) != 0 {
		t.Fatalf("txnindex after truncation: %+v", got)
	}
	checkLSO(t, follower, 0)
}

// Transaction version 2 (KIP-890 part 2): the markers of a transaction
// carry the bumped epoch, the next transaction's; they may land while the
// next transaction's first batch is being verified, and must not spend that
// verification. A marker of a later epoch (the coordinator aborted and
// fenced) does.
func TestTxnVerificationEpochBump(t *testing.T) {
	e := newTestEnv(t)
	l := e.open(smallConfig(), LogState{})
	defer l.Close()

	txnProduce(t, l, 1, 0, 0, 1)
	next := l.BeginTxnVerification(1, 1, true) // the next transaction, epoch 1
	mustEndTxn(t, l, 1, 1, true)               // the previous one's commit, bumped to epoch 1
	if _, err := txnAppend(t, l, 1, 1, 0, 1, next); err != nil {
		t.Fatalf("next transaction after its predecessor's marker: %v", err)
	}
	mustEndTxn(t, l, 1, 2, true)

	// Without the epoch bump (transaction version 0/1) the same marker
	// spends it; with a later epoch too.
	old := l.BeginTxnVerification(1, 3, false)
	mustEndTxn(t, l, 1, 3, false)
	if _, err := txnAppend(t, l, 1, 3, 0, 1, old); !errors.Is(err, ErrInvalidTxnState) {
		t.Fatalf("transaction version 0 verification after a marker: %v", err)
	}
	fenced := l.BeginTxnVerification(1, 4, true)
	mustEndTxn(t, l, 1, 5, false)
	if _, err := txnAppend(t, l, 1, 4, 0, 1, fenced); err == nil {
		t.Fatal("a verification survived a marker of a later epoch")
	}
}

// The LSO never moves back, even read while markers complete transactions
// (a reader must never see a transaction neither open nor completed; the
// chaos suite caught that once).
func TestTxnLastStableOffsetMonotonic(t *testing.T) {
	e := newTestEnv(t)
	l := e.open(smallConfig(), LogState{})
	defer l.Close()
	done := make(chan struct{})
	var backs []string
	go func() {
		defer close(done)
		last := int64(0)
		for l.LogEndOffset() < 600 {
			if lso := l.LastStableOffset(); lso < last {
				backs = append(backs, fmt.Sprintf("%d -> %d", last, lso))
			} else {
				last = lso
			}
		}
	}()
	// Producer 1's transactions stay open across producer 2's commits:
	// each of producer 2's markers ends a transaction while the HW is
	// past it, which must never uncover producer 1's.
	for i := 0; l.LogEndOffset() < 600; i++ {
		pid := int64(1 + i%2)
		txnProduce(t, l, pid, 0, int32(i/2), 1)
		l.SetHighWatermark(l.LogEndOffset())
		mustEndTxn(t, l, pid, 0, i%3 != 0)
	}
	<-done
	if len(backs) > 0 {
		t.Fatalf("the LSO moved back %d times: %v", len(backs), backs[:min(5, len(backs))])
	}
}

// Retention may delete the segment holding an open transaction's first
// offset (it waits for the HW, not the LSO): the LSO then stays at the log
// start offset until the transaction ends, as Kafka clamps the first
// unstable offset to the log start (UnifiedLog.maybeIncrementFirstUnstableOffset),
// never below it, where ListOffsets would answer an offset that a fetch
// finds out of range.
func TestTxnLastStableOffsetNotBelowLogStart(t *testing.T) {
	e := newTestEnv(t)
	cfg := smallConfig()
	cfg.SegmentMs = time.Hour
	l := e.open(cfg, LogState{})
	defer l.Close()
	txnProduce(t, l, 7, 0, 0, 3) // 0-2: the transaction opens
	e.clock.Advance(2 * time.Hour)
	appendN(t, l, 1, 2, 0)       // 3-4, in a new segment
	txnProduce(t, l, 7, 0, 3, 1) // 5: the same transaction
	l.SetHighWatermark(l.LogEndOffset())
	checkLSO(t, l, 0)
	if err := l.SetLogStartOffset(3); err != nil { // segment 0 goes
		t.Fatal(err)
	}
	checkLSO(t, l, 3)
	abort := mustEndTxn(t, l, 7, 0, false).FirstOffset
	l.SetHighWatermark(l.LogEndOffset())
	checkLSO(t, l, l.LogEndOffset())
	want := []AbortedTxn{{ProducerID: 7, FirstOffset: 0, LastOffset: abort, LastStableOffset: abort + 1}}
	if got := l.AbortedTransactions(3, l.LogEndOffset()); !reflect.DeepEqual(got, want) {
		t.Fatalf("AbortedTransactions(3, %d) = %+v, want %+v", l.LogEndOffset(), got, want)
	}
}

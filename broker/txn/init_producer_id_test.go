package txn

import (
	"math"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// These follow Kafka's TransactionCoordinatorTest for handleInitProducerId.

func strp(s string) *string { return &s }

func TestInitProducerIDValidation(t *testing.T) {
	h := newHarness(t, nil)
	for _, tc := range []struct {
		name      string
		version   int16
		id        *string
		timeoutMs int32
		pid       int64
		epoch     int16
		want      int16
	}{
		{"empty transactional id", 5, strp(""), 60000, -1, -1, codeInvalidRequest},
		{"timeout above transaction.max.timeout.ms", 5, strp("t"), 900001, -1, -1, codeInvalidTransactionTimeout},
		{"zero timeout", 5, strp("t"), 0, -1, -1, codeInvalidTransactionTimeout},
		{"negative timeout", 5, strp("t"), -5, -1, -1, codeInvalidTransactionTimeout},
		{"producer id without epoch", 5, strp("t"), 60000, 7, -1, codeInvalidRequest},
		{"epoch without producer id", 5, strp("t"), 60000, -1, 3, codeInvalidRequest},
	} {
		pid, epoch, code := h.initV(tc.version, tc.id, tc.timeoutMs, tc.pid, tc.epoch)
		if code != tc.want || pid != -1 || epoch != -1 {
			t.Errorf("%s: %d/%d code %d, want %d", tc.name, pid, epoch, code, tc.want)
		}
	}
	if pid, epoch, code := h.initV(5, strp("t"), 900000, -1, -1); code != 0 || epoch != 0 || pid < 1000 {
		t.Errorf("timeout at the maximum: %d/%d code %d", pid, epoch, code)
	}
}

// TestInitProducerIDIdempotent: no transactional id, a new producer id with
// epoch 0 every time.
func TestInitProducerIDIdempotent(t *testing.T) {
	h := newHarness(t, nil)
	a, ea, ca := h.initV(4, nil, 0, -1, -1)
	b, eb, cb := h.initV(4, nil, 0, a, 0)
	if ca != 0 || cb != 0 || ea != 0 || eb != 0 || a == b {
		t.Fatalf("got %d/%d %d, %d/%d %d", a, ea, ca, b, eb, cb)
	}
	h.ids.fail.Store(true)
	if _, _, code := h.initV(4, nil, 0, -1, -1); code != codeCoordinatorLoadInProgress {
		t.Fatalf("allocator down: code %d", code)
	}
	if _, _, code := h.init("new-id"); code != codeCoordinatorLoadInProgress {
		t.Fatalf("allocator down, new transactional id: code %d", code)
	}
}

func TestInitProducerIDNewAndBump(t *testing.T) {
	h := newHarness(t, nil)
	pid, epoch := h.mustInit("t")
	if epoch != 0 {
		t.Fatalf("first epoch %d", epoch)
	}
	st := h.logOf("t").states(t, "t")
	if len(st) != 1 || st[0].state != Empty || st[0].producerID != pid || st[0].producerEpoch != 0 || st[0].timeoutMs != 60000 {
		t.Fatalf("records: %v", st)
	}
	// A new instance fences the old one.
	pid2, epoch2 := h.mustInit("t")
	if pid2 != pid || epoch2 != 1 {
		t.Fatalf("second init: %d/%d", pid2, epoch2)
	}
	if code := h.add("t", pid, 0, tp0); code != codeProducerFenced {
		t.Fatalf("zombie AddPartitions: %d", code)
	}
	if code := oneCode(h.addV(1, "t", pid, 0, tp0)); code != codeInvalidProducerEpoch {
		t.Fatalf("zombie AddPartitions v1: %d", code)
	}
	if m := h.metadataOf("t"); m.lastProducerEpoch != -1 {
		t.Fatalf("a new producer resets the last epoch: %d", m.lastProducerEpoch)
	}
}

// TestInitProducerIDRecovery is KIP-360: a producer that lost its epoch
// sends its producer id and epoch.
func TestInitProducerIDRecovery(t *testing.T) {
	h := newHarness(t, nil)
	pid, _ := h.mustInit("t")
	// The same epoch: bump, and remember it as the last epoch.
	p, e, code := h.initV(5, strp("t"), 60000, pid, 0)
	if code != 0 || p != pid || e != 1 {
		t.Fatalf("recover with current epoch: %d/%d %d", p, e, code)
	}
	// A retry of that call (response lost): the same epoch again.
	p, e, code = h.initV(5, strp("t"), 60000, pid, 0)
	if code != 0 || p != pid || e != 1 {
		t.Fatalf("retry with last epoch: %d/%d %d", p, e, code)
	}
	// An older epoch is fenced; v3 clients get INVALID_PRODUCER_EPOCH.
	h.mustInit("t") // epoch 2, last -1
	if _, _, code := h.initV(5, strp("t"), 60000, pid, 1); code != codeProducerFenced {
		t.Fatalf("stale epoch: %d", code)
	}
	if _, _, code := h.initV(3, strp("t"), 60000, pid, 1); code != codeInvalidProducerEpoch {
		t.Fatalf("stale epoch v3: %d", code)
	}
	// Another producer id is fenced.
	if _, _, code := h.initV(5, strp("t"), 60000, pid+77, 2); code != codeProducerFenced {
		t.Fatalf("other producer id: %d", code)
	}
	// An id the coordinator never saw (its state was lost): a new
	// producer id with epoch 0.
	p, e, code = h.initV(5, strp("fresh"), 60000, 5, 9)
	if code != 0 || p == 5 || e != 0 {
		t.Fatalf("unknown id with producer id: %d/%d %d", p, e, code)
	}
}

// TestInitProducerIDRotation: when the epochs of a producer id are
// exhausted, InitProducerId moves the id to a new producer id, and a retry
// of that (previous id, exhausted epoch) is accepted.
func TestInitProducerIDRotation(t *testing.T) {
	h := newHarness(t, nil)
	pid, _ := h.mustInit("t")
	h.setEpoch("t", math.MaxInt16-1)
	p, e, code := h.initV(5, strp("t"), 60000, pid, math.MaxInt16-1)
	if code != 0 || p == pid || e != 0 {
		t.Fatalf("rotation: %d/%d %d", p, e, code)
	}
	m := h.metadataOf("t")
	if m.lastProducerEpoch != math.MaxInt16-1 || m.prevProducerID != pid {
		t.Fatalf("after rotation: %v", &m.txnState)
	}
	// The retry of the rotating call carries the previous producer id.
	p2, e2, code := h.initV(5, strp("t"), 60000, pid, math.MaxInt16-1)
	if code != 0 || p2 != p || e2 != 0 {
		t.Fatalf("retry of rotation: %d/%d %d", p2, e2, code)
	}
	// Without an expected epoch too.
	h.setEpoch("t", math.MaxInt16-1)
	p3, e3 := h.mustInit("t")
	if p3 == p || e3 != 0 {
		t.Fatalf("rotation of a new producer: %d/%d", p3, e3)
	}
}

// TestInitProducerIDAbortsOngoing: an open transaction is aborted with a
// bumped epoch (fencing the old producer), the caller gets
// CONCURRENT_TRANSACTIONS, and its retry bumps the epoch again.
func TestInitProducerIDAbortsOngoing(t *testing.T) {
	for _, tv := range []TransactionVersion{TV0, TV2} {
		t.Run(map[TransactionVersion]string{TV0: "tv0", TV2: "tv2"}[tv], func(t *testing.T) {
			h := newHarness(t, nil)
			pid, epoch := h.mustInit("t")
			if tv == TV2 {
				allZero(t, h.broker("t", pid, epoch, false, tp0, tp1))
			} else if code := h.add("t", pid, epoch, tp0, tp1); code != 0 {
				t.Fatal(code)
			}
			release := h.holdMarkers()
			if _, _, code := h.init("t"); code != codeConcurrentTransactions {
				t.Fatalf("init during a transaction: %d", code)
			}
			if _, _, code := h.init("t"); code != codeConcurrentTransactions {
				t.Fatalf("init while the abort completes: %d", code)
			}
			if code := h.end("t", pid, epoch, true); code != codeProducerFenced {
				t.Fatalf("old producer's commit: %d", code)
			}
			st := h.logOf("t").states(t, "t")
			abort := st[len(st)-1]
			if abort.state != PrepareAbort || abort.producerEpoch != 1 || len(abort.partitions) != 2 {
				t.Fatalf("abort record: %v", abort)
			}
			release()
			h.waitState("t", CompleteAbort)
			mk := h.markers.all()
			if len(mk) == 0 || mk[0].Commit || mk[0].ProducerEpoch != 1 || mk[0].CoordinatorEpoch != h.epoch || len(mk[0].Partitions) != 2 {
				t.Fatalf("markers: %+v", mk)
			}
			_, epoch2 := h.mustInit("t")
			if epoch2 != 2 {
				t.Fatalf("epoch after fence and retry: %d", epoch2)
			}
		})
	}
}

func allZero(t *testing.T, codes map[TopicPartition]int16) {
	t.Helper()
	for tp, c := range codes {
		if c != 0 {
			t.Fatalf("%v: code %d", tp, c)
		}
	}
}

// TestInitProducerIDFailedFence: a fencing abort that cannot be written is
// not bumped again by the retry (Kafka's hasFailedEpochFence).
func TestInitProducerIDFailedFence(t *testing.T) {
	h := newHarness(t, nil)
	pid, epoch := h.begin("t", tp0)
	l := h.logOf("t")
	l.fail(kerr.NotEnoughReplicas)
	if _, _, code := h.init("t"); code != codeCoordinatorNotAvailable {
		t.Fatalf("fence with the log down: %d", code)
	}
	if code := h.add("t", pid, epoch, tp1); code != codeProducerFenced {
		t.Fatalf("the failed fence still fences in memory: %d", code)
	}
	l.fail(nil)
	if _, _, code := h.init("t"); code != codeConcurrentTransactions {
		t.Fatalf("fence again: %d", code)
	}
	h.waitState("t", CompleteAbort)
	var aborts []*txnState
	for _, st := range l.states(t, "t") {
		if st.state == PrepareAbort {
			aborts = append(aborts, st)
		}
	}
	if len(aborts) != 1 || aborts[0].producerEpoch != 1 {
		t.Fatalf("abort after a failed fence: %v", aborts)
	}
	if _, e := h.mustInit("t"); e != 2 {
		t.Fatalf("epoch %d", e)
	}
}

// TestInitProducerIDExhaustedFence: fencing at the last client epoch uses
// MaxInt16, and the retry rotates the producer id.
func TestInitProducerIDExhaustedFence(t *testing.T) {
	h := newHarness(t, nil)
	pid, _ := h.mustInit("t")
	h.setEpoch("t", math.MaxInt16-1)
	if code := h.add("t", pid, math.MaxInt16-1, tp0); code != 0 {
		t.Fatal(code)
	}
	if _, _, code := h.init("t"); code != codeConcurrentTransactions {
		t.Fatal(code)
	}
	h.waitState("t", CompleteAbort)
	if mk := h.markers.all(); mk[0].ProducerEpoch != math.MaxInt16 {
		t.Fatalf("fence epoch %d", mk[0].ProducerEpoch)
	}
	p, e := h.mustInit("t")
	if p == pid || e != 0 {
		t.Fatalf("after exhausted fence: %d/%d", p, e)
	}
}

func TestInitProducerIDNotCoordinator(t *testing.T) {
	h := newHarness(t, nil)
	h.c.Resign(h.c.PartitionFor("t"))
	if _, _, code := h.init("t"); code != codeNotCoordinator {
		t.Fatalf("resigned: %d", code)
	}
	// A partition being loaded answers COORDINATOR_LOAD_IN_PROGRESS.
	release := make(chan struct{})
	loading := func(yield func(Record, error) bool) { <-release }
	done := make(chan error)
	go func() { done <- h.c.BecomeLeader(h.c.PartitionFor("t"), 2, &memLog{}, loading) }()
	waitFor(t, h.clock, 0, "loading", func() bool {
		_, _, code := h.init("t")
		return code == codeCoordinatorLoadInProgress
	})
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, e := h.mustInit("t"); e != 0 {
		t.Fatalf("after load: %d", e)
	}
}

// TestInitProducerIDLogErrors: the state-log errors as Kafka maps them; a
// failed write leaves nothing pending.
func TestInitProducerIDLogErrors(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want int16
	}{
		{kerr.NotEnoughReplicas, codeCoordinatorNotAvailable},
		{kerr.NotEnoughReplicasAfterAppend, codeCoordinatorNotAvailable},
		{kerr.RequestTimedOut, codeCoordinatorNotAvailable},
		{kerr.UnknownTopicOrPartition, codeCoordinatorNotAvailable},
		{kerr.NotLeaderForPartition, codeNotCoordinator},
		{kerr.KafkaStorageError, codeNotCoordinator},
		{kerr.MessageTooLarge, codeUnknownServerError},
		{kerr.RecordListTooLarge, codeUnknownServerError},
		{kerr.InvalidRecord, kerr.InvalidRecord.Code},
		{errTest, codeCoordinatorNotAvailable},
	} {
		h := newHarness(t, nil)
		h.logOf("t").fail(tc.err)
		if _, _, code := h.init("t"); code != tc.want {
			t.Errorf("%v: code %d, want %d", tc.err, code, tc.want)
		}
		h.logOf("t").fail(nil)
		if _, e := h.mustInit("t"); e != 0 {
			t.Errorf("%v: retry got epoch %d", tc.err, e)
		}
	}
}

type testError struct{}

func (testError) Error() string { return "disk on fire" }

var errTest = testError{}

// TestInitProducerIDTimeoutOption: transaction.max.timeout.ms is
// configurable.
func TestInitProducerIDTimeoutOption(t *testing.T) {
	h := newHarness(t, &Options{MaxTimeout: time.Second})
	if _, _, code := h.initV(5, strp("t"), 1001, -1, -1); code != codeInvalidTransactionTimeout {
		t.Fatal(code)
	}
	req := kmsg.NewPtrInitProducerIDRequest()
	req.TransactionalID, req.TransactionTimeoutMillis = strp("t"), 1000
	if r := h.c.InitProducerID(ctxBG, req); r.ErrorCode != 0 || r.ProducerEpoch != 0 {
		t.Fatalf("v0: %+v", r)
	}
}

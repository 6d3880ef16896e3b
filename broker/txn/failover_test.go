package txn

import (
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestFailover: a new coordinator loads what the old one wrote (as is and
// compacted): ids keep their producer id, epoch and open transaction, and
// a transaction caught in PrepareCommit gets its markers again, with the
// new coordinator epoch, and completes.
func TestFailover(t *testing.T) {
	for _, compact := range []bool{false, true} {
		t.Run(map[bool]string{false: "log", true: "compacted"}[compact], func(t *testing.T) {
			h := newHarness(t, nil)
			pa, ea := h.begin("committed", tp0)
			h.end("committed", pa, ea, true)
			h.waitState("committed", CompleteCommit)

			pb, eb := h.begin("open", tp0, tp2)
			h.mustInit("empty")

			pc, ec := h.mustInit("completing")
			allZero(t, h.broker("completing", pc, ec, false, tp1, tp2))
			hold := make(chan struct{})
			h.markers.set(nil, hold) // the old coordinator dies before its markers land
			if _, _, code := h.endV(5, "completing", pc, ec, true); code != 0 {
				t.Fatal(code)
			}
			waitFor(t, h.clock, 0, "markers held", func() bool { return h.markers.calls.Load() == 2 })
			before := map[string]kmsg.DescribeTransactionsResponseTransactionState{}
			for _, id := range []string{"committed", "open", "empty"} {
				before[id] = h.describe(id)
			}
			h.markers.set(nil, nil)

			n := h.failover(compact)
			for id, d := range before {
				if got := n.describe(id); !reflect.DeepEqual(got, d) {
					t.Errorf("%s after failover:\n%+v\nwant\n%+v", id, got, d)
				}
			}
			n.waitState("completing", CompleteCommit)
			var redone []Marker
			for _, m := range n.markers.all() {
				if m.ProducerID == pc {
					redone = append(redone, m)
				}
			}
			if len(redone) != 1 || !redone[0].Commit || redone[0].CoordinatorEpoch != n.epoch ||
				redone[0].ProducerEpoch != ec+1 || len(redone[0].Partitions) != 2 || redone[0].TransactionVersion != TV2 {
				t.Fatalf("markers after failover: %+v", redone)
			}
			close(hold)
			// The open transaction goes on with the same producer.
			if code := n.add("open", pb, eb, tp1); code != 0 {
				t.Fatalf("add after failover: %d", code)
			}
			if code := n.end("open", pb, eb, true); code != 0 {
				t.Fatalf("commit after failover: %d", code)
			}
			n.waitState("open", CompleteCommit)
			// The retried TV2 EndTxn of the completed one is recognised.
			if p, e, code := n.endV(5, "completing", pc, ec, true); code != 0 || p != pc || e != ec+1 {
				t.Fatalf("retry after failover: %d/%d %d", p, e, code)
			}
		})
	}
}

// TestResignDuringWrite: a request whose write is in flight when the
// partition is unloaded gets NOT_COORDINATOR; later ones too.
func TestResignDuringWrite(t *testing.T) {
	h := newHarness(t, nil)
	l := h.logOf("t")
	l.mu.Lock()
	l.hold = make(chan struct{})
	l.mu.Unlock()
	done := make(chan int16)
	go func() {
		_, _, code := h.init("t")
		done <- code
	}()
	waitFor(t, h.clock, 0, "the write to start", func() bool {
		e, _ := h.c.lookup("t", nil)
		if e == nil {
			return false
		}
		e.mu.Lock()
		defer e.mu.Unlock()
		return e.md.pendingInProgress()
	})
	h.c.Resign(h.c.PartitionFor("t"))
	if code := <-done; code != codeNotCoordinator {
		t.Fatalf("in-flight request: %d", code)
	}
	if _, _, code := h.init("t"); code != codeNotCoordinator {
		t.Fatalf("after resign: %d", code)
	}
	if d := h.describe("t"); d.ErrorCode != codeNotCoordinator {
		t.Fatalf("describe after resign: %d", d.ErrorCode)
	}
}

// TestLoadSkipsForeignAndCorrupt: records of other types and corrupt ones
// are skipped; an error from the log aborts the load.
func TestLoadSkipsForeignAndCorrupt(t *testing.T) {
	h := newHarness(t, nil)
	p := h.c.PartitionFor("t")
	st := ongoingSample()
	recs := []Record{
		{Key: []byte{0, 5, 1}, Value: []byte{1}},      // another record type
		{Key: encodeKey("t"), Value: []byte{0, 1, 2}}, // corrupt
		stateRecord("t", st, 1),
		stateRecord("gone", st, 1),
		tombstone("gone"),
		{Key: nil},
	}
	if err := h.c.BecomeLeader(p, 5, &memLog{}, seqOf(recs)); err != nil {
		t.Fatal(err)
	}
	if d := h.describe("t"); d.State != "Ongoing" || d.ProducerID != st.producerID {
		t.Fatalf("loaded: %+v", d)
	}
	if d := h.describe("gone"); d.ErrorCode != codeTransactionalIDNotFound && h.c.PartitionFor("gone") == p {
		t.Fatalf("tombstoned id loaded: %+v", d)
	}
	failing := func(yield func(Record, error) bool) { yield(Record{}, errTest) }
	if err := h.c.BecomeLeader(p, 6, &memLog{}, failing); err == nil {
		t.Fatal("load error ignored")
	}
	if _, _, code := h.init("t"); code != codeNotCoordinator {
		t.Fatalf("after a failed load: %d", code)
	}
	if err := h.c.BecomeLeader(99, 1, &memLog{}, seqOf(nil)); err == nil {
		t.Fatal("partition out of range accepted")
	}
	h.c.Close()
	if err := h.c.BecomeLeader(p, 7, &memLog{}, seqOf(nil)); err == nil {
		t.Fatal("BecomeLeader after Close")
	}
}

package txn

import (
	"fmt"
	"reflect"
	"runtime"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// allowedRace are the codes two producers of one id, the timeout scan and
// leadership changes may give each other; anything else (an
// UNKNOWN_SERVER_ERROR from an illegal transition above all) is a bug.
var allowedRace = map[int16]bool{
	0: true, codeConcurrentTransactions: true, codeProducerFenced: true, codeInvalidTxnState: true,
	codeNotCoordinator: true, codeCoordinatorLoadInProgress: true, codeCoordinatorNotAvailable: true,
}

// producerLoop runs transactions on id until rounds are done, as a client
// does: init, add, commit or abort, retrying CONCURRENT_TRANSACTIONS a
// while, re-initializing when fenced.
func producerLoop(h *harness, id string, rounds int, tv2 bool, bad chan<- string) {
	do := func(op string, fn func() int16) bool {
		for range 50 {
			code := fn()
			if !allowedRace[code] {
				bad <- fmt.Sprintf("%s %s: code %d", id, op, code)
			}
			if code != codeConcurrentTransactions && code != codeCoordinatorLoadInProgress {
				return code == 0
			}
			runtime.Gosched()
		}
		return false
	}
	var pid int64 = -1
	var epoch int16 = -1
	for i := range rounds {
		if pid < 0 && !do("init", func() (code int16) { pid, epoch, code = h.init(id); return code }) {
			pid = -1
			continue
		}
		tp := TopicPartition{"topic", int32(i % 3)}
		add := func() int16 { return h.add(id, pid, epoch, tp, tp2) }
		if tv2 {
			add = func() int16 { return oneCode(h.broker(id, pid, epoch, false, tp)) }
		}
		if !do("add", add) {
			pid = -1
			continue
		}
		end := func() int16 { return h.end(id, pid, epoch, i%2 == 0) }
		if tv2 {
			end = func() (code int16) {
				p, e, code := h.endV(5, id, pid, epoch, i%2 == 0)
				if code == 0 {
					pid, epoch = p, e
				}
				return code
			}
		}
		if !do("end", end) {
			pid = -1
		}
	}
}

// TestConcurrentProducers: two producers per id (fencing each other), the
// timeout scan, ListTransactions and Stats all at once, under -race. At
// the end every transaction completes and a reload reproduces memory.
func TestConcurrentProducers(t *testing.T) {
	h := newHarness(t, nil)
	bad := make(chan string, 1000)
	var wg sync.WaitGroup
	ids := []string{"a", "b", "c", "d", "e", "f"}
	for i, id := range ids {
		for range 2 {
			wg.Go(func() { producerLoop(h, id, 40, i%2 == 0, bad) })
		}
	}
	stop := make(chan struct{})
	var side sync.WaitGroup
	side.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			h.c.abortTimedOut()
			h.c.Stats()
			h.list(2, nil, nil, -1, nil)
		}
	})
	wg.Wait()
	close(stop)
	side.Wait()
	close(bad)
	for msg := range bad {
		t.Error(msg)
	}
	settleAndReload(t, h, ids)
}

// TestLeadershipChurn: producers keep going while the partitions move
// away and back (Resign, BecomeLeader at a higher epoch from what the log
// holds); a partition's old log is sealed first, as a deposed leader can
// no longer append. Every answer is a code clients handle, and the final
// reload matches.
func TestLeadershipChurn(t *testing.T) {
	h := newHarness(t, nil)
	bad := make(chan string, 1000)
	var wg sync.WaitGroup
	ids := []string{"a", "b", "c", "d"}
	for i, id := range ids {
		wg.Go(func() { producerLoop(h, id, 60, i%2 == 0, bad) })
	}
	var mu sync.Mutex // guards h.logs during the churn
	churn := func(round int) {
		p := int32(round % testPartitions)
		mu.Lock()
		defer mu.Unlock()
		h.c.Resign(p)
		old := h.logs[p]
		old.fail(errTest) // sealed
		recs := old.snapshot()
		h.logs[p] = &memLog{records: recs}
		if err := h.c.BecomeLeader(p, int32(10+round), h.logs[p], seqOf(recs)); err != nil {
			t.Error(err)
		}
	}
	done := make(chan struct{})
	var churner sync.WaitGroup
	churner.Go(func() {
		for round := 0; round < 40; round++ {
			select {
			case <-done:
				return
			default:
			}
			churn(round)
			runtime.Gosched()
		}
	})
	wg.Wait()
	close(done)
	churner.Wait()
	close(bad)
	for msg := range bad {
		t.Error(msg)
	}
	settleAndReload(t, h, ids)
}

// settleAndReload waits for every transaction of ids to complete, then
// checks that a new coordinator loading the logs has the same state.
func settleAndReload(t *testing.T, h *harness, ids []string) {
	t.Helper()
	for _, id := range ids {
		waitFor(t, h.clock, 0, id+" settled", func() bool {
			s := h.state(id)
			return s != "PrepareCommit" && s != "PrepareAbort"
		})
	}
	before := map[string]kmsg.DescribeTransactionsResponseTransactionState{}
	for _, id := range ids {
		before[id] = h.describe(id)
	}
	t.Logf("stats: %+v", h.c.Stats())
	n := h.failover(false)
	for _, id := range ids {
		if got := n.describe(id); !reflect.DeepEqual(got, before[id]) {
			t.Errorf("%s reloaded:\n%+v\nwant\n%+v", id, got, before[id])
		}
	}
}

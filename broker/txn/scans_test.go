package txn

import (
	"testing"
	"time"
)

// TestTimeoutAbortFencesZombie: a transaction open longer than its
// timeout is aborted by the scan with a bumped epoch; the producer that
// opened it (the zombie) can neither add partitions nor commit, and a new
// instance gets the next epoch.
func TestTimeoutAbortFencesZombie(t *testing.T) {
	h := newHarness(t, nil)
	id := "hung"
	pid, epoch, code := h.initV(5, &id, 1000, -1, -1)
	if code != 0 {
		t.Fatal(code)
	}
	if code := h.add(id, pid, epoch, tp0, tp1); code != 0 {
		t.Fatal(code)
	}
	long := "long"
	lpid, lepoch, _ := h.initV(5, &long, 60000, -1, -1)
	if code := h.add(long, lpid, lepoch, tp0); code != 0 {
		t.Fatal(code)
	}
	h.clock.Advance(10 * time.Second) // transaction.abort.timed.out.transaction.cleanup.interval.ms
	h.waitState(id, CompleteAbort)
	if s := h.state(long); s != "Ongoing" {
		t.Fatalf("a transaction within its timeout was touched: %s", s)
	}
	mk := h.markers.all()
	if len(mk) != 1 || mk[0].Commit || mk[0].ProducerEpoch != epoch+1 || len(mk[0].Partitions) != 2 {
		t.Fatalf("abort markers: %+v", mk)
	}
	if code := h.add(id, pid, epoch, tp2); code != codeProducerFenced {
		t.Fatalf("zombie AddPartitions: %d", code)
	}
	if code := h.end(id, pid, epoch, true); code != codeProducerFenced {
		t.Fatalf("zombie commit: %d", code)
	}
	if _, e := h.mustInit(id); e != epoch+2 {
		t.Fatalf("new instance epoch %d", e)
	}
	if st := h.c.Stats(); st.TimedOut != 1 || st.Fenced != 1 || st.Aborts != 1 {
		t.Fatalf("stats: %+v", st)
	}
}

// TestTimeoutAbortTV2: under transaction version 2 the abort's epoch bump
// is the fence: the zombie's produce-side verification and its commit
// fail.
func TestTimeoutAbortTV2(t *testing.T) {
	h := newHarness(t, nil)
	id := "hung"
	pid, epoch, _ := h.initV(5, &id, 1000, -1, -1)
	allZero(t, h.broker(id, pid, epoch, false, tp0))
	h.clock.Advance(10 * time.Second)
	h.waitState(id, CompleteAbort)
	if mk := h.markers.all(); mk[0].ProducerEpoch != epoch+1 || mk[0].TransactionVersion != TV2 {
		t.Fatalf("markers: %+v", mk)
	}
	if codes := h.broker(id, pid, epoch, true, tp0); codes[tp0] != codeProducerFenced {
		t.Fatalf("zombie produce verification: %v", codes)
	}
	if _, _, code := h.endV(5, id, pid, epoch, true); code != codeInvalidTxnState {
		t.Fatalf("zombie commit: %d", code)
	}
}

// TestTimeoutScanSkipsPending: a transaction whose state write is in
// flight is left for the next scan.
func TestTimeoutScanSkipsPending(t *testing.T) {
	h := newHarness(t, nil)
	id := "t"
	pid, epoch, _ := h.initV(5, &id, 1000, -1, -1)
	if code := h.add(id, pid, epoch, tp0); code != 0 {
		t.Fatal(code)
	}
	release := h.holdMarkers()
	h.mustEnd(id, pid, epoch, true)
	h.clock.Advance(20 * time.Second)
	release()
	h.waitState(id, CompleteCommit)
	if st := h.c.Stats(); st.TimedOut != 0 || st.Commits != 1 {
		t.Fatalf("stats: %+v", st)
	}
}

// TestExpireTransactionalIDs: ids idle for transactional.id.expiration.ms
// with no open transaction get a tombstone and are forgotten.
func TestExpireTransactionalIDs(t *testing.T) {
	h := newHarness(t, &Options{IDExpiration: 2 * time.Minute, RemoveExpiredInterval: time.Minute})
	pid, epoch := h.begin("idle", tp0)
	h.mustEnd("idle", pid, epoch, true)
	h.waitState("idle", CompleteCommit)
	busy := "busy"
	bpid, bepoch, _ := h.initV(5, &busy, 900000, -1, -1)
	if code := h.add(busy, bpid, bepoch, tp0); code != 0 {
		t.Fatal(code)
	}
	h.clock.Advance(3 * time.Minute)
	waitFor(t, h.clock, 0, "expiry", func() bool { return h.describe("idle").ErrorCode == codeTransactionalIDNotFound })
	recs := h.logOf("idle").states(t, "idle")
	if recs[len(recs)-1] != nil {
		t.Fatalf("no tombstone: %v", recs[len(recs)-1])
	}
	if s := h.state(busy); s != "Ongoing" {
		t.Fatalf("open transaction expired: %s", s)
	}
	if code := h.end("idle", pid, epoch, true); code != codeInvalidProducerIDMapping {
		t.Fatalf("EndTxn of an expired id: %d", code)
	}
	if p, e := h.mustInit("idle"); p == pid || e != 0 {
		t.Fatalf("re-created id: %d/%d", p, e)
	}
	if st := h.c.Stats(); st.ExpiredIDs != 1 {
		t.Fatalf("stats: %+v", st)
	}
	// The tombstone is what a new leader sees: the id stays gone.
	n := h.failover(false)
	if d := n.describe("idle"); d.ErrorCode != 0 || d.ProducerID == pid {
		t.Fatalf("after failover: %+v", d)
	}
}

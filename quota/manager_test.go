package quota

import (
	"math"
	"sync"
	"testing"
	"time"

	"github.com/kbroker/kbroker/internal/sampled"
	"github.com/kbroker/kbroker/internal/testsupport"
)

var windows = sampled.Config{Samples: 11, Window: time.Second}

func newTestManager(kind Kind, q Quotas) (*Manager, *testsupport.Clock) {
	clock := testsupport.NewClock(time.Unix(1_700_000_000, 0))
	m := NewManager(kind, windows, clock.Now)
	m.SetQuotas(q)
	return m, clock
}

func TestManagerDisabledRecordsNothing(t *testing.T) {
	m, _ := newTestManager(Produce, Quotas{{User: Named("x")}: {ConsumerByteRate: 1}})
	if m.Enabled() {
		t.Fatal("enabled without a producer_byte_rate")
	}
	if ms := m.RecordAndGetThrottleTime("x", "c", 1e9); ms != 0 || len(m.Stats()) != 0 {
		t.Fatalf("throttle %d, stats %v", ms, m.Stats())
	}
}

// ClientQuotaManagerTest.testQuotaViolation's shape: within the quota no
// throttle; past it, the time QuotaUtils.throttleTime gives.
func TestManagerThrottleTime(t *testing.T) {
	m, clock := newTestManager(Produce, Quotas{{ClientID: Named("c")}: {ProducerByteRate: 500}})
	// 400 bytes/s for 10 s: within 500 bytes/s.
	for range 10 {
		if ms := m.RecordAndGetThrottleTime("u", "c", 400); ms != 0 {
			t.Fatalf("throttled within the quota: %d", ms)
		}
		clock.Advance(time.Second)
	}
	// 2000 more: 6000 bytes over the 10 s since the first sample, 600/s:
	// (600 - 500) / 500 * 10 s.
	ms := m.RecordAndGetThrottleTime("u", "c", 2000)
	if ms != 2000 {
		t.Fatalf("throttle %d ms, want 2000", ms)
	}
	m.Throttle("u", "c", ms)
	st := m.Stats()
	if len(st) != 1 || st[0].Tags != (Tags{ClientID: "c"}) || st[0].ThrottleTimeMs != 2000 || st[0].Quota != 500 {
		t.Fatalf("stats %+v", st)
	}
	// The client with no quota is measured but never throttled.
	if ms := m.RecordAndGetThrottleTime("u", "other", 1e9); ms != 0 {
		t.Fatalf("unlimited client throttled %d", ms)
	}
}

// A throttled fetch is answered empty: its bytes are taken back.
func TestManagerUnrecord(t *testing.T) {
	m, _ := newTestManager(Fetch, Quotas{{User: DefaultName()}: {ConsumerByteRate: 100}})
	if ms := m.RecordAndGetThrottleTime("a", "c", 5000); ms == 0 {
		t.Fatal("5000 bytes at 100/s not throttled")
	}
	m.Unrecord("a", "c", 5000)
	if ms := m.RecordAndGetThrottleTime("a", "c", 500); ms != 0 {
		t.Fatalf("throttled after the unrecord: %d", ms)
	}
	if got := m.MaxValueInQuotaWindow("a", "c"); got != 1000 {
		t.Fatalf("max value in window %v, want 100 * 10 s", got)
	}
	if got := m.MaxValueInQuotaWindow("a", "c"); math.IsInf(got, 1) {
		t.Fatal("unbounded")
	}
}

// A quota changed at run time applies to the existing sensor at once.
func TestManagerQuotaChange(t *testing.T) {
	m, _ := newTestManager(Produce, Quotas{{User: Named("a")}: {ProducerByteRate: 1e6}})
	if ms := m.RecordAndGetThrottleTime("a", "c", 2000); ms != 0 {
		t.Fatalf("throttled %d", ms)
	}
	m.SetQuotas(Quotas{{User: Named("a")}: {ProducerByteRate: 100}})
	if ms := m.RecordAndGetThrottleTime("a", "c", 1); ms == 0 {
		t.Fatal("the lowered quota did not apply")
	}
}

func TestManagerSensorsExpire(t *testing.T) {
	m, clock := newTestManager(Request, Quotas{{ClientID: DefaultName()}: {RequestPercentage: 10}})
	m.RecordAndGetThrottleTime("a", "old", 1)
	clock.Advance(sensorExpiry + sweepInterval)
	m.RecordAndGetThrottleTime("a", "new", 1)
	st := m.Stats()
	if len(st) != 1 || st[0].Tags.ClientID != "new" {
		t.Fatalf("stats after expiry %+v", st)
	}
}

func TestManagerConcurrentUse(t *testing.T) {
	m, _ := newTestManager(Produce, Quotas{{ClientID: DefaultName()}: {ProducerByteRate: 10}})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 200 {
				m.RecordAndGetThrottleTime("u", string(rune('a'+i%3)), 5)
				m.Stats()
			}
		}()
	}
	wg.Wait()
}

// KIP-599: a strict quota lets the request that empties the bucket
// through, refuses the next one while the bucket is below zero, and
// refills at the quota's rate.
func TestStrictMutationQuota(t *testing.T) {
	m, clock := newTestManager(ControllerMutation, Quotas{{User: Named("a")}: {ControllerMutationRate: 2}})
	q := m.NewMutationQuota("a", "c", true)
	if e := q.Record(30); e != nil { // burst 22: 8 in debt
		t.Fatalf("first mutation refused: %v", e)
	}
	if q.ThrottleTime() != 0 {
		t.Fatal("strict quota throttles the request it let through")
	}
	q = m.NewMutationQuota("a", "c", true)
	if e := q.Record(1); e != ThrottlingQuotaExceeded {
		t.Fatalf("mutation in debt: %v", e)
	}
	if got := q.ThrottleTime(); got != 4000 {
		t.Fatalf("throttle %d, want 4000 (8 tokens at 2/s)", got)
	}
	clock.Advance(time.Second)
	if got := q.ThrottleTime(); got != 3000 {
		t.Fatalf("throttle after 1 s %d, want 3000", got)
	}
	clock.Advance(3 * time.Second)
	if e := m.NewMutationQuota("a", "c", true).Record(1); e != nil {
		t.Fatalf("refilled bucket refused: %v", e)
	}
}

// Older request versions: the mutation is made, the throttle time noted.
func TestPermissiveMutationQuota(t *testing.T) {
	m, _ := newTestManager(ControllerMutation, Quotas{{ClientID: Named("c")}: {ControllerMutationRate: 10}})
	q := m.NewMutationQuota("u", "c", false)
	if e := q.Record(130); e != nil {
		t.Fatalf("permissive quota refused: %v", e)
	}
	if got := q.ThrottleTime(); got != 2000 {
		t.Fatalf("throttle %d, want 2000 (20 tokens at 10/s)", got)
	}
	if m.NewMutationQuota("u", "other", true) != nil {
		t.Fatal("a client without a quota got one")
	}
	var none *MutationQuota
	if none.Record(1e9) != nil || none.ThrottleTime() != 0 {
		t.Fatal("the nil quota is not unbounded")
	}
}

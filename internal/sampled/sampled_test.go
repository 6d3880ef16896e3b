package sampled

import (
	"math"
	"testing"
	"time"
)

var quotaWindows = Config{Samples: 11, Window: time.Second} // quota.window.num, quota.window.size.seconds

func near(t *testing.T, what string, got, want float64) {
	t.Helper()
	if math.Abs(got-want) > 1e-9*math.Max(1, math.Abs(want)) {
		t.Fatalf("%s = %v, want %v", what, got, want)
	}
}

// A first burst is measured over Samples-1 windows (Rate.windowSize's
// special case), not over the milliseconds it took.
func TestRateFirstWindowCountsAsSamplesMinusOneWindows(t *testing.T) {
	var r Rate
	r.Record(quotaWindows, 1000, 0)
	near(t, "rate at 0", r.Measure(quotaWindows, 0), 100)
	near(t, "rate at 500ms", r.Measure(quotaWindows, 500), 1000/10.5)
	if got := r.WindowSize(quotaWindows, 12_000); got != 10_000 {
		// The only sample expired at 11 s: a new empty one starts at now.
		t.Fatalf("window after expiry = %d, want 10000", got)
	}
}

// Once more than Samples-1 windows have passed, the rate is over the
// elapsed time since the oldest sample.
func TestRateOverElapsedTime(t *testing.T) {
	var r Rate
	for ms := int64(0); ms <= 10_500; ms += 100 {
		r.Record(quotaWindows, 100, ms) // 1000/s
	}
	near(t, "steady rate", r.Measure(quotaWindows, 10_500), 106*100/10.5)
}

// Samples without an event for Samples windows are purged.
func TestRatePurgesObsoleteSamples(t *testing.T) {
	var r Rate
	r.Record(quotaWindows, 5000, 0)
	if got := r.Measure(quotaWindows, 11_000); got != 0 {
		t.Fatalf("rate after 11 quiet windows = %v, want 0", got)
	}
}

// QuotaUtils.throttleTime: (rate - bound) / bound * window.
func TestRateThrottleTime(t *testing.T) {
	var r Rate
	r.Record(quotaWindows, 2000, 0) // 200/s over 10 s
	got := r.ThrottleTime(quotaWindows, r.Measure(quotaWindows, 0), 100, 0)
	if got != 10_000 {
		t.Fatalf("throttle = %d ms, want 10000", got)
	}
	// The first sample was measured over a window it had not lived yet:
	// the rate only falls when the sample expires (Samples windows on).
	near(t, "rate at 10 s", r.Measure(quotaWindows, 10_000), 200)
	near(t, "rate at 11 s", r.Measure(quotaWindows, 11_000), 0)
}

// Unrecording (a negative value) takes a throttled fetch's bytes back.
func TestRateUnrecord(t *testing.T) {
	var r Rate
	r.Record(quotaWindows, 700, 10)
	r.Record(quotaWindows, -700, 10)
	near(t, "rate", r.Measure(quotaWindows, 10), 0)
}

// SimpleRate measures a first burst over one window.
func TestSimpleRate(t *testing.T) {
	c := Config{Samples: 11, Window: time.Second}
	var r SimpleRate
	r.Record(c, 2000, 0)
	near(t, "first window", r.Measure(c, 0), 2000)
	near(t, "after 4 s", r.Measure(c, 4000), 500)
	r.Record(c, 2000, 4000)
	near(t, "two samples", r.Measure(c, 4000), 1000)
	near(t, "expired", r.Measure(c, 16_000), 0)
}

func TestAvg(t *testing.T) {
	c := Config{Samples: 2, Window: 30 * time.Second}
	var a Avg
	if !math.IsNaN(a.Measure(c, 0)) {
		t.Fatal("empty average is not NaN")
	}
	a.Record(c, 100, 0)
	a.Record(c, 300, 10)
	near(t, "avg", a.Measure(c, 20), 200)
}

// KIP-599's token bucket: full at the start (burst = samples * window *
// quota), negative after a large mutation, refilled at the quota's rate.
func TestTokenBucket(t *testing.T) {
	c := Config{Samples: 11, Window: time.Second}
	var b TokenBucket
	now := int64(1_700_000_000_000)
	near(t, "initial tokens", b.Measure(c, 2, now), 22)
	b.Record(c, 2, 30, now)
	tokens := b.Measure(c, 2, now)
	near(t, "tokens after 30", tokens, -8)
	if got := ThrottleTime(tokens, 2); got != 4000 {
		t.Fatalf("throttle = %d, want 4000", got)
	}
	near(t, "tokens after the throttle", b.Measure(c, 2, now+4000), 0)
	near(t, "capped at the burst", b.Measure(c, 2, now+60_000), 22)
	if ThrottleTime(1, 2) != 0 {
		t.Fatal("throttle with tokens left")
	}
}

package quota

import (
	"net"
	"testing"
	"time"

	"github.com/kbroker/kbroker/internal/testsupport"
)

func TestConnectionQuota(t *testing.T) {
	clock := testsupport.NewClock(time.Unix(1_700_000_000, 0))
	m := NewConnectionManager(windows, clock.Now)
	local, other := net.ParseIP("127.0.0.1"), net.ParseIP("10.0.0.9")
	if d := m.Record(local); d != 0 {
		t.Fatalf("throttled without quotas: %v", d)
	}
	m.SetQuotas(Quotas{
		{IP: Named("::ffff:127.0.0.1")}: {ConnectionCreationRate: 2},
		{IP: DefaultName()}:             {ConnectionCreationRate: 100},
	})
	// 2/s measured over 10 s: 20 connections pass, the 21st waits.
	for i := range 20 {
		if d := m.Record(local); d != 0 {
			t.Fatalf("connection %d throttled %v", i+1, d)
		}
	}
	d := m.Record(local)
	if d <= 0 || d > time.Second {
		t.Fatalf("21st connection: throttle %v, want (0, 1 s] (bounded by a window)", d)
	}
	// The refused connection did not count: the next one is throttled the
	// same, not longer.
	if d2 := m.Record(local); d2 != d {
		t.Fatalf("throttles %v then %v", d, d2)
	}
	if d := m.Record(other); d != 0 {
		t.Fatalf("another address under the default quota: %v", d)
	}
	st := m.Stats()
	if len(st) != 2 {
		t.Fatalf("stats %+v", st)
	}
	clock.Advance(12 * time.Second)
	if d := m.Record(local); d != 0 {
		t.Fatalf("after the window: %v", d)
	}
}

package testsupport

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"
)

func TestFreePortsDistinctAndBindable(t *testing.T) {
	ports := FreePorts(t, 5)
	seen := map[int]bool{}
	for _, p := range ports {
		if p <= 0 || seen[p] {
			t.Fatalf("ports %v", ports)
		}
		seen[p] = true
	}
	addrs := FreeAddrs(t, 2)
	for _, a := range addrs {
		l, err := net.Listen("tcp", a)
		if err != nil {
			t.Fatalf("%s not free: %v", a, err)
		}
		l.Close()
	}
}

func TestClock(t *testing.T) {
	start := time.Unix(1000, 0)
	c := NewClock(start)
	c.Advance(1500 * time.Millisecond)
	if got := c.Now(); !got.Equal(start.Add(1500 * time.Millisecond)) {
		t.Fatalf("Now = %v", got)
	}
}

// Timers fire in deadline order, ties in the order armed, each seeing its
// own deadline as Now; a timer armed by a callback inside the window fires
// in the same Advance; a stopped one never fires.
func TestClockTimers(t *testing.T) {
	start := time.Unix(1000, 0)
	c := NewClock(start)
	var fired []string
	at := func(name string) func() {
		return func() { fired = append(fired, fmt.Sprintf("%s@%v", name, c.Now().Sub(start))) }
	}
	c.AfterFunc(3*time.Second, at("c"))
	c.AfterFunc(time.Second, func() {
		at("a")()
		c.AfterFunc(time.Second, at("chained"))
	})
	c.AfterFunc(2*time.Second, at("b1"))
	c.AfterFunc(2*time.Second, at("b2"))
	stop := c.AfterFunc(2500*time.Millisecond, at("stopped"))
	if !stop() || stop() {
		t.Fatal("stop: want true once, then false")
	}
	if c.Pending() != 4 {
		t.Fatalf("pending %d, want 4", c.Pending())
	}
	c.Advance(2500 * time.Millisecond)
	if got, want := strings.Join(fired, " "), "a@1s b1@2s b2@2s chained@2s"; got != want {
		t.Fatalf("fired %q, want %q", got, want)
	}
	if !c.Now().Equal(start.Add(2500*time.Millisecond)) || c.Pending() != 1 {
		t.Fatalf("now %v, pending %d", c.Now().Sub(start), c.Pending())
	}
	c.Advance(time.Second)
	if len(fired) != 5 || fired[4] != "c@3s" {
		t.Fatalf("fired %v", fired)
	}
}

func TestProduceRequest(t *testing.T) {
	req := ProduceRequest("t", 3, -1, 5000, []byte{1, 2})
	p := req.Topics[0].Partitions[0]
	if req.GetVersion() != 9 || req.Acks != -1 || req.TimeoutMillis != 5000 || req.Topics[0].Topic != "t" || p.Partition != 3 || len(p.Records) != 2 {
		t.Fatalf("%+v", req)
	}
}

// The ports must come from below the ephemeral range, where no outgoing
// connection can take one between FreePorts and the broker's bind.
func TestFreePortsBelowEphemeralRange(t *testing.T) {
	lo, hi := portPool()
	for _, p := range FreePorts(t, 50) {
		if p < lo || p >= hi {
			t.Fatalf("port %d outside [%d, %d)", p, lo, hi)
		}
	}
}

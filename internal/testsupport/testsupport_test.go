package testsupport

import (
	"net"
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

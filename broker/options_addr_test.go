package broker

import "testing"

// A replica fetcher asks for its leader's address before every fetch: the
// answer is formatted once per endpoint, and again when the endpoint moves.
func TestInterBrokerAddrCached(t *testing.T) {
	br := startTestBroker(t)
	id := br.cfg.NodeID
	want := br.cfg.ClientListener().Address()
	addr, ok := br.interBrokerAddr(id)
	if !ok || addr != want {
		t.Fatalf("interBrokerAddr(%d) = %q, %v; want %q", id, addr, ok, want)
	}
	if n := testing.AllocsPerRun(100, func() { br.interBrokerAddr(id) }); n != 0 {
		t.Fatalf("interBrokerAddr of an unchanged endpoint: %v allocations, want 0", n)
	}
	var c brokerAddrCache
	if a := c.addr(7, "h1", 9092); a != "h1:9092" {
		t.Fatalf("addr = %q", a)
	}
	if a := c.addr(7, "h2", 9093); a != "h2:9093" {
		t.Fatalf("addr after the endpoint moved = %q, want h2:9093", a)
	}
}

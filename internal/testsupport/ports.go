package testsupport

import (
	"net"
	"strconv"
	"testing"
)

// FreePorts reserves n distinct loopback ports: all are bound at once (so
// they differ) and released before returning, for a process to bind.
func FreePorts(tb testing.TB, n int) []int {
	tb.Helper()
	var ls []net.Listener
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			tb.Fatal(err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		l.Close()
	}
	return ports
}

// FreeAddrs is FreePorts as 127.0.0.1:port addresses.
func FreeAddrs(tb testing.TB, n int) []string {
	tb.Helper()
	var out []string
	for _, p := range FreePorts(tb, n) {
		out = append(out, net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
	}
	return out
}

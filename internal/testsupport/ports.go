package testsupport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
)

// FreePorts reserves n distinct loopback ports: all are bound at once (so
// they differ) and released before returning, for a process to bind.
//
// The ports come from below the kernel's ephemeral range: a port taken from
// that range (":0") is handed out again to the next outgoing connection of
// any process, and between our release and the broker's bind one of the
// many connections a cluster test opens often took it ("bind: address
// already in use"). Outgoing connections never use ports below the range.
func FreePorts(tb testing.TB, n int) []int {
	tb.Helper()
	ports, err := freePorts(n)
	if err != nil {
		tb.Fatal(err)
	}
	return ports
}

func freePorts(n int) ([]int, error) {
	lo, hi := portPool()
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for tries := 0; len(ports) < n; tries++ {
		if tries > 100*n+1000 {
			return nil, fmt.Errorf("no %d free loopback ports in [%d, %d)", n, lo, hi)
		}
		p := lo + rand.IntN(hi-lo)
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			continue // in use: try another
		}
		ls = append(ls, l)
		ports = append(ports, p)
	}
	return ports, nil
}

// portPool is the range FreePorts draws from: from 10000 up to the start of
// the ephemeral range (or the whole of 10000-30000 when it cannot be read
// or leaves too little room).
func portPool() (lo, hi int) {
	lo, hi = 10000, 30000
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return lo, hi
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return lo, hi
	}
	if start, err := strconv.Atoi(f[0]); err == nil && start-lo >= 5000 {
		hi = start
	}
	return lo, hi
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

package testsupport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// FreePorts reserves n distinct loopback ports: all are bound at once (so
// they differ) and released before returning, for a process to bind.
//
// Between the release and the broker's bind another test may probe the same
// port and find it free; test binaries of several packages run at once, so a
// lock inside one process is not enough. Each port handed out is therefore
// also claimed in a directory shared by every test process (a file per port,
// created exclusively) and not handed out again by anyone for portClaimTTL,
// by which time its process has bound it (and the bind probe refuses it).
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
		if !claimPort(p, time.Now()) {
			l.Close()
			continue // handed out moments ago by another test: its process may not have bound it yet
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

// portClaimTTL is how long a port handed out stays claimed: far longer than
// any broker takes to bind its listeners after its test picked the ports.
const portClaimTTL = 2 * time.Minute

// claimPort claims port p for this process in the shared claim directory,
// unless another claimed it less than portClaimTTL ago. A directory that
// cannot be used claims nothing and refuses nothing: the bind probe alone
// then decides, as before.
func claimPort(p int, now time.Time) bool {
	return claimPortIn(filepath.Join(os.TempDir(), "kbroker-test-ports"), p, now)
}

func claimPortIn(dir string, p int, now time.Time) bool {
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return true
	}
	path := filepath.Join(dir, strconv.Itoa(p))
	for range 2 {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o666)
		if err == nil {
			f.Close()
			return true
		}
		if !os.IsExist(err) {
			return true
		}
		st, err := os.Stat(path)
		if err != nil {
			continue // removed meanwhile: try to create it again
		}
		if now.Sub(st.ModTime()) < portClaimTTL {
			return false
		}
		os.Remove(path) // a stale claim: take it over
	}
	return false
}

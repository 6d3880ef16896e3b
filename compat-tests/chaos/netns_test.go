package chaos

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// netLab gives each node its own network namespace, joined to a bridge in
// the root namespace through a veth pair; the test process (clients, admin)
// reaches every node through the bridge. Partitions are iptables DROP rules
// inside the namespaces (where iptables works) or a veth set down; slow
// links are tbf qdiscs on both ends of a veth.
//
// Names carry the test process's pid ("kbc<pid>..."), so that a later run
// removes what a killed run left behind (sweepStale).
type netLab struct {
	prefix   string // "kbc<pid>"
	bridge   string
	subnet   string // "10.213.K": the lab's /24
	hosts    map[int32]*netHost
	iptables bool // iptables rules work inside the namespaces

	mu     sync.Mutex // guards cut, slowed
	cut    bool
	slowed map[int32]bool
	downed map[int32]bool
}

// netHost is one node's namespace.
type netHost struct {
	ns   string // namespace name
	veth string // host side of its veth pair, on the bridge
	ip   string
}

// labPrefix marks every namespace and link the suite creates.
const labPrefix = "kbc"

func run(args ...string) error {
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

func output(args ...string) (string, error) {
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// newNetLab creates a namespace per node id. It returns an error (the
// caller skips) where namespaces cannot be made: not root, no ip(8), no
// permission.
func newNetLab(t testing.TB, ids []int32) (*netLab, error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("needs root (ip netns, veth, bridge)")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return nil, errors.New("ip(8) not installed (iproute2)")
	}
	sweepStale(t)
	subnet, err := freeSubnet()
	if err != nil {
		return nil, err
	}
	pfx := fmt.Sprintf("%s%d", labPrefix, os.Getpid())
	l := &netLab{prefix: pfx, bridge: pfx + "br", subnet: subnet, hosts: map[int32]*netHost{},
		slowed: map[int32]bool{}, downed: map[int32]bool{}}
	if err := l.setup(ids); err != nil {
		l.close()
		return nil, err
	}
	l.iptables = l.iptablesWork()
	t.Logf("network lab: bridge %s, %s.0/24, one namespace per node, partitions by %s", l.bridge, subnet,
		map[bool]string{true: "iptables DROP rules", false: "veth down (iptables unavailable: partitioned nodes are cut from clients too)"}[l.iptables])
	return l, nil
}

func (l *netLab) setup(ids []int32) error {
	if err := run("ip", "link", "add", l.bridge, "type", "bridge"); err != nil {
		return err
	}
	if err := run("ip", "addr", "add", l.subnet+".1/24", "dev", l.bridge); err != nil {
		return err
	}
	if err := run("ip", "link", "set", l.bridge, "up"); err != nil {
		return err
	}
	for _, id := range ids {
		h := &netHost{
			ns:   fmt.Sprintf("%s-n%d", l.prefix, id),
			veth: fmt.Sprintf("%sv%d", l.prefix, id),
			ip:   fmt.Sprintf("%s.%d", l.subnet, 10+id),
		}
		l.hosts[id] = h
		peer := fmt.Sprintf("%sp%d", l.prefix, id)
		in := func(args ...string) []string { return append([]string{"ip", "netns", "exec", h.ns}, args...) }
		for _, cmd := range [][]string{
			{"ip", "netns", "add", h.ns},
			{"ip", "link", "add", h.veth, "type", "veth", "peer", "name", peer},
			{"ip", "link", "set", peer, "netns", h.ns},
			{"ip", "link", "set", h.veth, "master", l.bridge},
			{"ip", "link", "set", h.veth, "up"},
			in("ip", "link", "set", peer, "name", "eth0"),
			in("ip", "addr", "add", h.ip+"/24", "dev", "eth0"),
			in("ip", "link", "set", "eth0", "up"),
			in("ip", "link", "set", "lo", "up"),
		} {
			if err := run(cmd...); err != nil {
				return err
			}
		}
	}
	return nil
}

// iptablesWork checks that a rule can be added in a namespace.
func (l *netLab) iptablesWork() bool {
	if _, err := exec.LookPath("iptables"); err != nil {
		return false
	}
	for _, h := range l.hosts {
		err := run("ip", "netns", "exec", h.ns, "iptables", "-w", "-A", "INPUT", "-s", "192.0.2.254", "-j", "DROP")
		if err == nil {
			err = run("ip", "netns", "exec", h.ns, "iptables", "-w", "-F")
		}
		return err == nil
	}
	return false
}

// close removes the namespaces (killing anything left in them), the veths
// and the bridge. Safe to call twice.
func (l *netLab) close() {
	for _, h := range l.hosts {
		removeNetns(h.ns)
		exec.Command("ip", "link", "del", h.veth).Run()
	}
	exec.Command("ip", "link", "del", l.bridge).Run()
}

func removeNetns(ns string) {
	if out, err := exec.Command("ip", "netns", "pids", ns).Output(); err == nil {
		for _, f := range strings.Fields(string(out)) {
			if pid, err := strconv.Atoi(f); err == nil {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
	exec.Command("ip", "netns", "del", ns).Run()
}

var staleName = regexp.MustCompile(`^` + labPrefix + `(\d+)(-n\d+|br|v\d+|p\d+)(@\S+)?$`)

// sweepStale removes namespaces and links left by runs whose process is
// gone (a test binary killed by its timeout cannot clean up).
func sweepStale(t testing.TB) {
	dead := func(name string) bool {
		m := staleName.FindStringSubmatch(name)
		if m == nil {
			return false
		}
		pid, _ := strconv.Atoi(m[1])
		return pid != os.Getpid() && syscall.Kill(pid, 0) == syscall.ESRCH
	}
	if out, err := exec.Command("ip", "netns", "list").Output(); err == nil {
		for _, line := range strings.Split(string(out), "\n") {
			if f := strings.Fields(line); len(f) > 0 && dead(f[0]) {
				t.Logf("removing stale namespace %s", f[0])
				removeNetns(f[0])
			}
		}
	}
	if out, err := exec.Command("ip", "-o", "link", "show").Output(); err == nil {
		for _, line := range strings.Split(string(out), "\n") {
			f := strings.Fields(line)
			if len(f) < 2 {
				continue
			}
			name := strings.TrimSuffix(f[1], ":")
			if dead(name) {
				t.Logf("removing stale link %s", name)
				exec.Command("ip", "link", "del", strings.SplitN(name, "@", 2)[0]).Run()
			}
		}
	}
}

// freeSubnet picks a 10.213.K.0/24 no interface of this machine uses.
func freeSubnet() (string, error) {
	out, err := output("ip", "-4", "-o", "addr", "show")
	if err != nil {
		return "", err
	}
	routes, _ := output("ip", "-4", "route", "show")
	for k := os.Getpid() % 200; k < os.Getpid()%200+200; k++ {
		s := fmt.Sprintf("10.213.%d", k%250+1)
		if !strings.Contains(out, s+".") && !strings.Contains(routes, s+".") {
			return s, nil
		}
	}
	return "", errors.New("no free 10.213.K.0/24 subnet")
}

// partition cuts every node of a from every node of b (both directions).
// Clients in the root namespace still reach everyone when iptables works;
// otherwise the smaller side is taken off the network entirely.
func (l *netLab) partition(a, b []int32) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.iptables {
		small := a
		if len(b) < len(a) {
			small = b
		}
		for _, id := range small {
			if err := run("ip", "link", "set", l.hosts[id].veth, "down"); err != nil {
				return err
			}
			l.downed[id] = true
		}
		return nil
	}
	l.cut = true
	drop := func(from, to int32) error {
		ns, ip := l.hosts[from].ns, l.hosts[to].ip
		if err := run("ip", "netns", "exec", ns, "iptables", "-w", "-A", "INPUT", "-s", ip, "-j", "DROP"); err != nil {
			return err
		}
		return run("ip", "netns", "exec", ns, "iptables", "-w", "-A", "OUTPUT", "-d", ip, "-j", "DROP")
	}
	for _, x := range a {
		for _, y := range b {
			if err := drop(x, y); err != nil {
				return err
			}
			if err := drop(y, x); err != nil {
				return err
			}
		}
	}
	return nil
}

// heal removes every partition.
func (l *netLab) heal() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	var errs []error
	if l.cut {
		for _, h := range l.hosts {
			errs = append(errs, run("ip", "netns", "exec", h.ns, "iptables", "-w", "-F"))
		}
		l.cut = false
	}
	for id := range l.downed {
		errs = append(errs, run("ip", "link", "set", l.hosts[id].veth, "up"))
		delete(l.downed, id)
	}
	return errors.Join(errs...)
}

// slow limits a node's link, both ways, to rate (tc tbf, e.g. "64kbit").
func (l *netLab) slow(id int32, rate string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	h := l.hosts[id]
	tbf := []string{"root", "tbf", "rate", rate, "burst", "4kb", "latency", "400ms"}
	if err := run(append([]string{"tc", "qdisc", "replace", "dev", h.veth}, tbf...)...); err != nil {
		return err
	}
	l.slowed[id] = true
	return run(append([]string{"ip", "netns", "exec", h.ns, "tc", "qdisc", "replace", "dev", "eth0"}, tbf...)...)
}

// unslow removes every rate limit.
func (l *netLab) unslow() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	var errs []error
	for id := range l.slowed {
		h := l.hosts[id]
		errs = append(errs, run("tc", "qdisc", "del", "dev", h.veth, "root"))
		errs = append(errs, run("ip", "netns", "exec", h.ns, "tc", "qdisc", "del", "dev", "eth0", "root"))
		delete(l.slowed, id)
	}
	return errors.Join(errs...)
}

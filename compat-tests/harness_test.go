package compat

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kbroker/kbroker/internal/child"
	"github.com/kbroker/kbroker/internal/powercut"
	"github.com/kbroker/kbroker/internal/testsupport"
)

// node is one kbroker process under test.
type node struct {
	t           *testing.T
	id          int32
	clientAddr  string
	ctrlAddr    string
	metricsAddr string
	dataDir     string
	args        []string
	// journal, when set, is where the broker journals its fsync
	// bookkeeping (internal/powercut), so that powerCut can turn a kill
	// into a power loss; failSyncIf, when set, is a file whose existence
	// fails every sync in its log dirs (a failing disk).
	journal, failSyncIf string

	child.Process
	mu     sync.Mutex // guards output (the pointer; the buffer locks itself) and earlier
	output *outputBuffer
	// earlier is what the node's previous runs printed (shown when a test
	// fails, with the current run's output).
	earlier string
}

// outputBuffer holds what a process prints: os/exec's copier writes it
// while a test may read it (a running node's log).
type outputBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *outputBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *outputBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// cluster is a set of kbroker processes started by a test.
type cluster struct {
	t     *testing.T
	nodes []*node // brokers; node id i+1 at index i
	// controller is the controller-only node, when separateController.
	controller *node
	// clientOpts reach clientAddr (TLS, SASL) when it is secured.
	clientOpts []kgo.Opt
}

// clusterOpts tune startCluster.
type clusterOpts struct {
	brokers int
	// flags are passed to every broker (e.g. "--min.insync.replicas=2").
	flags []string
	// nodeFlags, if set, gives each broker flags of its own (e.g. its
	// broker.rack).
	nodeFlags func(id int32) []string
	// separateController runs the metadata quorum on one more node, a
	// controller only (Kafka's recommended layout); the brokers then join
	// the quorum as non-voters, so losing brokers never costs the quorum.
	separateController bool
	// metrics gives every broker a metrics listener (node.metricsAddr).
	metrics bool
	// brokerOnly (with separateController) starts the brokers with
	// process.roles=broker and no controller listener, as Kafka's brokers.
	brokerOnly bool
	// clientAddrs fixes the client listeners' addresses (broker i on
	// clientAddrs[i]) for suites that dial fixed ports.
	clientAddrs []string
	// listeners, when set, replaces each broker's listeners (by default
	// PLAINTEXT on clientAddr and CONTROLLER on ctrlAddr).
	listeners func(n *node) string
	// scram are credentials (kbroker format --add-scram syntax) stored
	// before the first start.
	scram []string
	// powercut has every broker journal its fsync bookkeeping
	// (node.powerCut) and fail its syncs while node.failSyncIf exists.
	powercut bool
}

// seeds returns KBROKER_SEEDS when testing against a live cluster.
func liveSeeds() []string {
	if s := os.Getenv("KBROKER_SEEDS"); s != "" {
		return strings.Split(s, ",")
	}
	return nil
}

// needOwnCluster skips tests that kill or restart brokers when running
// against a live cluster.
func needOwnCluster(t *testing.T) {
	if liveSeeds() != nil {
		t.Skip("needs brokers it can kill: not run against KBROKER_SEEDS")
	}
}

// startCluster starts opts.brokers kbroker processes forming one cluster and
// waits until every broker is serving.
func startCluster(t *testing.T, opts clusterOpts) *cluster {
	t.Helper()
	if opts.brokers == 0 {
		opts.brokers = 1
	}
	ports := testsupport.FreePorts(t, 3*opts.brokers+2)
	c := &cluster{t: t}
	base := t.TempDir()
	var voters []string
	if opts.separateController {
		voters = []string{fmt.Sprintf("%d@127.0.0.1:%d", controllerNodeID, ports[2*opts.brokers])}
	} else {
		for i := range opts.brokers {
			voters = append(voters, fmt.Sprintf("%d@127.0.0.1:%d", i+1, ports[2*i+1]))
		}
	}
	common := []string{
		"--controller.listener.names=CONTROLLER",
		"--controller.quorum.voters=" + strings.Join(voters, ","),
		"--log.level=info",
	}
	for i := range opts.brokers {
		n := &node{
			t:          t,
			id:         int32(i + 1),
			clientAddr: fmt.Sprintf("127.0.0.1:%d", ports[2*i]),
			ctrlAddr:   fmt.Sprintf("127.0.0.1:%d", ports[2*i+1]),
			dataDir:    filepath.Join(base, fmt.Sprintf("node-%d", i+1)),
		}
		if opts.powercut {
			n.journal = filepath.Join(base, fmt.Sprintf("node-%d.journal", i+1))
			n.failSyncIf = filepath.Join(base, fmt.Sprintf("node-%d.fail-syncs", i+1))
		}
		if i < len(opts.clientAddrs) {
			n.clientAddr = opts.clientAddrs[i]
		}
		metrics := "--metrics.listen="
		if opts.metrics {
			n.metricsAddr = fmt.Sprintf("127.0.0.1:%d", ports[2*opts.brokers+2+i])
			metrics += n.metricsAddr
		}
		listeners := fmt.Sprintf("--listeners=PLAINTEXT://%s,CONTROLLER://%s", n.clientAddr, n.ctrlAddr)
		roles := "--process.roles=broker,controller"
		if opts.brokerOnly {
			listeners, roles = "--listeners=PLAINTEXT://"+n.clientAddr, "--process.roles=broker"
		}
		if opts.listeners != nil {
			listeners = "--listeners=" + opts.listeners(n)
		}
		n.args = append(append([]string{
			"serve",
			fmt.Sprintf("--node.id=%d", n.id),
			listeners, roles,
			"--log.dirs=" + n.dataDir,
			metrics,
		}, common...), opts.flags...)
		if opts.nodeFlags != nil {
			n.args = append(n.args, opts.nodeFlags(n.id)...)
		}
		if len(opts.scram) > 0 {
			n.format(opts.scram)
		}
		c.nodes = append(c.nodes, n)
	}
	if opts.separateController {
		n := &node{
			t:        t,
			id:       controllerNodeID,
			ctrlAddr: fmt.Sprintf("127.0.0.1:%d", ports[2*opts.brokers]),
			dataDir:  filepath.Join(base, "controller"),
		}
		n.args = append([]string{
			"serve",
			fmt.Sprintf("--node.id=%d", n.id),
			"--process.roles=controller",
			"--listeners=CONTROLLER://" + n.ctrlAddr,
			"--log.dirs=" + n.dataDir,
			"--metrics.listen=",
		}, append(common, opts.flags...)...)
		c.controller = n
		n.start()
	}
	for _, n := range c.nodes {
		n.start()
	}
	t.Cleanup(c.stop)
	c.waitServing(60 * time.Second)
	return c
}

// controllerNodeID is the id of the controller-only node.
const controllerNodeID = 100

func (n *node) start() {
	n.t.Helper()
	cmd := exec.Command(kbrokerBin, n.args...)
	cmd.Env = child.Env(os.Environ()) // the test's own KBROKER_* settings are not broker config
	if n.journal != "" {
		cmd.Env = append(cmd.Env, "KBTEST_POWERCUT_JOURNAL="+n.journal, "KBTEST_FAIL_SYNC_IF="+n.failSyncIf)
	}
	output := &outputBuffer{}
	cmd.Stdout = output
	cmd.Stderr = output
	n.mu.Lock()
	if n.output != nil {
		n.earlier += n.output.String() + "---- (restarted) ----\n"
	}
	n.output = output
	n.mu.Unlock()
	if err := n.Start(cmd, nil); err != nil {
		n.t.Fatalf("starting node %d: %v", n.id, err)
	}
}

// format stores SCRAM credentials (kbroker format --add-scram) with the
// node's configuration, before its first start.
func (n *node) format(credentials []string) {
	n.t.Helper()
	args := append([]string{"format"}, n.args[1:]...)
	for _, c := range credentials {
		args = append(args, "--add-scram", c)
	}
	if out, err := exec.Command(kbrokerBin, args...).CombinedOutput(); err != nil {
		n.t.Fatalf("kbroker format (node %d): %v\n%s", n.id, err, out)
	}
}

// kill9 kills the process without letting it clean up.
func (n *node) kill9() {
	n.Signal(syscall.SIGKILL)
	n.WaitExit(10 * time.Second)
}

// powerCut is a power loss of the node's machine: the process dies (kill
// -9) and its log dirs lose everything it had not synced, as its own fsync
// bookkeeping says (internal/powercut). It returns how many files the cut
// shortened, zeroed or deleted.
func (n *node) powerCut() int {
	n.t.Helper()
	n.kill9()
	return n.losePageCache()
}

// powerCutAll cuts the power of several nodes at once: all die first,
// then each loses what it had not synced.
func powerCutAll(nodes ...*node) {
	for _, n := range nodes {
		n.Signal(syscall.SIGKILL)
	}
	for _, n := range nodes {
		n.WaitExit(10 * time.Second)
	}
	for _, n := range nodes {
		n.losePageCache()
	}
}

// losePageCache rewrites the dead node's log dirs to what its disk held.
func (n *node) losePageCache() int {
	n.t.Helper()
	if n.journal == "" {
		n.t.Fatalf("node %d: no power-loss journal (clusterOpts.powercut)", n.id)
	}
	if n.Running() {
		n.t.Fatalf("node %d: power cut of a running process", n.id)
	}
	sizes := map[string]int64{}
	filepath.Walk(n.dataDir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			sizes[p] = fi.Size()
		}
		return nil
	})
	plan, err := powercut.Replay(n.journal)
	if err != nil {
		n.t.Fatalf("node %d: %v", n.id, err)
	}
	changed := len(plan.Delete)
	for p, cut := range plan.Files {
		if size, ok := sizes[p]; ok && cut.Keep < size {
			changed++
		}
	}
	if _, err := powercut.Apply(n.journal); err != nil {
		n.t.Fatalf("node %d: %v", n.id, err)
	}
	n.t.Logf("node %d: power cut: %d files lost their unsynced data or their unsynced name", n.id, changed)
	return changed
}

// stop sends SIGTERM and waits for a clean exit.
func (n *node) stop() {
	n.Signal(syscall.SIGTERM)
	if !n.WaitExit(15 * time.Second) {
		n.kill9()
	}
}

// allLogs returns what every run of the node printed.
func (n *node) allLogs() string {
	cur := n.logs()
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.earlier + cur
}

// logs returns what the process printed.
func (n *node) logs() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.output == nil {
		return ""
	}
	return n.output.String()
}

func (c *cluster) stop() {
	var wg sync.WaitGroup
	for _, n := range c.nodes {
		n.Resume()
		wg.Add(1)
		go func() { defer wg.Done(); n.stop() }()
	}
	wg.Wait()
	if c.controller != nil {
		c.controller.stop()
	}
	if c.t.Failed() {
		nodes := c.nodes
		if c.controller != nil {
			nodes = append(nodes[:len(nodes):len(nodes)], c.controller)
		}
		for _, n := range nodes {
			limit := 8 << 10
			if os.Getenv("KBROKER_TEST_FULL_LOGS") != "" {
				limit = 1 << 30
			}
			c.t.Logf("---- node %d output (last %d bytes) ----\n%s", n.id, limit, tail(n.allLogs(), limit))
		}
	}
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

func (c *cluster) seeds() []string {
	var out []string
	for _, n := range c.nodes {
		out = append(out, n.clientAddr)
	}
	return out
}

// waitServing waits until every running broker answers Metadata listing all
// running brokers.
func (c *cluster) waitServing(d time.Duration) {
	c.t.Helper()
	waitFor(c.t, d, "brokers serving", func() error {
		want := 0
		for _, n := range c.nodes {
			if n.Running() {
				want++
			}
		}
		for _, n := range c.nodes {
			if !n.Running() {
				continue
			}
			cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(n.clientAddr)}, c.clientOpts...)...)
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			brokers, err := kadm.NewClient(cl).ListBrokers(ctx)
			cancel()
			cl.Close()
			if err != nil {
				return fmt.Errorf("node %d: %w", n.id, err)
			}
			if len(brokers) < want {
				return fmt.Errorf("node %d sees %d of %d brokers", n.id, len(brokers), want)
			}
		}
		return nil
	})
}

// restart starts a stopped node again.
func (c *cluster) restart(n *node) {
	n.start()
}

// waitFor polls cond until it returns nil or d passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(d)
	var err error
	for delay := 10 * time.Millisecond; ; delay = min(delay*2, 250*time.Millisecond) {
		if err = cond(); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s: %v", d, what, err)
		}
		time.Sleep(delay)
	}
}

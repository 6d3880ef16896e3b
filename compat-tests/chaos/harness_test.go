package chaos

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/internal/child"
	"github.com/kbroker/kbroker/internal/powercut"
	"github.com/kbroker/kbroker/internal/testsupport"
)

// controllerNodeID is the id of the controller-only node.
const controllerNodeID = 100

// node is one kbroker process.
type node struct {
	id         int32
	clientAddr string // "" for the controller-only node
	ctrlAddr   string
	dataDir    string
	logPath    string // where the process's output goes, across restarts
	netns      string // the network namespace, "" on loopback
	args       []string
	// journal, when set, is where the broker journals its fsync
	// bookkeeping, so that powerCut can turn a kill into a power loss
	// (internal/powercut).
	journal string

	child.Process
}

// clusterOpts shape a cluster.
type clusterOpts struct {
	brokers int
	// separateController runs the metadata quorum on one controller-only
	// node; brokers join as non-voters, so losing brokers never costs the
	// quorum (lesson 3 of compat-tests).
	separateController bool
	// netns runs every node in its own network namespace with its own
	// address (needed by partitions and slow links).
	netns bool
	flags []string
	// runDir keeps the nodes' logs.
	runDir string
	// dataDir, when set and not "", is a node's log dir (default: a
	// temporary folder).
	dataDir func(id int32) string
	// powercut has the brokers journal their fsync bookkeeping
	// (node.powerCut).
	powercut bool
}

// cluster is a set of kbroker processes.
type cluster struct {
	t          testing.TB
	nodes      []*node // brokers, node id i+1 at index i
	controller *node   // controller-only node, or nil
	lab        *netLab // nil on loopback
}

// all returns brokers and the controller-only node.
func (c *cluster) all() []*node {
	if c.controller == nil {
		return c.nodes
	}
	return append(slices.Clone(c.nodes), c.controller)
}

// chaosFlags make a cluster react within seconds (as compat-tests'
// replicationFlags): fenced 3 s after the last heartbeat, out of the ISR
// after 4 s without catching up.
func chaosFlags() []string {
	return []string{
		"--broker.session.timeout.ms=3000",
		"--broker.heartbeat.interval.ms=300",
		"--replica.lag.time.max.ms=4000",
		"--replica.fetch.wait.max.ms=200",
		"--replica.fetch.backoff.ms=200",
		"--replica.socket.timeout.ms=5000",
		"--controller.quorum.election.timeout.ms=1000",
		"--auto.leader.rebalance.enable=false",
		"--auto.create.topics.enable=false",
		"--log.segment.bytes=1048576",
		"--log.level=" + cmpOr(os.Getenv("KBROKER_CHAOS_LOG_LEVEL"), "info"),
		"--metrics.listen=",
	}
}

const (
	sessionTimeout = 3 * time.Second
	lagTime        = 4 * time.Second
)

func startCluster(t testing.TB, opts clusterOpts) *cluster {
	t.Helper()
	c := &cluster{t: t}
	ids := make([]int32, 0, opts.brokers+1)
	for i := range opts.brokers {
		ids = append(ids, int32(i+1))
	}
	if opts.separateController {
		ids = append(ids, controllerNodeID)
	}
	addrs := map[int32][2]string{} // id -> client, controller address
	if opts.netns {
		lab, err := newNetLab(t, ids)
		if err != nil {
			t.Skipf("network namespaces unavailable: %v", err)
		}
		c.lab = lab
		t.Cleanup(lab.close)
		for _, id := range ids {
			ip := lab.hosts[id].ip
			addrs[id] = [2]string{ip + ":9092", ip + ":19092"}
		}
	} else {
		ports := testsupport.FreePorts(t, 2*len(ids))
		for i, id := range ids {
			addrs[id] = [2]string{fmt.Sprintf("127.0.0.1:%d", ports[2*i]), fmt.Sprintf("127.0.0.1:%d", ports[2*i+1])}
		}
	}
	var voters []string
	for _, id := range ids {
		if !opts.separateController || id == controllerNodeID {
			voters = append(voters, fmt.Sprintf("%d@%s", id, addrs[id][1]))
		}
	}
	base := t.TempDir()
	for _, id := range ids {
		n := &node{
			id:       id,
			ctrlAddr: addrs[id][1],
			dataDir:  filepath.Join(base, fmt.Sprintf("node-%d", id)),
			logPath:  filepath.Join(opts.runDir, fmt.Sprintf("node-%d.log", id)),
		}
		if opts.dataDir != nil && opts.dataDir(id) != "" {
			n.dataDir = opts.dataDir(id)
		}
		if c.lab != nil {
			n.netns = c.lab.hosts[id].ns
		}
		if opts.powercut && id != controllerNodeID {
			n.journal = filepath.Join(base, fmt.Sprintf("node-%d.journal", id))
		}
		n.args = []string{"serve", fmt.Sprintf("--node.id=%d", id), "--log.dirs=" + n.dataDir,
			"--controller.listener.names=CONTROLLER", "--controller.quorum.voters=" + strings.Join(voters, ",")}
		if id == controllerNodeID {
			n.args = append(n.args, "--process.roles=controller", "--listeners=CONTROLLER://"+n.ctrlAddr)
			c.controller = n
		} else {
			n.clientAddr = addrs[id][0]
			n.args = append(n.args, fmt.Sprintf("--listeners=PLAINTEXT://%s,CONTROLLER://%s", n.clientAddr, n.ctrlAddr))
			c.nodes = append(c.nodes, n)
		}
		n.args = append(append(n.args, chaosFlags()...), opts.flags...)
	}
	t.Cleanup(c.stop)
	for _, n := range c.all() {
		if err := n.start(); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.waitServing(60 * time.Second); err != nil {
		t.Fatal(err)
	}
	return c
}

func (n *node) String() string { return fmt.Sprintf("node %d", n.id) }

// start runs the process, unless it is running; it dies with the test
// binary (Pdeathsig), so a test killed by its timeout leaves no broker
// behind.
func (n *node) start() error {
	if n.Running() {
		return nil
	}
	out, err := os.OpenFile(n.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "==== %s start %s\n", time.Now().Format(time.RFC3339Nano), n)
	var cmd *exec.Cmd
	if n.netns != "" {
		cmd = exec.Command("ip", append([]string{"netns", "exec", n.netns, kbrokerBin}, n.args...)...)
	} else {
		cmd = exec.Command(kbrokerBin, n.args...)
	}
	cmd.Env = child.Env(os.Environ()) // the test's settings are not broker config
	if n.journal != "" {
		cmd.Env = append(cmd.Env, "KBTEST_POWERCUT_JOURNAL="+n.journal)
	}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := n.Start(cmd, func() { out.Close() }); err != nil {
		out.Close()
		if errors.Is(err, child.ErrRunning) {
			return nil
		}
		return fmt.Errorf("starting %s: %w", n, err)
	}
	return nil
}

func (n *node) kill9() {
	n.Signal(syscall.SIGKILL)
	n.WaitExit(10 * time.Second)
}

// losePageCache turns the death of the (killed) process into a power
// loss: its log dirs keep only what it had synced, per its journal.
func (n *node) losePageCache() (string, error) {
	if n.journal == "" {
		return "", fmt.Errorf("%v: no power-loss journal", n)
	}
	if n.Running() {
		return "", fmt.Errorf("%v: power cut of a running process", n)
	}
	plan, err := powercut.Apply(n.journal)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%d files cut, %d unsynced names dropped", len(plan.Files), len(plan.Delete)), nil
}

// stop shuts the node down cleanly (SIGTERM), or kills it after 20 s.
func (n *node) stop() {
	n.Signal(syscall.SIGCONT)
	n.Signal(syscall.SIGTERM)
	if !n.WaitExit(20 * time.Second) {
		n.kill9()
	}
}

func (c *cluster) stop() {
	var wg sync.WaitGroup
	for _, n := range c.nodes {
		wg.Add(1)
		go func() { defer wg.Done(); n.stop() }()
	}
	wg.Wait()
	if c.controller != nil {
		c.controller.stop()
	}
}

func (c *cluster) node(id int32) *node {
	for _, n := range c.all() {
		if n.id == id {
			return n
		}
	}
	return nil
}

func (c *cluster) seeds() []string {
	var out []string
	for _, n := range c.nodes {
		out = append(out, n.clientAddr)
	}
	return out
}

// upSeeds lists the client addresses of the brokers that can answer.
func (c *cluster) upSeeds() []string {
	var out []string
	for _, n := range c.nodes {
		if n.Serving() {
			out = append(out, n.clientAddr)
		}
	}
	return out
}

// ask sends req to broker n through a fresh client that talks to that
// broker only.
func ask(n *node, req kmsg.Request, d time.Duration) (kmsg.Response, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.clientAddr), kgo.DialTimeout(2*time.Second), kgo.RequestRetries(0))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return cl.Request(ctx, req)
}

// waitServing waits until every broker that is up answers Metadata listing
// all brokers that are up.
func (c *cluster) waitServing(d time.Duration) error {
	return waitFor(d, "brokers serving", func() error {
		want := 0
		for _, n := range c.nodes {
			if n.Serving() {
				want++
			}
		}
		for _, n := range c.nodes {
			if !n.Serving() {
				continue
			}
			resp, err := ask(n, kmsg.NewPtrMetadataRequest(), 3*time.Second)
			if err != nil {
				return fmt.Errorf("%v: %w", n, err)
			}
			if got := len(resp.(*kmsg.MetadataResponse).Brokers); got < want {
				return fmt.Errorf("%v sees %d of %d brokers", n, got, want)
			}
		}
		return nil
	})
}

// partitionState is what Metadata says of one partition.
type partitionState struct {
	leader   int32
	epoch    int32
	replicas []int32
	isr      []int32
}

// describe returns the topic's partitions as the first broker that answers
// sees them.
func (c *cluster) describe(topic string) (map[int32]partitionState, error) {
	var errs []error
	for _, n := range c.nodes {
		if !n.Serving() {
			continue
		}
		req := kmsg.NewPtrMetadataRequest()
		req.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr(topic)}}
		resp, err := ask(n, req, 3*time.Second)
		if err != nil {
			errs = append(errs, fmt.Errorf("%v: %w", n, err))
			continue
		}
		md := resp.(*kmsg.MetadataResponse)
		if len(md.Topics) != 1 || md.Topics[0].ErrorCode != 0 {
			errs = append(errs, fmt.Errorf("%v does not know topic %s", n, topic))
			continue
		}
		out := map[int32]partitionState{}
		for _, p := range md.Topics[0].Partitions {
			out[p.Partition] = partitionState{leader: p.Leader, epoch: p.LeaderEpoch, replicas: p.Replicas, isr: p.ISR}
		}
		return out, nil
	}
	return nil, fmt.Errorf("no broker answered: %w", errors.Join(errs...))
}

// activeController asks the brokers which node is the active controller.
func (c *cluster) activeController() (int32, error) {
	for _, n := range c.nodes {
		if !n.Serving() {
			continue
		}
		req := kmsg.NewPtrDescribeClusterRequest()
		req.Version = 1
		req.EndpointType = 2 // controllers (KIP-919)
		resp, err := ask(n, req, 3*time.Second)
		if err != nil {
			continue
		}
		if id := resp.(*kmsg.DescribeClusterResponse).ControllerID; id >= 0 {
			return id, nil
		}
	}
	return -1, errors.New("no broker knows the active controller")
}

// waitHealthy waits until every node runs, every broker serves and every
// partition of topic has a leader and a full ISR on every broker's view.
func (c *cluster) waitHealthy(topic string, partitions int32, rf int, d time.Duration) error {
	for _, n := range c.all() {
		n.Resume()
		if err := n.start(); err != nil {
			return err
		}
	}
	if err := c.waitServing(d); err != nil {
		return err
	}
	return waitFor(d, "every partition led with a full ISR", func() error {
		for _, n := range c.nodes {
			req := kmsg.NewPtrMetadataRequest()
			req.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr(topic)}}
			resp, err := ask(n, req, 3*time.Second)
			if err != nil {
				return fmt.Errorf("%v: %w", n, err)
			}
			md := resp.(*kmsg.MetadataResponse)
			if len(md.Topics) != 1 || len(md.Topics[0].Partitions) != int(partitions) {
				return fmt.Errorf("%v does not know the topic", n)
			}
			for _, p := range md.Topics[0].Partitions {
				if p.Leader < 0 || len(p.ISR) != rf {
					return fmt.Errorf("%v: partition %d leader %d isr %v", n, p.Partition, p.Leader, p.ISR)
				}
			}
		}
		return nil
	})
}

// createTopic creates a topic with rf replicas and the given configs.
func (c *cluster) createTopic(name string, partitions int32, rf int16, configs map[string]string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.upSeeds()...))
	if err != nil {
		return err
	}
	defer cl.Close()
	cfg := map[string]*string{}
	for k, v := range configs {
		cfg[k] = kadm.StringPtr(v)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, rf, cfg, name)
	if err == nil {
		err = resp.Err
	}
	return err
}

// waitFor polls cond until it returns nil or d passes.
func waitFor(d time.Duration, what string, cond func() error) error {
	deadline := time.Now().Add(d)
	for delay := 20 * time.Millisecond; ; delay = min(delay*2, 500*time.Millisecond) {
		err := cond()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %v waiting for %s: %w", d, what, err)
		}
		time.Sleep(delay)
	}
}

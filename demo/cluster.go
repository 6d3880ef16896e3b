package demo

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// fastFlags make a local cluster react within seconds: a broker is fenced
// 3 s after its last heartbeat, a follower leaves the ISR after 4 s without
// catching up, a lost controller is replaced after about 1 s.
func fastFlags() []string {
	return []string{
		"--broker.session.timeout.ms=3000",
		"--broker.heartbeat.interval.ms=300",
		"--replica.lag.time.max.ms=4000",
		"--replica.fetch.wait.max.ms=200",
		"--replica.fetch.backoff.ms=200",
		"--controller.quorum.election.timeout.ms=1000",
		"--group.initial.rebalance.delay.ms=0",
		"--group.share.min.record.lock.duration.ms=1000",
		"--auto.leader.rebalance.enable=false",
		"--metrics.listen=",
		"--log.level=info",
	}
}

// Fast timeouts, as in fastFlags, for narration.
const (
	sessionTimeout = 3 * time.Second
	lagTimeMax     = 4 * time.Second
)

// controllerID is the node id of the controller-only node.
const controllerID = 100

// clusterSpec is the shape of a demo cluster.
type clusterSpec struct {
	brokers int
	// separateController puts the metadata quorum on one more node, a
	// controller only; the brokers are then not voters, so stopping or
	// killing brokers never costs the quorum.
	separateController bool
}

// cluster is a set of kbroker processes started by a scenario.
type cluster struct {
	dir        string
	nodes      []*node // brokers: node id i+1 at index i
	controller *node   // the controller-only node, if any

	mu      sync.Mutex            // guards clients
	clients map[int32]*kgo.Client // one per broker, seeded with it alone
}

// startCluster starts the processes in dir and waits until every broker
// serves and sees all the others. On error the processes already started
// are killed.
func startCluster(ctx context.Context, binary, dir string, spec clusterSpec) (*cluster, error) {
	ports, err := freePorts(2*spec.brokers + 1)
	if err != nil {
		return nil, err
	}
	c := &cluster{dir: dir}
	var voters []string
	if spec.separateController {
		voters = []string{fmt.Sprintf("%d@127.0.0.1:%d", controllerID, ports[2*spec.brokers])}
	} else {
		for i := range spec.brokers {
			voters = append(voters, fmt.Sprintf("%d@127.0.0.1:%d", i+1, ports[2*i+1]))
		}
	}
	common := append([]string{
		"--controller.listener.names=CONTROLLER",
		"--controller.quorum.voters=" + strings.Join(voters, ","),
	}, fastFlags()...)
	for i := range spec.brokers {
		n := c.newNode(binary, int32(i+1), fmt.Sprintf("127.0.0.1:%d", ports[2*i]), fmt.Sprintf("127.0.0.1:%d", ports[2*i+1]))
		n.args = append([]string{"serve", fmt.Sprintf("--node.id=%d", n.id),
			fmt.Sprintf("--listeners=PLAINTEXT://%s,CONTROLLER://%s", n.clientAddr, n.ctrlAddr),
			"--log.dirs=" + n.dataDir}, common...)
		c.nodes = append(c.nodes, n)
	}
	all := c.nodes
	if spec.separateController {
		n := c.newNode(binary, controllerID, "", fmt.Sprintf("127.0.0.1:%d", ports[2*spec.brokers]))
		n.args = append([]string{"serve", fmt.Sprintf("--node.id=%d", n.id), "--process.roles=controller",
			"--listeners=CONTROLLER://" + n.ctrlAddr, "--log.dirs=" + n.dataDir}, common...)
		c.controller = n
		all = append([]*node{n}, c.nodes...)
	}
	for _, n := range all {
		if err := n.start(); err != nil {
			c.kill()
			return nil, err
		}
	}
	if err := c.waitServing(ctx, 60*time.Second); err != nil {
		c.kill()
		return nil, err
	}
	return c, nil
}

func (c *cluster) newNode(binary string, id int32, clientAddr, ctrlAddr string) *node {
	name := fmt.Sprintf("node-%d", id)
	return &node{
		id: id, clientAddr: clientAddr, ctrlAddr: ctrlAddr, binary: binary,
		dataDir: filepath.Join(c.dir, name),
		logPath: filepath.Join(c.dir, name+".log"),
	}
}

// freePorts finds n distinct free loopback ports.
func freePorts(n int) ([]int, error) {
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("finding a free port: %w", err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// kill ends every process at once (SIGKILL works on paused ones too): the
// cluster is thrown away, so there is nothing to shut down cleanly.
func (c *cluster) kill() {
	c.closeClients()
	var wg sync.WaitGroup
	for _, n := range c.allNodes() {
		wg.Go(func() { n.kill9() })
	}
	wg.Wait()
}

func (c *cluster) allNodes() []*node {
	if c.controller == nil {
		return c.nodes
	}
	return append([]*node{c.controller}, c.nodes...)
}

func (c *cluster) node(id int32) *node { return c.nodes[id-1] }

// seeds lists the client addresses of the brokers that answer requests.
func (c *cluster) seeds() []string {
	var out []string
	for _, n := range c.nodes {
		if n.Serving() {
			out = append(out, n.clientAddr)
		}
	}
	return out
}

// client returns a franz-go client on the serving brokers, tuned for a
// cluster that fails over in seconds. The caller closes it.
//
//   - A paused broker accepts connections (the kernel does) but never
//     answers: a request sent to it waits for the request timeout, cut from
//     10 s to 2 s so that the client soon asks another broker.
//   - After a leader change the client refreshes metadata at most every
//     250 ms (default 5 s) and retries every 250 ms (default: growing to 1 s).
func (c *cluster) client(opts ...kgo.Opt) (*kgo.Client, error) {
	seeds := c.seeds()
	if len(seeds) == 0 {
		return nil, errors.New("no broker is serving")
	}
	return kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(seeds...),
		kgo.RequestTimeoutOverhead(2 * time.Second),
		kgo.MetadataMinAge(250 * time.Millisecond),
		kgo.RetryBackoffFn(func(int) time.Duration { return 250 * time.Millisecond }),
	}, opts...)...)
}

// waitServing waits until every serving broker answers Metadata listing all
// of them, and reports a process that exited (e.g. a port taken).
func (c *cluster) waitServing(ctx context.Context, d time.Duration) error {
	return poll(ctx, d, "the brokers to serve", func() error {
		for _, n := range c.allNodes() {
			if !n.Running() {
				return permanent(fmt.Errorf("node %d exited:\n%s", n.id, n.logTail(2000)))
			}
		}
		want := len(c.seeds())
		for _, n := range c.nodes {
			if !n.Serving() {
				continue
			}
			brokers, err := listBrokers(ctx, n.clientAddr)
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

func listBrokers(ctx context.Context, addr string) (kadm.BrokerDetails, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	return kadm.NewClient(cl).ListBrokers(ctx)
}

// permanentError stops a poll at once.
type permanentError struct{ err error }

func (e permanentError) Error() string { return e.err.Error() }
func (e permanentError) Unwrap() error { return e.err }

func permanent(err error) error { return permanentError{err} }

// poll calls cond until it returns nil, a permanent error, d passes or ctx
// ends, backing off from 10 ms to 200 ms between calls.
func poll(ctx context.Context, d time.Duration, what string, cond func() error) error {
	deadline := time.Now().Add(d)
	for delay := 10 * time.Millisecond; ; delay = min(2*delay, 200*time.Millisecond) {
		err := cond()
		var perm permanentError
		switch {
		case err == nil:
			return nil
		case errors.As(err, &perm):
			return fmt.Errorf("waiting for %s: %w", what, perm.err)
		case time.Now().After(deadline):
			return fmt.Errorf("timed out after %v waiting for %s: %w", d, what, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, context.Cause(ctx))
		case <-time.After(delay):
		}
	}
}

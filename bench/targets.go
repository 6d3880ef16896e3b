package main

// Targets: the brokers under test, each started as its own processes so that
// /proc shows their CPU and memory apart from the load generator's.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// targetKind names a broker implementation.
type targetKind string

const (
	kindKbroker targetKind = "kbroker"
	// kindKbrokerB is a second kbroker build (--kbroker-b), for an A/B of
	// a change against the commit before it in one interleaved run.
	kindKbrokerB targetKind = "kbroker-b"
	kindKfake    targetKind = "kfake"
	kindNull     targetKind = "null"
	// kindNullRF is the null broker writing each batch once per replica:
	// the page-cache cost of replication alone, for context in w2.
	kindNullRF targetKind = "null-rf"
	// kindKbrokerSASLSSL is kbroker secured (secure.go): clients on
	// SASL_SSL with SCRAM-SHA-512, brokers replicating over SASL_SSL too;
	// it runs w2 only, beside plaintext kbroker in the same run.
	kindKbrokerSASLSSL targetKind = "kbroker-sasl-ssl"
)

// cluster is a running target: n brokers in one or more processes.
type cluster struct {
	kind  targetKind
	addrs []string // client addresses, one per broker
	pprof []string // pprof addresses (profiling kbroker only)
	// metrics are kbroker's /metrics listeners (kbroker targets).
	metrics []string
	procs   []*exec.Cmd
	exits   []chan struct{}
	dir     string // its data and logs
	// loadAddrs and loadOpts, when set, are where and how the load's
	// clients connect (a secured target); addrs stay the PLAINTEXT
	// listener the suite's own topic and readiness checks use.
	loadAddrs []string
	loadOpts  []kgo.Opt
	// inProcess, if not nil, stops a target that runs inside this process
	// (the suite's tests); such a target has no pids to measure.
	inProcess func()
}

// dataLeft counts the files or directories of topic's partitions still in
// the target's data directory: kbroker's partition directories, the null
// broker's partition files; kfake keeps none.
func (c *cluster) dataLeft(topic string) int {
	var pattern string
	switch c.kind {
	case kindKbroker, kindKbrokerB:
		pattern = filepath.Join(c.dir, "node-*", topic+"-[0-9]*")
	case kindNull, kindNullRF:
		pattern = filepath.Join(c.dir, topic+"-[0-9]*")
	default:
		return 0
	}
	m, _ := filepath.Glob(pattern)
	return len(m)
}

func (c *cluster) pids() []int {
	var out []int
	for _, p := range c.procs {
		out = append(out, p.Process.Pid)
	}
	return out
}

// stop ends every process with SIGTERM, then SIGKILL after 20 s.
func (c *cluster) stop() {
	if c.inProcess != nil {
		c.inProcess()
		return
	}
	var wg sync.WaitGroup
	for i, p := range c.procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.Process.Signal(syscall.SIGTERM)
			select {
			case <-c.exits[i]:
			case <-time.After(20 * time.Second):
				p.Process.Kill()
				<-c.exits[i]
			}
		}()
	}
	wg.Wait()
}

// startOpts say how to start a target.
type startOpts struct {
	kind    targetKind
	brokers int
	dir     string // fresh directory for data and logs
	kbroker string // path of bin/kbroker (or the profiling build)
	pprof   bool   // kbroker is the pprofbroker build: give it PPROF_LISTEN
	flags   []string
}

func startCluster(ctx context.Context, o startOpts) (*cluster, error) {
	if err := os.MkdirAll(o.dir, 0o755); err != nil {
		return nil, err
	}
	switch o.kind {
	case kindKbroker, kindKbrokerB:
		return startKbroker(ctx, o)
	case kindKbrokerSASLSSL:
		return startSecureKbroker(ctx, o)
	case kindKfake, kindNull, kindNullRF:
		return startSelf(ctx, o)
	}
	return nil, fmt.Errorf("unknown target %q", o.kind)
}

func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	var ports []int
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func (c *cluster) launch(cmd *exec.Cmd) error {
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		close(exited)
	}()
	c.procs = append(c.procs, cmd)
	c.exits = append(c.exits, exited)
	return nil
}

// startKbroker starts n kbroker processes forming one cluster (every node
// a voter, as make cluster does) with default config and waits until each
// serves Metadata listing all of them.
func startKbroker(ctx context.Context, o startOpts) (*cluster, error) {
	ports, err := freePorts(4 * o.brokers)
	if err != nil {
		return nil, err
	}
	var voters []string
	for i := range o.brokers {
		voters = append(voters, fmt.Sprintf("%d@127.0.0.1:%d", i+1, ports[4*i+1]))
	}
	c := &cluster{kind: o.kind, dir: o.dir}
	for i := range o.brokers {
		client := fmt.Sprintf("127.0.0.1:%d", ports[4*i])
		metrics := fmt.Sprintf("127.0.0.1:%d", ports[4*i+3])
		args := append([]string{
			"serve",
			fmt.Sprintf("--node.id=%d", i+1),
			fmt.Sprintf("--listeners=PLAINTEXT://%s,CONTROLLER://127.0.0.1:%d", client, ports[4*i+1]),
			"--controller.listener.names=CONTROLLER",
			"--controller.quorum.voters=" + strings.Join(voters, ","),
			"--log.dirs=" + filepath.Join(o.dir, fmt.Sprintf("node-%d", i+1)),
			"--metrics.listen=" + metrics,
			"--log.level=warn",
		}, o.flags...)
		cmd := exec.Command(o.kbroker, args...)
		cmd.Env = withoutKbrokerEnv()
		if o.pprof {
			addr := fmt.Sprintf("127.0.0.1:%d", ports[4*i+2])
			cmd.Env = append(cmd.Env, "PPROF_LISTEN="+addr)
			c.pprof = append(c.pprof, addr)
		}
		if err := c.launchLogged(cmd, i); err != nil {
			c.stop()
			return nil, err
		}
		c.addrs = append(c.addrs, client)
		c.metrics = append(c.metrics, metrics)
	}
	if err := waitServing(ctx, c, 90*time.Second); err != nil {
		c.stop()
		return nil, fmt.Errorf("%w (logs in %s)", err, o.dir)
	}
	return c, nil
}

// launchLogged starts node i's process with its output appended to
// node-<i+1>.log in the cluster's directory.
func (c *cluster) launchLogged(cmd *exec.Cmd, i int) error {
	logf, err := os.OpenFile(filepath.Join(c.dir, fmt.Sprintf("node-%d.log", i+1)), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd.Stdout, cmd.Stderr = logf, logf
	if i < len(c.procs) {
		// A restart: replace node i's process.
		if err := cmd.Start(); err != nil {
			return err
		}
		exited := make(chan struct{})
		go func() {
			cmd.Wait()
			close(exited)
		}()
		c.procs[i], c.exits[i] = cmd, exited
		return nil
	}
	return c.launch(cmd)
}

// stopNode stops node i with sig (SIGTERM or SIGKILL) and waits for it.
func (c *cluster) stopNode(i int, sig syscall.Signal) {
	c.procs[i].Process.Signal(sig)
	select {
	case <-c.exits[i]:
	case <-time.After(60 * time.Second):
		c.procs[i].Process.Kill()
		<-c.exits[i]
	}
}

// restartNode starts node i again with the same command line.
func (c *cluster) restartNode(i int) error {
	old := c.procs[i]
	cmd := exec.Command(old.Path, old.Args[1:]...)
	cmd.Env = old.Env
	return c.launchLogged(cmd, i)
}

// withoutKbrokerEnv is the environment less KBROKER_* (those are config).
func withoutKbrokerEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KBROKER_") && !strings.HasPrefix(kv, "PPROF_LISTEN=") {
			env = append(env, kv)
		}
	}
	return env
}

// waitServing waits until every broker lists all the others.
func waitServing(ctx context.Context, c *cluster, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		err := servingOnce(ctx, c)
		if err == nil {
			return nil
		}
		for i, ex := range c.exits {
			select {
			case <-ex:
				return fmt.Errorf("broker %d exited while starting", i+1)
			default:
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("brokers not serving after %v: %v", d, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func servingOnce(ctx context.Context, c *cluster) error {
	for _, a := range c.addrs {
		adm, cl, err := adminClient([]string{a})
		if err != nil {
			return err
		}
		cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		bs, err := adm.ListBrokers(cctx)
		cancel()
		cl.Close()
		if err != nil {
			return err
		}
		if len(bs) < len(c.addrs) {
			return fmt.Errorf("%s sees %d of %d brokers", a, len(bs), len(c.addrs))
		}
	}
	return nil
}

// startSelf runs kfake or the null broker in a child process of this
// binary (subcommands serve-kfake and serve-null), which prints the
// addresses it listens on as "ADDRS a,b,c".
func startSelf(ctx context.Context, o startOpts) (*cluster, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	args := []string{"serve-" + string(o.kind), fmt.Sprintf("--brokers=%d", o.brokers), "--dir=" + o.dir}
	if o.kind == kindNullRF {
		args = []string{"serve-null", "--per-replica", fmt.Sprintf("--brokers=%d", o.brokers), "--dir=" + o.dir}
	}
	cmd := exec.Command(self, args...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	logf, err := os.Create(filepath.Join(o.dir, string(o.kind)+".log"))
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	cmd.Stderr = logf
	c := &cluster{kind: o.kind, dir: o.dir}
	if err := c.launch(cmd); err != nil {
		return nil, err
	}
	addrs := make(chan []string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "ADDRS "); ok {
				addrs <- strings.Split(rest, ",")
			}
		}
	}()
	select {
	case c.addrs = <-addrs:
	case <-c.exits[0]:
		return nil, fmt.Errorf("%s exited while starting (log %s)", o.kind, logf.Name())
	case <-time.After(30 * time.Second):
		c.stop()
		return nil, fmt.Errorf("%s did not start in 30s", o.kind)
	case <-ctx.Done():
		c.stop()
		return nil, ctx.Err()
	}
	if err := waitServing(ctx, c, 30*time.Second); err != nil {
		c.stop()
		return nil, err
	}
	return c, nil
}

// serveKfake is the serve-kfake subcommand: a kfake cluster of n in-memory
// brokers until SIGTERM.
func serveKfake(ctx context.Context, brokers int) error {
	ports, err := freePorts(brokers)
	if err != nil {
		return err
	}
	c, err := kfake.NewCluster(kfake.NumBrokers(brokers), kfake.Ports(ports...))
	if err != nil {
		return err
	}
	defer c.Close()
	fmt.Printf("ADDRS %s\n", strings.Join(c.ListenAddrs(), ","))
	<-ctx.Done()
	return nil
}

// serveNull is the serve-null subcommand.
func serveNull(ctx context.Context, brokers int, dir string, perReplica bool) error {
	if dir == "" {
		return errors.New("serve-null needs --dir")
	}
	var ls []string
	for range brokers {
		ls = append(ls, "127.0.0.1:0")
	}
	return runNull(ctx, dir, perReplica, ls, func(addrs []string) {
		fmt.Printf("ADDRS %s\n", strings.Join(addrs, ","))
	})
}

package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/protocol"
	"github.com/kbroker/kbroker/quota"
)

// Node is one member of the metadata quorum: it runs Raft, applies the
// committed metadata log into Images, acts as the active controller while it
// is the Raft leader, and runs the broker side of the broker lifecycle.
type Node struct {
	opts       Options
	log        *slog.Logger
	advertised string // controller address other nodes dial

	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup // leadership watcher, dispatcher, kafka server, lifecycle

	mux      *mux
	kafkaSrv *protocol.Server // nil with ExternalKafkaServer
	trans    *raft.NetworkTransport
	store    *raftboltdb.BoltStore
	raft     *raft.Raft
	fsm      *fsm
	client   *protocol.Pool
	active   atomic.Pointer[controller]
	// mutations measures callers' controller mutations while this node
	// is the active controller (mutation.go).
	mutations *quota.Manager

	notify chan struct{} // wakes the subscriber dispatcher; capacity 1

	mu         sync.Mutex    // guards the fields below
	appliedCh  chan struct{} // closed and replaced on every publish
	subs       []*subscriber
	lifecycle  *brokerLifecycle
	closeErr   error
	closedOnce bool
}

type subscriber struct {
	fn   func(prev, next *Image)
	last *Image // only the dispatcher goroutine touches it
}

// metadataTopic is the name DescribeQuorum knows the metadata log by.
const metadataTopic = "__cluster_metadata"

// Start opens (or creates) the node's Raft state under DataDir, starts its
// controller listener and joins the quorum. On first start every voter
// bootstraps the same configuration of all voters; a node that is not a voter
// waits to be added as a non-voter once it registers as a broker.
func Start(ctx context.Context, opts Options) (*Node, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("controller: %w", err)
	}
	boot, err := readBootstrap(o.DataDir)
	if err != nil {
		return nil, err
	}
	o.BootstrapScram = append(o.BootstrapScram, boot...)
	n := &Node{opts: o, log: o.Logger.With("node", o.NodeID), notify: make(chan struct{}, 1), appliedCh: make(chan struct{}),
		mutations: quota.NewManager(quota.ControllerMutation, o.ControllerQuotaWindow, o.Now)}
	n.ctx, n.cancel = context.WithCancel(context.Background())
	if err := n.start(); err != nil {
		n.Close()
		return nil, err
	}
	return n, nil
}

func (n *Node) start() error {
	ln, err := net.Listen("tcp", n.opts.ListenAddr)
	if err != nil {
		return fmt.Errorf("controller: listening on %s: %w", n.opts.ListenAddr, err)
	}
	n.advertised = n.opts.voterAddr()
	if n.advertised == "" {
		n.advertised = ln.Addr().String()
	}
	fingerprint := quorumFingerprint(n.opts.Voters)
	n.mux = newMux(ln, n.log, fingerprint, &n.opts.Security)
	hlog := newHclogAdapter(n.log)
	n.trans = raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream: &streamLayer{chanListener: n.mux.raft, advertise: n.advertised, fingerprint: fingerprint,
			client: n.opts.Security.Client},
		MaxPool: 3,
		Timeout: 10 * time.Second,
		Logger:  hlog,
	})
	n.store, err = raftboltdb.New(raftboltdb.Options{Path: filepath.Join(n.opts.DataDir, "raft.db")})
	if err != nil {
		return fmt.Errorf("controller: opening raft.db: %w", err)
	}
	snaps, err := raft.NewFileSnapshotStoreWithLogger(n.opts.DataDir, 2, hlog)
	if err != nil {
		return fmt.Errorf("controller: opening snapshots: %w", err)
	}
	conf := n.raftConfig(hlog)
	if err := n.maybeBootstrap(conf, snaps); err != nil {
		return err
	}
	n.fsm = newFSM(n.log, n.onApply)
	n.raft, err = raft.NewRaft(conf, n.fsm, n.store, n.store, snaps, n.trans)
	if err != nil {
		return fmt.Errorf("controller: starting raft: %w", err)
	}
	n.client = newForwardPool(fmt.Sprintf("kbroker-controller-%d", n.opts.NodeID), n.opts.Security.Client)
	n.wg.Add(2)
	go n.watchLeadership()
	go n.dispatch()
	if !n.opts.ExternalKafkaServer {
		sec := n.opts.Security.Listener
		sec.TLS = nil // the mux runs the handshake
		n.kafkaSrv = protocol.NewServer(kafkaHandler{n}, protocol.ServerOptions{Logger: n.log,
			Listeners:     map[string]protocol.ListenerSecurity{ControllerListenerName: sec},
			OnAuthFailure: n.opts.Security.OnAuthFailure})
		n.wg.Add(1)
		go func() {
			defer n.wg.Done()
			_ = n.kafkaSrv.Serve(n.mux.kafka, ControllerListenerName)
		}()
	}
	return nil
}

func (n *Node) raftConfig(hlog *hclogAdapter) *raft.Config {
	conf := raft.DefaultConfig()
	conf.LocalID = raft.ServerID(serverID(n.opts.NodeID))
	conf.HeartbeatTimeout = n.opts.HeartbeatTimeout
	conf.ElectionTimeout = n.opts.ElectionTimeout
	conf.LeaderLeaseTimeout = n.opts.HeartbeatTimeout
	conf.CommitTimeout = min(conf.CommitTimeout, n.opts.HeartbeatTimeout/2)
	conf.SnapshotThreshold = 8192
	conf.Logger = hlog
	conf.NoLegacyTelemetry = true
	return conf
}

// maybeBootstrap writes the initial configuration (all voters) into empty
// stores of a voter. Every voter writes the same one, so the order in which
// they start does not matter.
func (n *Node) maybeBootstrap(conf *raft.Config, snaps raft.SnapshotStore) error {
	if !n.opts.isVoter() {
		return nil
	}
	has, err := raft.HasExistingState(n.store, n.store, snaps)
	if err != nil || has {
		return err
	}
	var cfg raft.Configuration
	for _, v := range n.opts.Voters {
		cfg.Servers = append(cfg.Servers, raft.Server{
			Suffrage: raft.Voter, ID: raft.ServerID(serverID(v.ID)), Address: raft.ServerAddress(v.Addr),
		})
	}
	if err := raft.BootstrapCluster(conf, n.store, n.store, snaps, n.trans, cfg); err != nil {
		return fmt.Errorf("controller: bootstrapping the quorum: %w", err)
	}
	n.log.Info("bootstrapped metadata quorum", "voters", len(cfg.Servers))
	return nil
}

// Close stops everything the node started. It is idempotent.
func (n *Node) Close() error {
	n.mu.Lock()
	if n.closedOnce {
		n.mu.Unlock()
		return n.closeErr
	}
	n.closedOnce = true
	n.mu.Unlock()

	n.cancel()
	if n.kafkaSrv != nil {
		n.kafkaSrv.Close()
	}
	n.wg.Wait()
	var errs []error
	if n.raft != nil {
		errs = append(errs, n.raft.Shutdown().Error())
	}
	if n.trans != nil {
		errs = append(errs, n.trans.Close())
	}
	if n.mux != nil {
		n.mux.close()
	}
	if n.client != nil {
		n.client.Close()
	}
	if n.store != nil {
		errs = append(errs, n.store.Close())
	}
	err := errors.Join(errs...)
	n.mu.Lock()
	n.closeErr = err
	n.mu.Unlock()
	return err
}

// Image returns the latest applied image; never nil.
func (n *Node) Image() *Image { return n.fsm.image() }

// onApply runs on Raft's FSM goroutine after every publish: it must not block.
func (n *Node) onApply() {
	select {
	case n.notify <- struct{}{}:
	default:
	}
	n.mu.Lock()
	close(n.appliedCh)
	n.appliedCh = make(chan struct{})
	n.mu.Unlock()
}

// waitApplied waits until the image has applied index idx.
func (n *Node) waitApplied(ctx context.Context, idx uint64) error {
	for {
		n.mu.Lock()
		ch := n.appliedCh
		n.mu.Unlock()
		if n.Image().AppliedIndex >= idx {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-n.ctx.Done():
			return net.ErrClosed
		}
	}
}

// Subscribe registers fn to be called with (previous, new image) on every
// change. The first call, right away, has an empty previous image. Calls run
// on one goroutine owned by the node, in order; when images arrive faster
// than fn returns, intermediate ones are skipped (prev is always the image
// the previous call delivered).
func (n *Node) Subscribe(fn func(prev, next *Image)) {
	n.mu.Lock()
	n.subs = append(n.subs, &subscriber{fn: fn, last: newEmptyImage()})
	n.mu.Unlock()
	select {
	case n.notify <- struct{}{}:
	default:
	}
}

func (n *Node) dispatch() {
	defer n.wg.Done()
	for {
		select {
		case <-n.ctx.Done():
			return
		case <-n.notify:
		}
		n.mu.Lock()
		subs := slices.Clone(n.subs)
		n.mu.Unlock()
		cur := n.Image()
		for _, s := range subs {
			if s.last != cur {
				prev := s.last
				s.last = cur
				s.fn(prev, cur)
			}
		}
	}
}

// WaitReady returns once this node has applied the metadata log up to the
// active controller's commit index (as of the call). A non-voter gets the
// log only after it is added to the quorum, which its broker registration
// (StartBroker) triggers.
func (n *Node) WaitReady(ctx context.Context) error {
	req := kmsg.NewPtrDescribeQuorumRequest()
	req.Topics = []kmsg.DescribeQuorumRequestTopic{{Topic: metadataTopic, Partitions: []kmsg.DescribeQuorumRequestTopicPartition{{Partition: 0}}}}
	for {
		resp, err := n.Forward(ctx, req)
		if err != nil {
			return err
		}
		dq := resp.(*kmsg.DescribeQuorumResponse)
		if len(dq.Topics) == 1 && len(dq.Topics[0].Partitions) == 1 && dq.Topics[0].Partitions[0].ErrorCode == 0 {
			return n.waitApplied(ctx, uint64(dq.Topics[0].Partitions[0].HighWatermark))
		}
		if err := sleepCtx(ctx, 50*time.Millisecond); err != nil {
			return err
		}
	}
}

// ActiveControllerID returns the Raft leader's node id, -1 if unknown.
func (n *Node) ActiveControllerID() int32 {
	_, id := n.raft.LeaderWithID()
	v, err := strconv.ParseInt(string(id), 10, 32)
	if id == "" || err != nil {
		return -1
	}
	return int32(v)
}

// IsActive reports whether this node is the active controller.
func (n *Node) IsActive() bool { return n.active.Load() != nil }

// MutationQuotas returns the controller mutation quota manager, for
// metrics: its sensors fill while this node is the active controller.
func (n *Node) MutationQuotas() *quota.Manager { return n.mutations }

// KafkaListener returns the Kafka-protocol connections that arrived on the
// controller port. Only meaningful with Options.ExternalKafkaServer;
// otherwise the node serves them itself.
func (n *Node) KafkaListener() net.Listener { return n.mux.kafka }

// watchLeadership runs an active controller for each term this node leads.
func (n *Node) watchLeadership() {
	defer n.wg.Done()
	var stop context.CancelFunc
	var done chan struct{}
	end := func() {
		if stop != nil {
			n.active.Store(nil)
			stop()
			<-done
			stop = nil
		}
	}
	for {
		select {
		case <-n.ctx.Done():
			end()
			return
		case leader := <-n.raft.LeaderCh():
			end()
			if leader {
				ctx, cancel := context.WithCancel(n.ctx)
				stop, done = cancel, make(chan struct{})
				go func() {
					defer close(done)
					n.runActive(ctx)
				}()
			}
		}
	}
}

// runActive brings this node's controller up once the log of earlier terms
// is applied (a Raft barrier) and its first entry committed, then runs it
// until ctx ends.
func (n *Node) runActive(ctx context.Context) {
	var c *controller
	for {
		err := n.raft.Barrier(n.opts.ElectionTimeout).Error()
		if err == nil {
			c = newController(&n.opts, n.fsm, raftProposer{n.raft}, raftQuorum{n.raft})
			c.mutations = n.mutations
			err = c.activate(ctx)
		}
		if err == nil {
			break
		}
		if ctx.Err() != nil || errors.Is(raftErr(err), errNotController) {
			return
		}
		n.log.Warn("controller activation failed; retrying", "err", err)
		if sleepCtx(ctx, 50*time.Millisecond) != nil {
			return
		}
	}
	if ctx.Err() != nil {
		return
	}
	n.active.Store(c)
	n.log.Info("active controller", "term", n.raft.CurrentTerm(), "applied", n.Image().AppliedIndex)
	c.run(ctx)
	n.active.CompareAndSwap(c, nil)
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// raftProposer commits through Raft; the future resolves after the local FSM
// applied the entry.
type raftProposer struct{ r *raft.Raft }

// publish appends a commit marker without waiting for it: the append goes
// to the followers at once and carries the leader's commit index, so they
// apply what was just committed now (hashicorp/raft otherwise tells them
// with its next append, up to twice CommitTimeout later). The marker is a
// command, not a Raft barrier, so that the image's AppliedIndex keeps
// reaching the commit index (WaitReady).
func (p raftProposer) publish() {
	if data, err := encodeEntry(&commitMarkerRecord{}); err == nil {
		p.r.Apply(data, 0)
	}
}

func (p raftProposer) propose(ctx context.Context, data []byte) (uint64, error) {
	timeout := 10 * time.Second
	if d, ok := ctx.Deadline(); ok {
		timeout = max(time.Until(d), time.Millisecond)
	}
	f := p.r.Apply(data, timeout)
	if err := f.Error(); err != nil {
		return 0, raftErr(err)
	}
	if err, ok := f.Response().(error); ok {
		return 0, err
	}
	return f.Index(), nil
}

type raftQuorum struct{ r *raft.Raft }

func (q raftQuorum) isMember(id int32, addr string) (bool, error) {
	f := q.r.GetConfiguration()
	if err := f.Error(); err != nil {
		return false, err
	}
	for _, s := range f.Configuration().Servers {
		if s.ID == raft.ServerID(serverID(id)) {
			return s.Suffrage == raft.Voter || string(s.Address) == addr, nil
		}
	}
	return false, nil
}

func (q raftQuorum) addNonvoter(id int32, addr string) error {
	return raftErr(q.r.AddNonvoter(raft.ServerID(serverID(id)), raft.ServerAddress(addr), 0, 10*time.Second).Error())
}

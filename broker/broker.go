// Package broker is the Kafka API layer of kbroker: one file per API key
// behind a dispatch table, the glue that turns the controller's metadata
// image into partition roles, and the broker's lifecycle.
package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kbroker/kbroker/broker/fetchsession"
	"github.com/kbroker/kbroker/config"
	"github.com/kbroker/kbroker/protocol"
	"github.com/kbroker/kbroker/replication"
	"github.com/kbroker/kbroker/replication/controller"
	"github.com/kbroker/kbroker/security/acl"
	"github.com/kbroker/kbroker/storage"
	"github.com/kbroker/kbroker/storage/vfs"
)

// Broker is one kbroker process: client listeners, the partition logs, the
// replica manager and the controller node, composed here and nowhere else.
type Broker struct {
	cfg    *config.Config
	logger *slog.Logger
	now    func() time.Time

	logs     *storage.Manager
	replicas *replication.Manager
	ctrl     *controller.Node
	// stopStep, when set (tests), replaces defaultStopStepTimeout.
	stopStep time.Duration
	// Shutdown runs once; later calls return its error.
	shutdownOnce sync.Once
	shutdownErr  error
	server       *protocol.Server
	dispatch     *dispatcher

	// listeners are the client listeners, bound before registration so that
	// the ports are known.
	listeners map[string]net.Listener

	groups   *groups                      // the group coordinator wired to this broker
	txns     *txns                        // the transaction coordinator wired to this broker
	txnOrder txnOrder                     // deferred transactional appends, for produce order
	shares   *shares                      // share groups (KIP-932) wired to this broker
	image    atomic.Pointer[metadataView] // the latest applied image
	// announced is the latest image as Metadata answers it: stored as soon
	// as the image arrives, before this broker's partitions follow it (as
	// Kafka's metadata cache is published before its replica manager
	// applies the change), so that a new topic is listed at once.
	announced   atomic.Pointer[metadataView]
	producers   *producerIDs
	imageReady  chan struct{} // closed once the first image is applied
	viewChanged viewSignal    // broadcast on every applied image

	metrics    *metrics
	httpServer *http.Server          // /metrics, /healthz, /readyz
	quotas     *clientQuotas         // client quota managers (quotas.go)
	throttles  *replicationThrottles // replication throttles (replication_throttle.go)
	// fetchSessions are the incremental fetch sessions (KIP-227) of the
	// consumers and followers that fetch from this broker.
	fetchSessions *fetchsession.Cache

	sec     *brokerSecurity    // listeners' TLS and SASL, clients' credentials (security.go)
	authz   *acl.Authorizer    // nil: no authorizer configured (authz.go)
	stopSec context.CancelFunc // stops the certificate reloads
	// serving is set once requests are processed (unfenced and listening).
	serving atomic.Bool
	// halted receives, once, why the broker must stop at once (a failed
	// log dir: halt.go); haltOnce guards the send.
	halted    chan error
	haltOnce  sync.Once
	abortOnce sync.Once
	// fs is the log dirs' file system (nil: the operating system's); tests
	// and the power-loss harness set it before Start.
	fs vfs.FS

	wg sync.WaitGroup // owned goroutines (listener loops, metrics server)

	// brokerAddrs caches interBrokerAddr's answers: every replica fetch
	// asks for its leader's address (options.go).
	brokerAddrs brokerAddrCache
}

// New builds a broker from cfg; Start runs it.
func New(cfg *config.Config, logger *slog.Logger) *Broker {
	b := &Broker{cfg: cfg, logger: logger, now: time.Now, listeners: map[string]net.Listener{},
		imageReady: make(chan struct{}), halted: make(chan error, 1)}
	b.quotas = newClientQuotas(cfg, b.now)
	b.throttles = b.newReplicationThrottles()
	b.dispatch = newDispatcher(b.apis())
	b.dispatch.around = b.withQuotas
	b.metrics = newMetrics()
	b.fetchSessions = fetchsession.New(fetchsession.Options{MaxSlots: int(cfg.MaxIncrementalFetchSessionCacheSlots),
		NewTracker: func() fetchsession.Tracker {
			return &followerTracker{FollowerSession: replication.NewFollowerSession(b.now)}
		}})
	b.metrics.reg.MustRegister(newFetchSessionCollector(b.fetchSessions))
	b.metrics.reg.MustRegister(newStateCollector(b), newShareCollector(b), newTxnCollector(b))
	b.metrics.reg.MustRegister(newQuotaCollector(b))
	b.producers = newProducerIDs(b)
	b.image.Store(newMetadataView(&controller.Image{}, cfg))
	b.announced.Store(b.image.Load())
	return b
}

// Start opens the logs, joins the controller quorum, binds the client
// listeners, registers with the active controller and waits until this broker
// is unfenced (serving).
func (b *Broker) Start(ctx context.Context) error {
	if err := storage.PrepareLogDirs(b.cfg.LogDirs); err != nil {
		return fmt.Errorf("log.dirs: %w", err)
	}
	if err := b.startSecurity(ctx); err != nil {
		return err
	}
	// After the security: the console reads through a listener as built.
	if err := b.serveMetrics(b.cfg.MetricsListen); err != nil {
		return fmt.Errorf("metrics.listen=%s: %w", b.cfg.MetricsListen, err)
	}
	if !b.cfg.HasRole(config.RoleBroker) {
		return b.startControllerOnly(ctx)
	}
	logs, err := storage.NewManager(b.cfg.LogDirs, b.storageOptions())
	if err != nil {
		return fmt.Errorf("opening log dirs: %w", err)
	}
	b.logs = logs
	b.replicas = replication.NewManager(b.replicaOptions())
	b.replicas.Start()

	if err := b.bindListeners(); err != nil {
		return err
	}
	ctrl, err := controller.Start(ctx, b.controllerOptions())
	if err != nil {
		return fmt.Errorf("starting controller node: %w", err)
	}
	b.ctrl = ctrl
	ctrl.Subscribe(b.applySecurityImage)
	b.server = protocol.NewServer(b.dispatch, b.serverOptions())
	b.shares = newShares(b)
	b.groups = newGroups(b)
	b.txns = newTxns(b)
	ctrl.Subscribe(b.applyImage)

	// Register first: a broker outside the voters joins the quorum (and so
	// receives the metadata log) through its registration.
	if err := ctrl.StartBroker(b.registration()); err != nil {
		return fmt.Errorf("registering with the controller: %w", err)
	}
	if err := ctrl.WaitReady(ctx); err != nil {
		return fmt.Errorf("waiting for the metadata log: %w", err)
	}
	if err := storage.WriteMetaProperties(b.cfg.LogDirs, b.cfg.NodeID, ctrl.Image().ClusterID); err != nil {
		return err
	}
	b.logs.Start()
	ctrl.SetReadyToUnfence()
	if err := ctrl.WaitUnfenced(ctx); err != nil {
		return fmt.Errorf("waiting to be unfenced: %w", err)
	}
	// As Kafka's BrokerServer: the listeners are bound from the start (their
	// ports are registered), but requests are processed only once the
	// controller has unfenced this broker and this broker's partitions
	// follow the image that unfenced it (Kafka waits for its metadata
	// publishers likewise), so no client sees the partition roles of a
	// stale image replayed at start. Without the second wait a broker back
	// from an unclean shutdown answered Metadata with its partitions' old
	// leader epochs and produces with UNKNOWN_TOPIC_OR_PARTITION while it
	// was still opening its logs for the old image, and a client then
	// waited out its metadata refresh interval (5 s for franz-go) before
	// producing again, though the partitions were led again at once.
	unfencedAt := ctrl.Image().AppliedIndex
	if !b.waitForView(ctx, func(v *metadataView) bool { return v.img.AppliedIndex >= unfencedAt }) {
		return fmt.Errorf("waiting for the partitions to follow the metadata image: %w", ctx.Err())
	}
	// The coordinators' writes to the partitions led here (transaction
	// markers, __consumer_offsets, __transaction_state, share state) were
	// held until now with the clients' produces (replication/appendgate.go).
	b.replicas.OpenLeaderAppends()
	b.serve()
	b.serving.Store(true)
	b.logger.Info("broker serving", "node_id", b.cfg.NodeID, "cluster_id", ctrl.Image().ClusterID,
		"listeners", b.cfg.Listeners)
	return nil
}

// startControllerOnly runs a node whose process.roles is just controller: a
// voter of the metadata quorum that serves the controller APIs on its
// controller listener and holds no partitions.
func (b *Broker) startControllerOnly(ctx context.Context) error {
	ctrl, err := controller.Start(ctx, b.controllerOptions())
	if err != nil {
		return fmt.Errorf("starting controller node: %w", err)
	}
	b.ctrl = ctrl
	ctrl.Subscribe(b.applySecurityImage)
	if err := ctrl.WaitReady(ctx); err != nil {
		return fmt.Errorf("waiting for the metadata log: %w", err)
	}
	if err := storage.WriteMetaProperties(b.cfg.LogDirs, b.cfg.NodeID, ctrl.Image().ClusterID); err != nil {
		return err
	}
	b.serving.Store(true)
	b.logger.Info("controller serving", "node_id", b.cfg.NodeID, "cluster_id", ctrl.Image().ClusterID,
		"listener", b.cfg.ControllerListenAddr())
	return nil
}

// serve starts accepting on every client listener. The controller node
// serves its own port (Raft and the controller APIs).
func (b *Broker) serve() {
	for name, l := range b.listeners {
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			if err := b.server.Serve(l, name); err != nil && !errors.Is(err, protocol.ErrServerClosed) {
				b.logger.Error("listener stopped", "listener", name, "err", err)
			}
		}()
	}
}

// Shutdown stops the broker: a controlled shutdown first (leaderships move
// away while we still serve), then listeners, replication, logs (flush and
// checkpoints) and the controller node.
func (b *Broker) Shutdown(ctx context.Context) error {
	b.shutdownOnce.Do(func() { b.shutdownErr = b.shutdown(ctx) })
	return b.shutdownErr
}

func (b *Broker) shutdown(ctx context.Context) error {
	if b.ctrl != nil && b.cfg.ControlledShutdownEnable && b.cfg.HasRole(config.RoleBroker) {
		// A controller that cannot grant the shutdown within a session
		// timeout fences this broker anyway once heartbeats stop; waiting
		// longer (say, for a quorum that is gone) gains nothing. As Kafka's
		// broker, give up then and shut down anyway: bounded here too in
		// case the call itself does not return when its context ends.
		d := max(b.cfg.BrokerSessionTimeout, 5*time.Second)
		cctx, cancel := context.WithTimeout(ctx, d)
		b.bounded("controlled shutdown", d+time.Second, func() {
			if err := b.ctrl.ControlledShutdown(cctx); err != nil {
				b.logger.Warn("controlled shutdown incomplete; stopping anyway", "err", err)
			}
		})
		cancel()
	}
	t0 := time.Now()
	b.stopServing()
	b.logger.Info("shutdown: stopped serving", "took", time.Since(t0))
	var errs []error
	if b.logs != nil {
		t0 = time.Now()
		if b.ctrl != nil {
			// The clean-shutdown markers carry this registration's epoch:
			// registering with it next time tells the controller the logs
			// were flushed and closed (KIP-966).
			b.logs.SetBrokerEpoch(b.ctrl.BrokerEpoch())
		}
		// Not bounded: the clean-shutdown marker is written last, once
		// every byte it vouches for is on disk.
		if err := b.logs.Close(); err != nil {
			errs = append(errs, fmt.Errorf("closing logs: %w", err))
		}
		b.logger.Info("shutdown: logs closed", "took", time.Since(t0))
	}
	if b.ctrl != nil {
		var cerr error // read only once the step returned
		if !b.bounded("controller node close", b.stopStepTimeout(), func() { cerr = b.ctrl.Close() }) {
			errs = append(errs, errors.New("closing controller node: timed out"))
		} else if cerr != nil {
			errs = append(errs, fmt.Errorf("closing controller node: %w", cerr))
		}
	}
	return errors.Join(errs...)
}

// defaultStopStepTimeout bounds each step of a shutdown that waits on
// others (the serving goroutines, the replica fetchers, the controller
// node): a step still running then is left behind and the shutdown goes
// on, so that the logs are closed and their clean-shutdown markers written
// whatever else hangs. A broker left alone by the rest of its cluster
// once waited 23 minutes until killed.
const defaultStopStepTimeout = 10 * time.Second

func (b *Broker) stopStepTimeout() time.Duration {
	if b.stopStep > 0 {
		return b.stopStep
	}
	return defaultStopStepTimeout
}

// bounded runs fn and waits at most d for it. Past d it logs every
// goroutine's stack (where the step waits) and returns false, leaving fn
// running: the process is about to exit.
func (b *Broker) bounded(step string, d time.Duration, fn func()) bool {
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
	}
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	b.logger.Error("shutdown step timed out; going on without it", "step", step, "timeout", d,
		"goroutines", string(buf))
	return false
}

// stopServing closes the listeners and stops the goroutines that serve
// (requests, metrics, certificate reloads, groups, replication); logs and
// the controller node are left to the caller. The waits on other
// goroutines are bounded (see defaultStopStepTimeout).
func (b *Broker) stopServing() {
	if b.server != nil {
		b.server.Close()
	}
	for _, l := range b.listeners {
		l.Close() // bound but never served when Start failed early
	}
	b.stopMetrics()
	if b.stopSec != nil {
		b.stopSec()
	}
	b.bounded("serving goroutines", b.stopStepTimeout(), b.wg.Wait)
	if b.txns != nil {
		b.bounded("transaction coordinator", b.stopStepTimeout(), b.txns.close)
	}
	if b.groups != nil {
		b.bounded("group coordinator", b.stopStepTimeout(), b.groups.close)
	}
	if b.shares != nil {
		b.bounded("share coordinator", b.stopStepTimeout(), b.shares.close)
	}
	if b.replicas != nil {
		b.bounded("replica manager", b.stopStepTimeout(), b.replicas.Close)
	}
}

// bindListeners binds every non-controller listener.
func (b *Broker) bindListeners() error {
	for _, l := range b.cfg.Listeners {
		if b.cfg.IsControllerListener(l.Name) {
			continue
		}
		ln, err := net.Listen("tcp", l.Address())
		if err != nil {
			for _, open := range b.listeners {
				open.Close()
			}
			return fmt.Errorf("listener %s: %w", l, err)
		}
		b.listeners[l.Name] = ln
	}
	return nil
}

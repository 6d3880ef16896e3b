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
	server   *protocol.Server
	dispatch *dispatcher

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
	if b.ctrl != nil && b.cfg.ControlledShutdownEnable && b.cfg.HasRole(config.RoleBroker) {
		// A controller that cannot grant the shutdown within a session
		// timeout fences this broker anyway once heartbeats stop; waiting
		// longer (say, for a quorum that is gone) gains nothing.
		cctx, cancel := context.WithTimeout(ctx, max(b.cfg.BrokerSessionTimeout, 5*time.Second))
		if err := b.ctrl.ControlledShutdown(cctx); err != nil {
			b.logger.Warn("controlled shutdown incomplete; stopping anyway", "err", err)
		}
		cancel()
	}
	b.stopServing()
	var errs []error
	if b.logs != nil {
		if b.ctrl != nil {
			// The clean-shutdown markers carry this registration's epoch:
			// registering with it next time tells the controller the logs
			// were flushed and closed (KIP-966).
			b.logs.SetBrokerEpoch(b.ctrl.BrokerEpoch())
		}
		if err := b.logs.Close(); err != nil {
			errs = append(errs, fmt.Errorf("closing logs: %w", err))
		}
	}
	if b.ctrl != nil {
		if err := b.ctrl.Close(); err != nil {
			errs = append(errs, fmt.Errorf("closing controller node: %w", err))
		}
	}
	return errors.Join(errs...)
}

// stopServing closes the listeners and stops the goroutines that serve
// (requests, metrics, certificate reloads, groups, replication); logs and
// the controller node are left to the caller.
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
	b.wg.Wait()
	if b.txns != nil {
		b.txns.close()
	}
	if b.groups != nil {
		b.groups.close()
	}
	if b.shares != nil {
		b.shares.close()
	}
	if b.replicas != nil {
		b.replicas.Close()
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

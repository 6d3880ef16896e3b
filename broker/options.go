package broker

import (
	"math"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kbroker/kbroker/config"
	"github.com/kbroker/kbroker/protocol"
	"github.com/kbroker/kbroker/replication"
	"github.com/kbroker/kbroker/replication/controller"
	"github.com/kbroker/kbroker/security/session"
	"github.com/kbroker/kbroker/storage"
)

// This file maps the one Config onto each component's own options, so that no
// package below broker imports config: the options of storage, replication,
// the controller and the network server, this broker's registration and
// the addresses derived from its listeners.

func (b *Broker) storageOptions() storage.ManagerOptions {
	return storage.ManagerOptions{
		Logger:                 b.logger.With("component", "storage"),
		LogWorkersPerDir:       int(b.cfg.NumRecoveryThreadsPerDataDir),
		Now:                    b.now,
		FlushCheckInterval:     min(b.cfg.LogFlushSchedulerInterval, time.Second),
		RetentionCheckInterval: b.cfg.LogRetentionCheckInterval,
		CheckpointInterval:     min(b.cfg.LogFlushOffsetCheckpointInterval, b.cfg.ReplicaHighWatermarkCheckpointInterval),
		LogCleanerBackoff:      b.cfg.LogCleanerBackoff,
		FS:                     b.fs,
		OnLogDirFailure:        b.logDirFailed,
		OnGroupCommitRound:     b.metrics.onGroupCommitRound,
	}
}

func (b *Broker) replicaOptions() replication.ManagerOptions {
	return replication.ManagerOptions{
		LocalID:           b.cfg.NodeID,
		Logs:              b.logs,
		AlterPartition:    b.alterPartition,
		ReplicaLagTimeMax: b.cfg.ReplicaLagTimeMax,
		OnISRChange:       b.metrics.onISRChange,
		// No append as leader before the broker serves (Start), as no
		// request reaches Kafka's broker before then: the roles it applies
		// meanwhile may be those of the image it replayed, at the epoch it
		// led before a power cut (replication/appendgate.go).
		HoldLeaderAppends: true,
		Fetcher: replication.FetcherOptions{
			MaxWait:           b.cfg.ReplicaFetchWaitMax,
			MinBytes:          b.cfg.ReplicaFetchMinBytes,
			MaxBytes:          b.cfg.ReplicaFetchResponseMaxBytes,
			PartitionMaxBytes: b.cfg.ReplicaFetchMaxBytes,
			Backoff:           b.cfg.ReplicaFetchBackoff,
			LeaderAddr:        b.interBrokerAddr,
			BrokerEpoch:       func() int64 { return b.ctrl.BrokerEpoch() },
			Security:          b.sec.interBroker,
			Throttle:          b.throttles.follower,
		},
		Now:    b.now,
		Logger: b.logger.With("component", "replication"),
	}
}

func (b *Broker) controllerOptions() controller.Options {
	voters := make([]controller.Voter, 0, len(b.cfg.EffectiveVoters()))
	for _, v := range b.cfg.EffectiveVoters() {
		voters = append(voters, controller.Voter{ID: v.ID, Addr: v.Address()})
	}
	return controller.Options{
		NodeID:                       b.cfg.NodeID,
		ListenAddr:                   b.metadataListenAddr(),
		Voters:                       voters,
		DataDir:                      MetadataDir(b.cfg),
		ClusterID:                    b.cfg.ClusterID,
		ElectionTimeout:              b.cfg.ControllerQuorumElectionTimeout,
		HeartbeatTimeout:             b.cfg.ControllerQuorumElectionTimeout,
		BrokerSessionTimeout:         b.cfg.BrokerSessionTimeout,
		BrokerHeartbeatInterval:      b.cfg.BrokerHeartbeatInterval,
		DefaultNumPartitions:         b.cfg.NumPartitions,
		DefaultReplicationFactor:     b.cfg.DefaultReplicationFactor,
		UncleanLeaderElectionEnable:  b.uncleanDefault,
		MinInsyncReplicas:            b.cfg.MinInsyncReplicas,
		AutoLeaderRebalanceEnable:    b.cfg.AutoLeaderRebalanceEnable,
		LeaderImbalanceCheckInterval: b.cfg.LeaderImbalanceCheckInterval,
		ValidateTopicConfig:          config.ValidateTopicConfig,
		ValidateBrokerConfig:         config.ValidateBrokerConfig,
		ValidateGroupConfig:          b.validateGroupConfig,
		Security:                     b.sec.controllerSecurity(b.cfg, b.metrics.onAuthFailure),
		Logger:                       b.logger.With("component", "controller"),
		Now:                          b.now,
	}
}

// MetadataDir is where this node keeps its share of the metadata log
// (controller.Options.DataDir).
func MetadataDir(cfg *config.Config) string {
	return filepath.Join(cfg.EffectiveMetadataLogDir(), "__cluster_metadata-0")
}

func (b *Broker) serverOptions() protocol.ServerOptions {
	return protocol.ServerOptions{
		MaxRequestBytes: b.cfg.SocketRequestMaxBytes,
		IdleTimeout:     b.cfg.ConnectionsMaxIdle,
		MaxConnections:  int(min(b.cfg.MaxConnections, math.MaxInt32)),
		Logger:          b.logger.With("component", "network"),
		Observe:         b.metrics.observe,
		Listeners:       b.sec.serverListeners(),
		OnAuthFailure:   b.metrics.onAuthFailure,
		// connection_creation_rate (KIP-612): client listeners only; the
		// controller port is the Node's own server.
		ThrottleConnection: b.quotas.throttleConnection,
		OnConnClose: func(c *protocol.ConnInfo) {
			if b.shares != nil {
				b.shares.connectionClosed(c)
			}
		},
	}
}

// registration describes this broker to the controller: its advertised
// listeners (clients and other brokers) and its controller listener (so that
// a node outside the voters can join the quorum as a non-voter).
func (b *Broker) registration() controller.BrokerRegistration {
	var eps []controller.Endpoint
	for _, l := range b.advertisedListeners() {
		eps = append(eps, controller.Endpoint{Name: l.Name, Host: l.Host, Port: l.Port, SecurityProtocol: b.protocolCode(l.Name)})
	}
	if cl, ok := b.cfg.ControllerListener(); ok {
		eps = append(eps, controller.Endpoint{Name: cl.Name, Host: cl.Host, Port: cl.Port, SecurityProtocol: b.protocolCode(cl.Name)})
	}
	return controller.BrokerRegistration{Listeners: eps, Rack: b.cfg.BrokerRack, PreviousBrokerEpoch: b.logs.PreviousBrokerEpoch()}
}

// protocolCode is a listener's security protocol as BrokerRegistration
// carries it (Kafka's SecurityProtocol ids).
func (b *Broker) protocolCode(listener string) int16 {
	p, err := session.ParseProtocol(b.cfg.ListenerProtocol(listener))
	if err != nil {
		return 0
	}
	return map[session.Protocol]int16{session.Plaintext: 0, session.SSL: 1, session.SASLPlaintext: 2, session.SASLSSL: 3}[p]
}

// advertisedListeners are the configured advertised listeners, with the
// bound port for a listener configured with port 0.
func (b *Broker) advertisedListeners() []config.Listener {
	out := slices.Clone(b.cfg.AdvertisedListeners)
	for i, l := range out {
		if ln, ok := b.listeners[l.Name]; ok && l.Port == 0 {
			out[i].Port = int32(ln.Addr().(*net.TCPAddr).Port)
		}
	}
	return out
}

// interBrokerAddr resolves a broker id to its inter-broker listener.
func (b *Broker) interBrokerAddr(id int32) (string, bool) {
	br, ok := b.ctrl.Image().Brokers[id]
	if !ok {
		return "", false
	}
	for _, ep := range br.Listeners {
		if ep.Name == b.cfg.InterBrokerListenerName {
			return b.brokerAddrs.addr(id, ep.Host, ep.Port), true
		}
	}
	return "", false
}

// brokerAddrCache holds the "host:port" last formatted for each broker:
// the replica fetchers ask for their leader's address before every fetch,
// and formatting it was two allocations each time.
type brokerAddrCache struct {
	mu    sync.Mutex // guards addrs
	addrs map[int32]brokerAddr
}

type brokerAddr struct {
	host string
	port int32
	addr string
}

// addr returns host:port, formatted anew only when broker id's endpoint
// changed.
func (c *brokerAddrCache) addr(id int32, host string, port int32) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if a, ok := c.addrs[id]; ok && a.host == host && a.port == port {
		return a.addr
	}
	if c.addrs == nil {
		c.addrs = make(map[int32]brokerAddr)
	}
	a := brokerAddr{host: host, port: port, addr: host + ":" + strconv.Itoa(int(port))}
	c.addrs[id] = a
	return a.addr
}

// uncleanDefault is the broker-level unclean.leader.election.enable the
// controller elects with: a dynamic cluster-wide value if one was set
// (IncrementalAlterConfigs on the "" broker resource), else the static one.
func (b *Broker) uncleanDefault() bool {
	if b.ctrl != nil {
		if v, ok := b.ctrl.Image().BrokerConfigs[""]["unclean.leader.election.enable"]; ok {
			return strings.EqualFold(v, "true")
		}
	}
	return b.cfg.UncleanLeaderElectionEnable
}

// metadataListenAddr is where this node's share of the metadata quorum
// listens: its controller listener, or, for a broker-only node (which has
// none, as in Kafka), an ephemeral port on its inter-broker host, through
// which it receives the metadata log as a non-voter. The port is registered
// with the controller on every start.
func (b *Broker) metadataListenAddr() string {
	if addr := b.cfg.ControllerListenAddr(); addr != "" {
		return addr
	}
	for _, l := range b.advertisedListeners() {
		if l.Name == b.cfg.InterBrokerListenerName {
			return net.JoinHostPort(l.Host, "0")
		}
	}
	return "127.0.0.1:0"
}

package controller

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"strconv"
	"time"

	"github.com/kbroker/kbroker/internal/sampled"
	"github.com/kbroker/kbroker/protocol"
	"github.com/kbroker/kbroker/security/principal"
	"github.com/kbroker/kbroker/security/sasl/scram"
)

// Voter is one member of controller.quorum.voters.
type Voter struct {
	ID   int32
	Addr string // host:port of the CONTROLLER listener
}

// Endpoint is one listener a broker advertises.
type Endpoint struct {
	Name             string
	Host             string
	Port             int32
	SecurityProtocol int16
}

// ControllerListenerName is the listener name whose endpoint, in a broker
// registration, is the node's Raft and controller address.
const ControllerListenerName = "CONTROLLER"

// Options configure a Node. Zero values take the defaults noted.
type Options struct {
	NodeID     int32
	ListenAddr string  // this node's controller listener (bind), e.g. 127.0.0.1:19092
	Voters     []Voter // controller.quorum.voters; empty: a quorum of one (this node at ListenAddr)
	DataDir    string  // holds raft.db and snapshots/
	ClusterID  string  // optional; otherwise generated once by the first leader and stored in the log

	// Raft timing (controller.quorum.* ms). Defaults 500ms / 1s; a quorum of
	// one uses 50ms for both since it has nobody to wait for.
	ElectionTimeout, HeartbeatTimeout time.Duration

	// Broker sessions (broker.session.timeout.ms 9s, broker.heartbeat.interval.ms 2s).
	BrokerSessionTimeout, BrokerHeartbeatInterval time.Duration

	DefaultNumPartitions     int32 // num.partitions, default 1
	DefaultReplicationFactor int16 // default.replication.factor, default 1

	// UncleanLeaderElectionEnable is the broker-level default of
	// unclean.leader.election.enable; it may change dynamically. nil = false.
	UncleanLeaderElectionEnable func() bool

	// MinInsyncReplicas is the broker-level default of min.insync.replicas
	// (below a dynamic cluster-wide value and topic overrides): elections
	// keep eligible leader replicas while an ISR is smaller (KIP-966).
	// Default 1.
	MinInsyncReplicas int32

	AutoLeaderRebalanceEnable    bool
	LeaderImbalanceCheckInterval time.Duration // default 300s

	// ValidateTopicConfig validates one topic config; nil accepts everything.
	// A refusal answers INVALID_CONFIG with the error's text.
	ValidateTopicConfig func(name, value string) error

	// ValidateBrokerConfig validates one BROKER resource config (per broker
	// or cluster default) that IncrementalAlterConfigs or AlterConfigs sets;
	// nil accepts everything. A refusal answers INVALID_REQUEST with the
	// error's text, as Kafka does for broker configs (KAFKA-13609).
	ValidateBrokerConfig func(name, value string, perBroker bool) error

	// ControllerQuotaWindow is controller.quota.window.num windows of
	// controller.quota.window.size.seconds: the token buckets of the
	// controller mutation quotas hold that many seconds of their rate.
	// Default 11 windows of 1 s.
	ControllerQuotaWindow sampled.Config
	// ValidateGroupConfig validates a GROUP resource's configs as they
	// would be after a change (all of them: some bounds relate two keys,
	// as Kafka's GroupConfig.validate); nil accepts everything. A refusal
	// answers INVALID_CONFIG with the error's text.
	ValidateGroupConfig func(props map[string]string) error

	// BootstrapScram are SCRAM credentials written with the cluster id when
	// the first controller initializes the metadata log (kbroker format
	// --add-scram): the first admin user. Ignored once the log exists.
	BootstrapScram []scram.Bootstrap

	// Security secures the controller listener; the zero value is
	// PLAINTEXT without authorization.
	Security Security

	// ExternalKafkaServer: the caller serves KafkaListener() itself. By default
	// the Node answers Kafka connections on the controller port with Handle.
	ExternalKafkaServer bool

	Logger *slog.Logger
	Now    func() time.Time // injected clock; default time.Now
	Rand   *rand.Rand       // replica placement start index and shift; default seeded randomly
}

// Security is how the controller listener is secured, for the Kafka
// requests it serves and the Raft streams it carries alike, and how this
// node dials the controller listeners of the others.
type Security struct {
	// TLS is the listener's server config (SSL, SASL_SSL): every accepted
	// connection is TLS before it is routed to Raft or Kafka.
	TLS *tls.Config
	// Listener authenticates connections: the session (SASL, the client
	// certificate's principal) and the failed-authentication delay. Its
	// TLS field is not used (TLS above does it).
	Listener protocol.ListenerSecurity
	// Client dials other nodes' controller listeners: forwarding and Raft.
	Client protocol.ClientSecurity
	// AuthorizeCaller decides whether an authenticated caller may send a
	// controller API request (its key) or, with key RaftStreamKey, stream
	// Raft (Kafka asks CLUSTER_ACTION on the cluster); nil allows everyone.
	AuthorizeCaller func(p principal.Principal, remote net.Addr, key int16) bool
	// OnAuthFailure, if set, is told of every failed authentication.
	OnAuthFailure func(protocol.AuthFailure)
}

// RaftStreamKey stands for a Raft stream in Security.AuthorizeCaller.
const RaftStreamKey int16 = -1

// withDefaults validates o and fills in defaults.
func (o Options) withDefaults() (Options, error) {
	if o.NodeID < 0 {
		return o, fmt.Errorf("controller: node id %d must be >= 0", o.NodeID)
	}
	if o.DataDir == "" {
		return o, fmt.Errorf("controller: DataDir is required")
	}
	if _, _, err := net.SplitHostPort(o.ListenAddr); err != nil {
		return o, fmt.Errorf("controller: listen address %q: %w", o.ListenAddr, err)
	}
	if len(o.Voters) == 0 {
		o.Voters = []Voter{{ID: o.NodeID, Addr: o.ListenAddr}}
	}
	seen := map[int32]bool{}
	for _, v := range o.Voters {
		if seen[v.ID] {
			return o, fmt.Errorf("controller: voter %d listed twice", v.ID)
		}
		seen[v.ID] = true
		if _, _, err := net.SplitHostPort(v.Addr); err != nil {
			return o, fmt.Errorf("controller: voter %d address %q: %w", v.ID, v.Addr, err)
		}
	}
	if o.quorumOfOne() {
		o.HeartbeatTimeout = min(orDefault(o.HeartbeatTimeout, 50*time.Millisecond), 50*time.Millisecond)
		o.ElectionTimeout = min(orDefault(o.ElectionTimeout, 50*time.Millisecond), 50*time.Millisecond)
	}
	o.HeartbeatTimeout = orDefault(o.HeartbeatTimeout, 500*time.Millisecond)
	o.ElectionTimeout = max(orDefault(o.ElectionTimeout, time.Second), o.HeartbeatTimeout)
	o.BrokerSessionTimeout = orDefault(o.BrokerSessionTimeout, 9*time.Second)
	o.BrokerHeartbeatInterval = orDefault(o.BrokerHeartbeatInterval, 2*time.Second)
	o.LeaderImbalanceCheckInterval = orDefault(o.LeaderImbalanceCheckInterval, 300*time.Second)
	if o.DefaultNumPartitions <= 0 {
		o.DefaultNumPartitions = 1
	}
	if o.DefaultReplicationFactor <= 0 {
		o.DefaultReplicationFactor = 1
	}
	if o.ControllerQuotaWindow.Samples <= 0 || o.ControllerQuotaWindow.Window <= 0 {
		o.ControllerQuotaWindow = sampled.Config{Samples: 11, Window: time.Second}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Rand == nil {
		o.Rand = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	return o, nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// quorumOfOne reports whether this node is the only voter.
func (o *Options) quorumOfOne() bool {
	return len(o.Voters) == 0 || len(o.Voters) == 1 && o.Voters[0].ID == o.NodeID
}

// isVoter reports whether this node is listed in Voters.
func (o *Options) isVoter() bool {
	for _, v := range o.Voters {
		if v.ID == o.NodeID {
			return true
		}
	}
	return false
}

// isVoterID reports whether id is listed in Voters.
func (o *Options) isVoterID(id int32) bool {
	for _, v := range o.Voters {
		if v.ID == id {
			return true
		}
	}
	return false
}

// voterAddr returns the advertised controller address of this node when it is
// a voter, "" otherwise.
func (o *Options) voterAddr() string {
	for _, v := range o.Voters {
		if v.ID == o.NodeID {
			return v.Addr
		}
	}
	return ""
}

func (o *Options) uncleanDefault() bool {
	return o.UncleanLeaderElectionEnable != nil && o.UncleanLeaderElectionEnable()
}

// bootstrapRecords are the records of BootstrapScram.
func (o *Options) bootstrapRecords() []record {
	var ups []scram.Upsert
	for _, b := range o.BootstrapScram {
		ups = append(ups, scram.Upsert{User: b.User, Mechanism: b.Mechanism, Credential: b.Credential})
	}
	return scramRecords(ups, nil)
}

func serverID(id int32) string { return strconv.FormatInt(int64(id), 10) }

package controller

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/quota"
)

// proposer commits one encoded entry to the metadata log and returns its
// index once it is applied locally (or why it was not).
type proposer interface {
	propose(ctx context.Context, data []byte) (uint64, error)
}

// publisher is a proposer that can make the followers learn its latest
// commit at once rather than with the next append.
type publisher interface {
	publish()
}

// publishCommits makes the nodes learn the commits so far now: for the
// changes clients act on at once through any broker (a topic created or
// deleted), which a broker must know before the client asks it.
func (c *controller) publishCommits() {
	if p, ok := c.prop.(publisher); ok {
		p.publish()
	}
}

// quorum is the Raft membership the controller manages.
type quorum interface {
	// isMember reports whether node id is in the Raft configuration at
	// addr (a voter counts at any address: voters never move).
	isMember(id int32, addr string) (bool, error)
	addNonvoter(id int32, addr string) error
}

// controller is the active controller: it exists on the Raft leader only,
// from activation until leadership is lost. Every decision reads the latest
// image and commits its records before the next decision starts (mu), as
// Kafka's QuorumController does on its single event thread, so decisions
// never rest on a stale image.
type controller struct {
	opts   *Options
	log    *slog.Logger
	fsm    *fsm
	prop   proposer
	quorum quorum // nil in tests

	// mutations measures callers' controller_mutation_rate (mutation.go);
	// the Node's, nil in tests without quotas.
	mutations *quota.Manager

	mu       sync.Mutex // held across decide + commit; guards the fields below
	sessions map[int32]*session
}

// session is the active controller's in-memory view of one broker's
// heartbeats (Kafka's BrokerHeartbeatManager). It is rebuilt on failover.
type session struct {
	epoch          int64     // registration the session belongs to
	lastContact    time.Time // last heartbeat, or activation time
	heard          bool      // a heartbeat or registration arrived on this controller
	metadataOffset int64     // last CurrentMetadataOffset, -1 unknown
	shutdownOffset int64     // index of its controlled shutdown record, -1 none
}

func newController(opts *Options, f *fsm, prop proposer, q quorum) *controller {
	c := &controller{opts: opts, log: opts.Logger, fsm: f, prop: prop, quorum: q, sessions: map[int32]*session{}}
	now := opts.Now()
	for id, b := range f.image().Brokers {
		c.sessions[id] = &session{epoch: b.Epoch, lastContact: now, metadataOffset: -1, shutdownOffset: -1}
	}
	return c
}

// activate writes the first entry of this controller's term: the cluster id
// if the log has none yet, an activation marker otherwise.
func (c *controller) activate(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fsm.image().ClusterID == "" {
		id := c.opts.ClusterID
		if id == "" {
			id = newUUID().String()
		}
		// The bootstrap credentials (kbroker format --add-scram) go into
		// the same entry as the cluster id: the first admin exists as soon
		// as the cluster does.
		recs := append([]record{&initClusterRecord{ClusterID: id}}, c.opts.bootstrapRecords()...)
		recs = append(recs, bootstrapFeatures(c.fsm.image())...)
		_, err := c.commit(ctx, recs...)
		return err
	}
	// A cluster created before a feature existed finalizes it now.
	recs := append([]record{&activationRecord{NodeID: c.opts.NodeID}}, bootstrapFeatures(c.fsm.image())...)
	_, err := c.commit(ctx, recs...)
	return err
}

// commit appends recs as one atomic entry. Callers hold mu.
func (c *controller) commit(ctx context.Context, recs ...record) (uint64, error) {
	if len(recs) == 0 {
		return 0, nil
	}
	logELRChanges(c.log, c.fsm.image(), recs)
	data, err := encodeEntry(recs...)
	if err != nil {
		return 0, fmt.Errorf("controller: encoding entry: %w", err)
	}
	return c.prop.propose(ctx, data)
}

// handle serves one controller API request.
func (c *controller) handle(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	switch r := req.(type) {
	case *kmsg.CreateTopicsRequest:
		return c.createTopics(ctx, r)
	case *kmsg.DeleteTopicsRequest:
		return c.deleteTopics(ctx, r)
	case *kmsg.CreatePartitionsRequest:
		return c.createPartitions(ctx, r)
	case *kmsg.ElectLeadersRequest:
		return c.electLeaders(ctx, r)
	case *kmsg.IncrementalAlterConfigsRequest:
		return c.incrementalAlterConfigs(ctx, r)
	case *kmsg.AlterConfigsRequest:
		return c.alterConfigs(ctx, r)
	case *kmsg.AlterPartitionRequest:
		return c.alterPartition(ctx, r)
	case *kmsg.AlterPartitionAssignmentsRequest:
		return c.alterPartitionReassignments(ctx, r)
	case *kmsg.ListPartitionReassignmentsRequest:
		return c.listPartitionReassignments(r)
	case *kmsg.BrokerRegistrationRequest:
		return c.registerBroker(ctx, r)
	case *kmsg.BrokerHeartbeatRequest:
		return c.brokerHeartbeat(ctx, r)
	case *kmsg.UnregisterBrokerRequest:
		return c.unregisterBroker(ctx, r)
	case *kmsg.AllocateProducerIDsRequest:
		return c.allocateProducerIDs(ctx, r)
	case *kmsg.CreateACLsRequest:
		return c.createAcls(ctx, r)
	case *kmsg.DeleteACLsRequest:
		return c.deleteAcls(ctx, r)
	case *kmsg.AlterUserSCRAMCredentialsRequest:
		return c.alterUserScramCredentials(ctx, r)
	case *kmsg.UpdateFeaturesRequest:
		return c.updateFeatures(ctx, r)
	case *kmsg.AlterClientQuotasRequest:
		return c.alterClientQuotas(ctx, r)
	}
	return nil, fmt.Errorf("controller: api key %d is not a controller api", req.Key())
}

func (c *controller) uncleanDefault() bool { return c.opts.uncleanDefault() }

// run performs the periodic work until ctx ends: fencing brokers whose
// session expired, electing leaders for offline partitions, adding joined
// nodes to the quorum, and preferred leader rebalancing.
func (c *controller) run(ctx context.Context) {
	tick := min(max(c.opts.BrokerSessionTimeout/8, 10*time.Millisecond), 500*time.Millisecond)
	t := time.NewTicker(tick)
	defer t.Stop()
	lastRebalance := c.opts.Now()
	var lastReconcile time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		c.fenceExpired(ctx)
		c.electOffline(ctx)
		now := c.opts.Now()
		if now.Sub(lastReconcile) >= time.Second {
			lastReconcile = now
			c.reconcileQuorum()
		}
		if c.opts.AutoLeaderRebalanceEnable && now.Sub(lastRebalance) >= c.opts.LeaderImbalanceCheckInterval {
			lastRebalance = now
			c.rebalance(ctx)
		}
	}
}

// fenceExpired fences, one commit each, the unfenced brokers whose session
// expired (Kafka's maybeFenceOneStaleBroker).
func (c *controller) fenceExpired(ctx context.Context) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range c.expiredLocked(c.opts.Now()) {
		img := c.fsm.image()
		b := img.Brokers[id]
		c.log.Info("fencing broker: session expired", "broker", id, "epoch", b.Epoch, "timeout", c.opts.BrokerSessionTimeout)
		recs := append([]record{&fenceBrokerRecord{ID: id, Epoch: b.Epoch}}, removeBrokerChanges(img, id, c.policy())...)
		if _, err := c.commit(ctx, recs...); err != nil {
			c.log.Warn("fencing broker failed", "broker", id, "err", err)
			return
		}
	}
}

// expiredLocked returns the unfenced brokers whose last contact is older
// than the session timeout, in id order.
func (c *controller) expiredLocked(now time.Time) []int32 {
	img := c.fsm.image()
	var out []int32
	for _, b := range img.unfencedBrokers() {
		s := c.sessionLocked(b)
		if now.Sub(s.lastContact) > c.opts.BrokerSessionTimeout {
			out = append(out, b.ID)
		}
	}
	return out
}

// sessionLocked returns broker b's session, starting a fresh one when b
// registered again since.
func (c *controller) sessionLocked(b *BrokerInfo) *session {
	s := c.sessions[b.ID]
	if s == nil || s.epoch != b.Epoch {
		s = &session{epoch: b.Epoch, lastContact: c.opts.Now(), metadataOffset: -1, shutdownOffset: -1}
		c.sessions[b.ID] = s
	}
	return s
}

// hasValidSessionLocked: b heartbeats to this controller, is unfenced, and
// its session has not expired. A new incarnation of such a broker is a
// duplicate registration.
func (c *controller) hasValidSessionLocked(b *BrokerInfo, now time.Time) bool {
	s := c.sessions[b.ID]
	return s != nil && s.epoch == b.Epoch && s.heard && !b.Fenced &&
		now.Sub(s.lastContact) <= c.opts.BrokerSessionTimeout
}

// electOffline elects leaders for offline partitions that now can have one
// (an ISR member came back, or unclean election got enabled).
func (c *controller) electOffline(ctx context.Context) {
	c.mu.Lock()
	defer c.mu.Unlock()
	recs := offlineChanges(c.fsm.image(), -1, c.policy())
	if len(recs) == 0 {
		return
	}
	c.log.Info("electing leaders for offline partitions", "partitions", len(recs))
	if _, err := c.commit(ctx, recs...); err != nil {
		c.log.Warn("offline partition election failed", "err", err)
	}
}

// rebalance moves leadership back to preferred replicas.
func (c *controller) rebalance(ctx context.Context) {
	c.mu.Lock()
	defer c.mu.Unlock()
	recs := preferredChanges(c.fsm.image(), c.policy())
	if len(recs) == 0 {
		return
	}
	c.log.Info("preferred leader rebalance", "partitions", len(recs))
	if _, err := c.commit(ctx, recs...); err != nil {
		c.log.Warn("preferred leader rebalance failed", "err", err)
	}
}

// reconcileQuorum adds every registered broker that advertises a CONTROLLER
// listener and is not in the Raft configuration as a non-voter, and updates
// the address of a non-voter that registered again elsewhere (a broker-only
// node listens for the metadata log on a new ephemeral port each start).
func (c *controller) reconcileQuorum() {
	if c.quorum == nil {
		return
	}
	for _, b := range c.fsm.image().Brokers {
		c.maybeAddNonvoter(b)
	}
}

func (c *controller) maybeAddNonvoter(b *BrokerInfo) {
	if c.quorum == nil {
		return
	}
	var addr string
	for _, e := range b.Listeners {
		if e.Name == ControllerListenerName {
			addr = hostPort(e.Host, e.Port)
		}
	}
	if addr == "" {
		return
	}
	member, err := c.quorum.isMember(b.ID, addr)
	if err != nil || member {
		return
	}
	c.log.Info("adding node to the metadata quorum as a non-voter", "node", b.ID, "addr", addr)
	if err := c.quorum.addNonvoter(b.ID, addr); err != nil {
		c.log.Warn("adding non-voter failed", "node", b.ID, "err", err)
	}
}

// newUUID returns a random non-zero UUID (version 4 layout, as Kafka's Uuid.randomUuid).
func newUUID() uuid {
	for {
		var u uuid
		_, _ = rand.Read(u[:])
		u[6] = u[6]&0x0f | 0x40
		u[8] = u[8]&0x3f | 0x80
		if u != (uuid{}) {
			return u
		}
	}
}

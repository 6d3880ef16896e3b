package controller

import (
	"context"
	"fmt"
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Broker lifecycle on the controller side (KIP-631): BrokerRegistration (62),
// BrokerHeartbeat (63), UnregisterBroker (64), and AllocateProducerIds (67).

// brokerState is a broker's control state (Kafka's BrokerControlState).
type brokerState int8

const (
	stateFenced brokerState = iota
	stateUnfenced
	stateControlledShutdown
	stateShutdownNow
)

func (s brokerState) String() string {
	return [...]string{"FENCED", "UNFENCED", "CONTROLLED_SHUTDOWN", "SHUTDOWN_NOW"}[s]
}

func (s brokerState) fenced() bool { return s == stateFenced || s == stateShutdownNow }

func currentBrokerState(b *BrokerInfo) brokerState {
	switch {
	case b.Fenced:
		return stateFenced
	case b.InControlledShutdown:
		return stateControlledShutdown
	}
	return stateUnfenced
}

// heartbeatInput is what a state transition depends on.
type heartbeatInput struct {
	wantFence, wantShutdown bool
	metadataOffset          int64 // the broker's CurrentMetadataOffset
	registrationOffset      int64 // its epoch: the index of its registration
	hasLeaderships          bool
	shutdownOffset          int64 // index of its controlled shutdown record
	lowestActiveOffset      int64 // lowest metadata offset among live brokers
}

// nextBrokerState is Kafka's BrokerHeartbeatManager.calculateNextBrokerState:
// a fenced broker is unfenced once it asks and has applied its own
// registration; an unfenced broker asking to shut down enters controlled
// shutdown while it leads partitions, and is told to shut down once it leads
// none and every live broker has seen that.
func nextBrokerState(cur brokerState, in heartbeatInput) brokerState {
	switch cur {
	case stateFenced:
		switch {
		case in.wantShutdown:
			return stateShutdownNow
		case !in.wantFence && in.metadataOffset >= in.registrationOffset:
			return stateUnfenced
		}
		return stateFenced
	case stateUnfenced:
		switch {
		case in.wantFence && in.wantShutdown:
			return stateShutdownNow
		case in.wantFence:
			return stateFenced
		case in.wantShutdown && in.hasLeaderships:
			return stateControlledShutdown
		case in.wantShutdown:
			return stateShutdownNow
		}
		return stateUnfenced
	case stateControlledShutdown:
		if in.hasLeaderships || in.shutdownOffset > in.lowestActiveOffset {
			return stateControlledShutdown
		}
	}
	return stateShutdownNow
}

// transitionRecords returns the records that move broker b from cur to next.
func transitionRecords(img *Image, b *BrokerInfo, cur, next brokerState, pol policy) []record {
	if cur == next {
		return nil
	}
	switch next {
	case stateFenced, stateShutdownNow:
		if b.Fenced {
			return nil
		}
		return append([]record{&fenceBrokerRecord{ID: b.ID, Epoch: b.Epoch}}, removeBrokerChanges(img, b.ID, pol)...)
	case stateUnfenced:
		return append([]record{&unfenceBrokerRecord{ID: b.ID, Epoch: b.Epoch}}, offlineChanges(img, b.ID, pol)...)
	case stateControlledShutdown:
		return append([]record{&controlledShutdownRecord{ID: b.ID, Epoch: b.Epoch}}, removeBrokerChanges(img, b.ID, pol)...)
	}
	return nil
}

// lowestActiveOffsetLocked is the lowest metadata offset live brokers
// reported (-1 for one not heard from since activation), MaxInt64 if none.
func (c *controller) lowestActiveOffsetLocked(img *Image) int64 {
	lowest := int64(math.MaxInt64)
	for _, b := range img.LiveBrokers() {
		lowest = min(lowest, c.sessionLocked(b).metadataOffset)
	}
	return lowest
}

func (c *controller) brokerHeartbeat(ctx context.Context, req *kmsg.BrokerHeartbeatRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.BrokerHeartbeatResponse)
	resp.IsFenced = true
	c.mu.Lock()
	defer c.mu.Unlock()
	img := c.fsm.image()
	b := img.Brokers[req.BrokerID]
	if b == nil || b.Epoch != req.BrokerEpoch {
		resp.ErrorCode = kerr.StaleBrokerEpoch.Code
		return resp, nil
	}
	s := c.sessionLocked(b)
	s.lastContact, s.heard = c.opts.Now(), true
	cur := currentBrokerState(b)
	if cur == stateControlledShutdown && s.shutdownOffset < 0 {
		s.shutdownOffset = int64(img.AppliedIndex) // entered before a failover
	}
	next := nextBrokerState(cur, heartbeatInput{
		wantFence:          req.WantFence,
		wantShutdown:       req.WantShutdown,
		metadataOffset:     req.CurrentMetadataOffset,
		registrationOffset: b.Epoch,
		hasLeaderships:     img.leads(b.ID),
		shutdownOffset:     s.shutdownOffset,
		lowestActiveOffset: c.lowestActiveOffsetLocked(img),
	})
	if recs := transitionRecords(img, b, cur, next, c.policy()); len(recs) > 0 {
		c.log.Info("broker state change", "broker", b.ID, "epoch", b.Epoch, "from", cur, "to", next, "records", len(recs))
		idx, err := c.commit(ctx, recs...)
		if err != nil {
			return nil, err
		}
		if next == stateControlledShutdown {
			s.shutdownOffset = int64(idx)
		}
	}
	if next.fenced() {
		s.shutdownOffset = -1
	}
	s.metadataOffset = req.CurrentMetadataOffset
	resp.IsCaughtUp = req.CurrentMetadataOffset >= b.Epoch
	resp.IsFenced = next.fenced()
	resp.ShouldShutdown = next == stateShutdownNow
	return resp, nil
}

func (c *controller) registerBroker(ctx context.Context, req *kmsg.BrokerRegistrationRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.BrokerRegistrationResponse)
	resp.BrokerEpoch = -1
	b, code, err := c.registerLocked(ctx, req)
	if err != nil {
		return nil, err
	}
	resp.ErrorCode = code
	if b != nil {
		resp.BrokerEpoch = b.Epoch
		c.maybeAddNonvoter(b)
	}
	return resp, nil
}

func (c *controller) registerLocked(ctx context.Context, req *kmsg.BrokerRegistrationRequest) (*BrokerInfo, int16, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	img := c.fsm.image()
	switch {
	case req.BrokerID < 0:
		return nil, kerr.InvalidRequest.Code, nil
	case req.ClusterID != "" && req.ClusterID != img.ClusterID:
		// An empty id is accepted: a joining non-voter has no log yet.
		c.log.Warn("registration with another cluster id refused", "broker", req.BrokerID, "cluster", req.ClusterID, "ours", img.ClusterID)
		return nil, kerr.InconsistentClusterID.Code, nil
	}
	now := c.opts.Now()
	existing := img.Brokers[req.BrokerID]
	if existing != nil && existing.IncarnationID == req.IncarnationID {
		return existing, 0, nil // a retry of a registration that went through
	}
	if existing != nil && c.hasValidSessionLocked(existing, now) {
		c.log.Warn("duplicate broker registration refused: the registered incarnation is alive", "broker", req.BrokerID)
		return nil, kerr.DuplicateBrokerRegistration.Code, nil
	}
	rec := &registerBrokerRecord{ID: req.BrokerID, IncarnationID: req.IncarnationID}
	if req.Rack != nil {
		rec.Rack = *req.Rack
	}
	for _, l := range req.Listeners {
		rec.Listeners = append(rec.Listeners, Endpoint{Name: l.Name, Host: l.Host, Port: int32(l.Port), SecurityProtocol: l.SecurityProtocol})
	}
	recs := c.reregistrationChanges(img, existing, req)
	idx, err := c.commit(ctx, append(recs, rec)...)
	if err != nil {
		return nil, 0, err
	}
	c.sessions[req.BrokerID] = &session{epoch: int64(idx), lastContact: now, heard: true, metadataOffset: -1, shutdownOffset: -1}
	c.log.Info("broker registered", "broker", req.BrokerID, "epoch", idx, "listeners", rec.Listeners)
	return c.fsm.image().Brokers[req.BrokerID], 0, nil
}

// reregistrationChanges are the partition changes a new incarnation of a
// registered broker brings. With eligible leader replicas (KIP-966) the
// broker says which epoch it last shut down cleanly at (its clean-shutdown
// marker): the epoch of the registration it replaces means its logs were
// flushed and closed, and it keeps its place in the ELRs; any other value
// (-1: no marker) is an unclean shutdown, after which it may miss what it
// had not flushed, so it leaves every ISR and ELR (Kafka's
// ClusterControlManager.registerBroker and handleBrokerUncleanShutdown).
// Without ELR the previous incarnation leaves the ISRs as on fencing.
func (c *controller) reregistrationChanges(img *Image, existing *BrokerInfo, req *kmsg.BrokerRegistrationRequest) []record {
	if existing == nil {
		return nil
	}
	pol := c.policy()
	if !pol.elr {
		return removeBrokerChanges(img, existing.ID, pol)
	}
	if req.PreviousBrokerEpoch == existing.Epoch {
		c.log.Info("broker registering after a clean shutdown", "broker", existing.ID, "previous_epoch", existing.Epoch)
		return nil
	}
	recs := uncleanShutdownChanges(img, existing.ID, pol)
	c.log.Warn("broker registering after an unclean shutdown: it leaves every ISR and eligible leader replica set (KIP-966)",
		"broker", existing.ID, "registered_epoch", existing.Epoch, "previous_epoch", req.PreviousBrokerEpoch,
		"partitions_changed", len(recs))
	return recs
}

func (c *controller) unregisterBroker(ctx context.Context, req *kmsg.UnregisterBrokerRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.UnregisterBrokerResponse)
	c.mu.Lock()
	defer c.mu.Unlock()
	img := c.fsm.image()
	b := img.Brokers[req.BrokerID]
	if b == nil {
		resp.ErrorCode = kerr.BrokerIDNotRegistered.Code
		resp.ErrorMessage = ptrTo(fmt.Sprintf("Broker ID %d is not currently registered", req.BrokerID))
		return resp, nil
	}
	recs := append(removeBrokerChanges(img, b.ID, c.policy()), &unregisterBrokerRecord{ID: b.ID, Epoch: b.Epoch})
	if _, err := c.commit(ctx, recs...); err != nil {
		return nil, err
	}
	delete(c.sessions, b.ID)
	return resp, nil
}

// producerIDBlockSize is the size of the producer id blocks handed out.
const producerIDBlockSize = 1000

func (c *controller) allocateProducerIDs(ctx context.Context, req *kmsg.AllocateProducerIDsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.AllocateProducerIDsResponse)
	c.mu.Lock()
	defer c.mu.Unlock()
	img := c.fsm.image()
	b := img.Brokers[req.BrokerID]
	switch {
	case b == nil || b.Epoch != req.BrokerEpoch:
		resp.ErrorCode = kerr.StaleBrokerEpoch.Code
		return resp, nil
	case img.NextProducerID > math.MaxInt64-producerIDBlockSize:
		resp.ErrorCode = kerr.UnknownServerError.Code
		return resp, nil
	}
	start := img.NextProducerID
	if _, err := c.commit(ctx, &producerIDsRecord{BrokerID: b.ID, BrokerEpoch: b.Epoch, NextProducerID: start + producerIDBlockSize}); err != nil {
		return nil, err
	}
	resp.ProducerIDStart, resp.ProducerIDLen = start, producerIDBlockSize
	return resp, nil
}

func ptrTo[T any](v T) *T { return &v }

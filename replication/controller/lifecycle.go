package controller

import (
	"context"
	"errors"
	"net"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The broker side of KIP-631, owned by the Node: register with the active
// controller, then heartbeat every BrokerHeartbeatInterval. Heartbeats ask to
// stay fenced until SetReadyToUnfence, and to shut down after
// ControlledShutdown.

// BrokerRegistration is what a broker advertises when it registers.
type BrokerRegistration struct {
	Listeners []Endpoint // a CONTROLLER endpoint is added when missing
	Rack      string
	// PreviousBrokerEpoch is the broker epoch this broker had when it last
	// shut down cleanly (read from its clean-shutdown marker), -1 after an
	// unclean shutdown (KIP-966: the controller then takes it out of the
	// ISRs and eligible leader replicas, as it may have lost data).
	PreviousBrokerEpoch int64
}

// ErrBrokerNotStarted is returned when the broker lifecycle has not been started.
var ErrBrokerNotStarted = errors.New("controller: broker lifecycle not started")

type brokerLifecycle struct {
	n           *Node
	listeners   []Endpoint
	rack        string
	incarnation [16]byte
	// previousEpoch is what the next registration sends as
	// PreviousBrokerEpoch: the clean-shutdown epoch at start, then the
	// epoch of this process's last registration (its data never left
	// memory, so it is whole).
	previousEpoch int64
	kick          chan struct{} // capacity 1: heartbeat now
	done          chan struct{} // closed when the loop exits

	// guarded by n.mu
	epoch          int64
	readyToUnfence bool
	wantShutdown   bool
	fenced         bool
	shutdownOK     bool
	changed        chan struct{} // closed and replaced on every state change
}

// StartBroker registers this node as a broker (through Forward) and keeps
// heartbeating until Close or a granted controlled shutdown.
func (n *Node) StartBroker(reg BrokerRegistration) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.lifecycle != nil {
		return errors.New("controller: broker lifecycle already started")
	}
	if n.closedOnce {
		return net.ErrClosed
	}
	l := &brokerLifecycle{
		n: n, rack: reg.Rack, incarnation: newUUID(), listeners: append([]Endpoint(nil), reg.Listeners...),
		previousEpoch: reg.PreviousBrokerEpoch,
		kick:          make(chan struct{}, 1), done: make(chan struct{}), epoch: -1, fenced: true, changed: make(chan struct{}),
	}
	if !hasListener(l.listeners, ControllerListenerName) {
		host, port, _ := net.SplitHostPort(n.advertised)
		p, _ := strconv.Atoi(port)
		l.listeners = append(l.listeners, Endpoint{Name: ControllerListenerName, Host: host, Port: int32(p)})
	}
	n.lifecycle = l
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		defer close(l.done)
		l.run(n.ctx)
	}()
	return nil
}

func hasListener(ls []Endpoint, name string) bool {
	for _, e := range ls {
		if e.Name == name {
			return true
		}
	}
	return false
}

func (n *Node) broker() *brokerLifecycle {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.lifecycle
}

// SetReadyToUnfence tells the controller, from the next heartbeat on, that
// the broker has recovered its logs and may be unfenced.
func (n *Node) SetReadyToUnfence() {
	if l := n.broker(); l != nil {
		l.update(func() { l.readyToUnfence = true })
		l.heartbeatNow()
	}
}

// BrokerEpoch returns the broker epoch of the current registration, -1 before it.
func (n *Node) BrokerEpoch() int64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.lifecycle == nil {
		return -1
	}
	return n.lifecycle.epoch
}

// WaitUnfenced waits until the controller has unfenced this broker.
func (n *Node) WaitUnfenced(ctx context.Context) error {
	l := n.broker()
	if l == nil {
		return ErrBrokerNotStarted
	}
	return l.wait(ctx, func() bool { return !l.fenced })
}

// ControlledShutdown asks the controller for a controlled shutdown and waits
// until it is granted: this broker leads nothing any more and is fenced.
// Heartbeats stop then. It returns nil at once if the broker never started.
func (n *Node) ControlledShutdown(ctx context.Context) error {
	l := n.broker()
	if l == nil {
		return nil
	}
	l.update(func() { l.wantShutdown = true })
	l.heartbeatNow()
	return l.wait(ctx, func() bool { return l.shutdownOK })
}

func (l *brokerLifecycle) heartbeatNow() {
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

// update changes state under the node's lock and wakes waiters.
func (l *brokerLifecycle) update(fn func()) {
	l.n.mu.Lock()
	defer l.n.mu.Unlock()
	fn()
	close(l.changed)
	l.changed = make(chan struct{})
}

// wait waits until cond (evaluated under the node's lock) holds.
func (l *brokerLifecycle) wait(ctx context.Context, cond func() bool) error {
	for {
		l.n.mu.Lock()
		ok, ch := cond(), l.changed
		l.n.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-l.done:
			return errors.New("controller: broker lifecycle stopped")
		}
	}
}

func (l *brokerLifecycle) snapshot() (epoch int64, ready, shutdown bool) {
	l.n.mu.Lock()
	defer l.n.mu.Unlock()
	return l.epoch, l.readyToUnfence, l.wantShutdown
}

func (l *brokerLifecycle) run(ctx context.Context) {
	log := l.n.log.With("broker", l.n.opts.NodeID)
	for ctx.Err() == nil {
		epoch, ready, shutdown := l.snapshot()
		if epoch < 0 {
			if err := l.register(ctx); err != nil && ctx.Err() == nil {
				log.Warn("broker registration failed; retrying", "err", err)
			}
		} else if done := l.heartbeat(ctx, epoch, ready, shutdown); done {
			log.Info("controlled shutdown granted; heartbeats stop")
			return
		}
		interval := l.n.opts.BrokerHeartbeatInterval
		if shutdown {
			interval = min(interval, 100*time.Millisecond)
		}
		select {
		case <-ctx.Done():
			return
		case <-l.kick:
		case <-time.After(interval):
		}
	}
}

// requestTimeout bounds one registration or heartbeat round (retries included).
func (l *brokerLifecycle) requestTimeout() time.Duration {
	return max(l.n.opts.BrokerSessionTimeout/2, l.n.opts.BrokerHeartbeatInterval)
}

func (l *brokerLifecycle) register(ctx context.Context) error {
	req := kmsg.NewPtrBrokerRegistrationRequest()
	// Forward sends at the version set: v3+ carries PreviousBrokerEpoch
	// (KIP-966), which v0-v2 would drop on the wire.
	req.SetVersion(controllerAPIs[req.Key()].max)
	req.BrokerID, req.IncarnationID = l.n.opts.NodeID, l.incarnation
	req.PreviousBrokerEpoch = l.previousEpoch
	req.ClusterID = l.n.Image().ClusterID
	if req.ClusterID == "" {
		req.ClusterID = l.n.opts.ClusterID
	}
	if l.rack != "" {
		req.Rack = &l.rack
	}
	for _, e := range l.listeners {
		rl := kmsg.NewBrokerRegistrationRequestListener()
		rl.Name, rl.Host, rl.Port, rl.SecurityProtocol = e.Name, e.Host, uint16(e.Port), e.SecurityProtocol
		req.Listeners = append(req.Listeners, rl)
	}
	rctx, cancel := context.WithTimeout(ctx, l.requestTimeout())
	defer cancel()
	resp, err := l.n.Forward(rctx, req)
	if err != nil {
		return err
	}
	r := resp.(*kmsg.BrokerRegistrationResponse)
	if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
		return err
	}
	l.update(func() { l.epoch, l.fenced = r.BrokerEpoch, true })
	l.n.log.Info("broker registered", "epoch", r.BrokerEpoch, "previous_clean_shutdown_epoch", req.PreviousBrokerEpoch)
	l.heartbeatNow()
	return nil
}

// heartbeat sends one heartbeat and records the answer; it returns true when
// the controller granted the shutdown.
func (l *brokerLifecycle) heartbeat(ctx context.Context, epoch int64, ready, shutdown bool) bool {
	req := kmsg.NewPtrBrokerHeartbeatRequest()
	req.BrokerID, req.BrokerEpoch = l.n.opts.NodeID, epoch
	req.CurrentMetadataOffset = int64(l.n.Image().AppliedIndex)
	req.WantFence, req.WantShutdown = !ready, shutdown
	rctx, cancel := context.WithTimeout(ctx, l.requestTimeout())
	defer cancel()
	resp, err := l.n.Forward(rctx, req)
	if err != nil {
		if ctx.Err() == nil {
			l.n.log.Warn("broker heartbeat failed", "err", err)
		}
		return false
	}
	r := resp.(*kmsg.BrokerHeartbeatResponse)
	switch r.ErrorCode {
	case 0:
	case kerr.StaleBrokerEpoch.Code, kerr.BrokerIDNotRegistered.Code:
		l.n.log.Warn("broker registration lost; registering again", "epoch", epoch, "err", kerr.ErrorForCode(r.ErrorCode))
		l.update(func() { l.epoch, l.fenced, l.previousEpoch = -1, true, epoch })
		return false
	default:
		l.n.log.Warn("broker heartbeat refused", "err", kerr.ErrorForCode(r.ErrorCode))
		return false
	}
	l.update(func() {
		l.fenced = r.IsFenced
		l.shutdownOK = r.ShouldShutdown
	})
	return r.ShouldShutdown
}

package controller

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/protocol"
)

// Forwarding talks to other nodes' controller listeners with a pool of
// protocol clients, at exactly the version set on the request (no ApiVersions
// negotiation: both ends are this package). A connection carries one request
// at a time; a few idle ones are kept per address.
const (
	maxIdlePerAddr     = 4
	maxForwardResponse = 64 << 20
)

func newForwardPool(clientID string, sec protocol.ClientSecurity) *protocol.Pool {
	return protocol.NewPool(clientID, maxIdlePerAddr, maxForwardResponse, protocol.WithSecurity(sec))
}

// Forward serves req locally when this node is the active controller, and
// otherwise sends it to the active controller's controller listener, at the
// version set on req: in an Envelope when ctx names the client it is made
// for (WithCaller). Answers saying NOT_CONTROLLER and connection errors are
// retried (with the current leader, else each voter in turn) until ctx ends.
func (n *Node) Forward(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	if _, ok := controllerAPIs[req.Key()]; !ok {
		return nil, fmt.Errorf("controller: cannot forward %s (key %d)", kmsg.NameForKey(req.Key()), req.Key())
	}
	backoff := 20 * time.Millisecond
	var lastErr error
	for attempt := 0; ; attempt++ {
		resp, err := n.forwardOnce(ctx, req, attempt)
		if err == nil && !misdirected(resp) {
			return resp, nil
		}
		if err != nil {
			lastErr = err
		}
		if err := sleepCtx(ctx, backoff); err != nil {
			if lastErr != nil {
				return nil, fmt.Errorf("%w (last error: %v)", err, lastErr)
			}
			return nil, err
		}
		backoff = min(2*backoff, 500*time.Millisecond)
	}
}

func (n *Node) forwardOnce(ctx context.Context, req kmsg.Request, attempt int) (kmsg.Response, error) {
	if n.IsActive() {
		return n.Handle(ctx, req)
	}
	addr := n.forwardTarget(attempt)
	if addr == "" {
		return nil, errNotController
	}
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	caller, enveloped := callerOf(ctx)
	send := req
	if enveloped {
		send = wrapEnvelope(req, caller)
	}
	resp, err := n.client.RoundTrip(rctx, addr, send)
	if err != nil {
		return nil, fmt.Errorf("controller: request %s to %s: %w", kmsg.NameForKey(req.Key()), addr, err)
	}
	if enveloped {
		return unwrapEnvelopeResponse(req, resp.(*kmsg.EnvelopeResponse))
	}
	return resp, nil
}

// forwardTarget is the Raft leader's address when known, else the voters in
// turn (skipping this node).
func (n *Node) forwardTarget(attempt int) string {
	if addr, id := n.raft.LeaderWithID(); addr != "" && string(id) != serverID(n.opts.NodeID) {
		return string(addr)
	}
	var others []string
	for _, v := range n.opts.Voters {
		if v.ID != n.opts.NodeID {
			others = append(others, v.Addr)
		}
	}
	if len(others) == 0 {
		return ""
	}
	return others[attempt%len(others)]
}

package controller

import (
	"context"

	"github.com/kbroker/kbroker/security/principal"
)

// Caller is the client a controller request is made for: the principal and
// client id its controller mutation quota is measured by (KIP-599). A
// broker forwarding a client's request names the client with WithCaller;
// the request then reaches a remote active controller in an Envelope
// (KIP-590), as Kafka's ForwardingManager sends it. A request from a
// controller-port connection without an envelope is its connection's
// principal and header client id, as Kafka's ControllerApis takes them.
type Caller struct {
	Principal principal.Principal
	ClientID  string
}

type callerKey struct{}

// WithCaller returns ctx carrying the caller of the requests made with it.
func WithCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// callerOf returns ctx's caller; false for the broker's own requests
// (internal topics, replication), which no client quota measures.
func callerOf(ctx context.Context) (Caller, bool) {
	c, ok := ctx.Value(callerKey{}).(Caller)
	return c, ok
}

package broker

// SaslAuthenticate (key 36), v0-v2.
//
// Carries the SASL exchange (KIP-152), answered by the connection's session
// (protocol.HandleSASL, security/session). A failure answers
// SASL_AUTHENTICATION_FAILED with Kafka's message after
// connection.failed.authentication.delay.ms, is logged without secrets and
// counted in kbroker_failed_authentication_total, and the connection
// closes. v1+ answers the session lifetime (connections.max.reauth.ms or
// the token's expiry, KIP-368).

import (
	"context"

	"github.com/kbroker/kbroker/protocol"
)

func (b *Broker) handleSaslAuthenticate(_ context.Context, req *protocol.Request) protocol.Response {
	return protocol.HandleSASL(req)
}

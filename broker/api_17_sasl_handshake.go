package broker

// SaslHandshake (key 17), v0-v1.
//
// Names the SASL mechanism of the connection's authentication (or of its
// re-authentication, KIP-368), answered by the connection's session
// (protocol.HandleSASL, security/session): UNSUPPORTED_SASL_MECHANISM with
// the enabled mechanisms, then the connection closes, for one that is not
// enabled; ILLEGAL_SASL_STATE on a listener without SASL. v0 stays served,
// as in Kafka 4.0: the exchange then follows as raw tokens (librdkafka 2.0
// needs it; KAFKA-PITFALLS.md).

import (
	"context"

	"github.com/kbroker/kbroker/protocol"
)

func (b *Broker) handleSaslHandshake(_ context.Context, req *protocol.Request) protocol.Response {
	return protocol.HandleSASL(req)
}

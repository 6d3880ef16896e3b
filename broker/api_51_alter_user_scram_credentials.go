package broker

// AlterUserScramCredentials (key 51), v0.
//
// Forwarded to the active controller, which validates the request as
// Kafka's ScramControlManager (DUPLICATE_RESOURCE, RESOURCE_NOT_FOUND,
// UNSUPPORTED_SASL_MECHANISM, UNACCEPTABLE_CREDENTIAL per user), derives
// the stored and server keys from the salted password the client sent and
// commits them as one batch; the answer waits until this broker has
// applied it, and the credentials then work on every broker. Needs
// CLUSTER ALTER (CLUSTER_AUTHORIZATION_FAILED per user).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kbroker/kbroker/protocol"
	"github.com/kbroker/kbroker/security/acl"
)

func (b *Broker) handleAlterUserScramCredentials(_ context.Context, req *protocol.Request) protocol.Response {
	if !b.allowedCluster(req, acl.OpAlter) {
		return protocol.Response{Body: protocol.ErrorResponse(req.Body, kerr.ClusterAuthorizationFailed.Code)}
	}
	return b.forwardAdmin(req, 0)
}

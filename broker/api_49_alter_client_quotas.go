package broker

// AlterClientQuotas (key 49), v0-v1.
//
// Forwarded to the active controller, which validates every entity and
// quota as Kafka's ClientQuotaControlManager (INVALID_REQUEST per entity
// with Kafka's message: unknown keys, values <= 0, fractions of byte
// rates, bad entity types or combinations), commits the changes as one
// batch (nothing with ValidateOnly), and answers per entity; the answer
// waits until this broker has applied them, so that the quotas are
// enforced here from the client's next request. Needs CLUSTER
// ALTER_CONFIGS (CLUSTER_AUTHORIZATION_FAILED on every entity).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kbroker/kbroker/protocol"
	"github.com/kbroker/kbroker/security/acl"
)

func (b *Broker) handleAlterClientQuotas(_ context.Context, req *protocol.Request) protocol.Response {
	if !b.allowedCluster(req, acl.OpAlterConfigs) {
		return protocol.Response{Body: protocol.ErrorResponse(req.Body, kerr.ClusterAuthorizationFailed.Code)}
	}
	return b.forwardAdmin(req, 0)
}

package broker

// UpdateFeatures (key 57), v0-v2.
//
// Forwarded to the active controller, which checks every update against the
// levels this build supports (replication/controller/features.go) and the
// finalized level, as Kafka's FeatureControlManager: all or nothing, an
// unknown feature or a level out of range INVALID_UPDATE_VERSION, a
// downgrade without a downgrade upgrade type INVALID_UPDATE_VERSION,
// metadata.version never downgraded; ValidateOnly commits nothing. The
// answer waits until this broker has applied the change, so ApiVersions
// here reports it at once. Needs CLUSTER ALTER.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kbroker/kbroker/protocol"
	"github.com/kbroker/kbroker/security/acl"
)

func (b *Broker) handleUpdateFeatures(_ context.Context, req *protocol.Request) protocol.Response {
	if !b.allowedCluster(req, acl.OpAlter) {
		return refuse(req, kerr.ClusterAuthorizationFailed.Code)
	}
	return b.forwardAdmin(req, timeoutOf(req.Body))
}

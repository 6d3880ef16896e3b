package broker

// DescribeClientQuotas (key 48), v0-v1.
//
// Answered from this broker's image, as KRaft brokers answer it from their
// metadata cache (ClientQuotasImage.describe): the entities the filter
// matches with every quota they have (quota.Describe). A malformed filter
// is INVALID_REQUEST, an unknown entity type UNSUPPORTED_VERSION, with
// Kafka's message and no entries. Needs CLUSTER DESCRIBE_CONFIGS
// (CLUSTER_AUTHORIZATION_FAILED).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/protocol"
	"github.com/kbroker/kbroker/quota"
	"github.com/kbroker/kbroker/security/acl"
)

func (b *Broker) handleDescribeClientQuotas(_ context.Context, req *protocol.Request) protocol.Response {
	r := req.Body.(*kmsg.DescribeClientQuotasRequest)
	if !b.allowedCluster(req, acl.OpDescribeConfigs) {
		return protocol.Response{Body: protocol.ErrorResponse(r, kerr.ClusterAuthorizationFailed.Code)}
	}
	resp := quota.Describe(r, b.view().img.ClientQuotas)
	if resp.ErrorCode != 0 {
		b.logger.Info("DescribeClientQuotas refused", "error", kerr.ErrorForCode(resp.ErrorCode), "message", *resp.ErrorMessage,
			"client", req.ClientIDString())
	}
	return protocol.Response{Body: resp}
}

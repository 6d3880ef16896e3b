package broker

// DescribeUserScramCredentials (key 50), v0.
//
// Answered from this broker's image: every user with a SCRAM credential
// when none is named, else each named user's mechanisms and iterations
// (RESOURCE_NOT_FOUND for a user without one, DUPLICATE_RESOURCE for one
// named twice). Never the salt or keys. Needs CLUSTER DESCRIBE
// (CLUSTER_AUTHORIZATION_FAILED).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/protocol"
	"github.com/kbroker/kbroker/security/acl"
	"github.com/kbroker/kbroker/security/sasl/scram"
)

func (b *Broker) handleDescribeUserScramCredentials(_ context.Context, req *protocol.Request) protocol.Response {
	r := req.Body.(*kmsg.DescribeUserSCRAMCredentialsRequest)
	resp := r.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
	if !b.allowedCluster(req, acl.OpDescribe) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return protocol.Response{Body: resp}
	}
	img := b.view().img
	resp.Results = scram.Describe(r, img.ScramUsers, img.ScramInfo)
	return protocol.Response{Body: resp}
}

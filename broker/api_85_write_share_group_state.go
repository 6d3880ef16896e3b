package broker

// WriteShareGroupState (key 85), v0-v1: the state batches and start offset a share-partition leader writes after acknowledgements, releases and lock timeouts (v1: the delivery complete count, KIP-1226).
// An inter-broker API of the share coordinator (broker/sharestate,
// KIP-932): served for the keys whose __share_group_state partition this
// broker leads, NOT_COORDINATOR per partition for the others (the sender
// looks the coordinator up again). The answer is produced on the
// connection's writer once the state is written (acks=all). Authorization:
// CLUSTER_ACTION on the cluster (CLUSTER_AUTHORIZATION_FAILED on every
// partition otherwise).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/protocol"
)

func (b *Broker) handleWriteShareGroupState(_ context.Context, req *protocol.Request) protocol.Response {
	r := req.Body.(*kmsg.WriteShareGroupStateRequest)
	return b.serveShareState(req, func(ctx context.Context) kmsg.Response { return b.shares.state.WriteShareGroupState(ctx, r) })
}

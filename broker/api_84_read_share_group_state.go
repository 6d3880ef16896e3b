package broker

// ReadShareGroupState (key 84), v0: a share-partition's state, read by its leader when it loads it (records the reader's leader epoch, fencing older leaders).
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

func (b *Broker) handleReadShareGroupState(_ context.Context, req *protocol.Request) protocol.Response {
	r := req.Body.(*kmsg.ReadShareGroupStateRequest)
	return b.serveShareState(req, func(ctx context.Context) kmsg.Response { return b.shares.state.ReadShareGroupState(ctx, r) })
}

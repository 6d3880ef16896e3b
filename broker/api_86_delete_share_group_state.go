package broker

// DeleteShareGroupState (key 86), v0: deletes share-partitions' state (DeleteShareGroupOffsets, DeleteGroups).
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

func (b *Broker) handleDeleteShareGroupState(_ context.Context, req *protocol.Request) protocol.Response {
	r := req.Body.(*kmsg.DeleteShareGroupStateRequest)
	return b.serveShareState(req, func(ctx context.Context) kmsg.Response { return b.shares.state.DeleteShareGroupState(ctx, r) })
}

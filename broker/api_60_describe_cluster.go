package broker

// DescribeCluster (key 60), v0-v1.
//
// The cluster id, a controller id (as Metadata answers it) and the live
// brokers on the listener the request arrived on. v1 EndpointType 2 asks for
// the controllers (KIP-919): the quorum voters on their controller listeners.

import (
	"context"
	"net"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/config"
	"github.com/kbroker/kbroker/protocol"
)

func (b *Broker) handleDescribeCluster(_ context.Context, req *protocol.Request) protocol.Response {
	r := req.Body.(*kmsg.DescribeClusterRequest)
	resp := r.ResponseKind().(*kmsg.DescribeClusterResponse)
	img := b.view().img
	resp.ClusterID = img.ClusterID
	resp.EndpointType = r.EndpointType
	resp.ClusterAuthorizedOperations = authorizedOpsOmitted
	if r.IncludeClusterAuthorizedOperations {
		resp.ClusterAuthorizedOperations = b.clusterAuthorizedOps(req)
	}
	switch r.EndpointType {
	case 0, 1: // brokers
		resp.ControllerID = b.metadataControllerID(img)
		for _, mb := range b.metadataBrokers(img, req.Conn.Listener) {
			db := kmsg.NewDescribeClusterResponseBroker()
			db.NodeID, db.Host, db.Port, db.Rack = mb.NodeID, mb.Host, mb.Port, mb.Rack
			resp.Brokers = append(resp.Brokers, db)
		}
	case 2: // controllers
		resp.ControllerID = b.ctrl.ActiveControllerID()
		voters := b.cfg.EffectiveVoters()
		slices.SortFunc(voters, func(a, c config.Voter) int { return int(a.ID - c.ID) })
		for _, v := range voters {
			db := kmsg.NewDescribeClusterResponseBroker()
			host, port, _ := net.SplitHostPort(v.Address())
			p, _ := strconv.Atoi(port)
			db.NodeID, db.Host, db.Port = v.ID, host, int32(p)
			resp.Brokers = append(resp.Brokers, db)
		}
	default:
		resp.ErrorCode = kerr.UnsupportedEndpointType.Code
	}
	return protocol.Response{Body: resp}
}

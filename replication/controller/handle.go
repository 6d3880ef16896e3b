package controller

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/hashicorp/raft"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/protocol"
)

// Handle serves a controller API request: the APIs of the active controller
// (NOT_CONTROLLER in every error field when this node is not it),
// ApiVersions, and DescribeQuorum. Unknown keys and versions are errors.
func (n *Node) Handle(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	rng, ok := controllerAPIs[req.Key()]
	if !ok {
		return nil, fmt.Errorf("controller: unsupported api %s (key %d)", kmsg.NameForKey(req.Key()), req.Key())
	}
	if av, ok := req.(*kmsg.ApiVersionsRequest); ok {
		return apiVersions(av), nil
	}
	if v := req.GetVersion(); v < rng.min || v > rng.max {
		return nil, fmt.Errorf("controller: unsupported version %d of %s", v, kmsg.NameForKey(req.Key()))
	}
	if env, ok := req.(*kmsg.EnvelopeRequest); ok {
		return n.handleEnvelope(ctx, env), nil
	}
	c := n.active.Load()
	if c == nil {
		return errorResponse(req, kerr.NotController.Code), nil
	}
	if dq, ok := req.(*kmsg.DescribeQuorumRequest); ok {
		return n.describeQuorum(dq), nil
	}
	resp, err := c.handle(ctx, req)
	if err != nil {
		n.log.Warn("controller request failed", "api", kmsg.NameForKey(req.Key()), "err", err)
		return errorResponse(req, codeFor(err)), nil
	}
	return resp, nil
}

// apiVersions answers with the controller APIs; an unknown (newer) version
// gets the v0 answer with UNSUPPORTED_VERSION (KIP-511).
func apiVersions(req *kmsg.ApiVersionsRequest) *kmsg.ApiVersionsResponse {
	resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
	if req.Version > controllerAPIs[req.Key()].max {
		resp.Version = 0
		resp.ErrorCode = kerr.UnsupportedVersion.Code
	}
	keys := make([]int16, 0, len(controllerAPIs))
	for k := range controllerAPIs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		resp.ApiKeys = append(resp.ApiKeys, kmsg.ApiVersionsResponseApiKey{ApiKey: k, MinVersion: controllerAPIs[k].min, MaxVersion: controllerAPIs[k].max})
	}
	// The controller listener authenticates with SASL as any listener.
	resp.ApiKeys = append(resp.ApiKeys,
		kmsg.ApiVersionsResponseApiKey{ApiKey: protocol.SaslHandshakeKey, MinVersion: 0, MaxVersion: 1},
		kmsg.ApiVersionsResponseApiKey{ApiKey: protocol.SaslAuthenticateKey, MinVersion: 0, MaxVersion: 2})
	slices.SortFunc(resp.ApiKeys, func(a, b kmsg.ApiVersionsResponseApiKey) int { return int(a.ApiKey) - int(b.ApiKey) })
	return resp
}

// describeQuorum answers for the metadata log: the leader, its term as the
// epoch, the commit index as high watermark, voters and observers.
func (n *Node) describeQuorum(req *kmsg.DescribeQuorumRequest) *kmsg.DescribeQuorumResponse {
	resp := req.ResponseKind().(*kmsg.DescribeQuorumResponse)
	var servers []raft.Server
	if f := n.raft.GetConfiguration(); f.Error() == nil {
		servers = f.Configuration().Servers
	}
	for _, rt := range req.Topics {
		st := kmsg.NewDescribeQuorumResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewDescribeQuorumResponseTopicPartition()
			sp.Partition = rp.Partition
			if rt.Topic != metadataTopic || rp.Partition != 0 {
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			} else {
				n.fillQuorum(&sp, servers)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

func (n *Node) fillQuorum(sp *kmsg.DescribeQuorumResponseTopicPartition, servers []raft.Server) {
	sp.LeaderID = n.opts.NodeID
	sp.LeaderEpoch = int32(n.raft.CurrentTerm())
	sp.HighWatermark = int64(n.raft.CommitIndex())
	for _, s := range servers {
		id, err := strconv.ParseInt(string(s.ID), 10, 32)
		if err != nil {
			continue
		}
		rs := kmsg.NewDescribeQuorumResponseTopicPartitionReplicaState()
		rs.ReplicaID, rs.LogEndOffset = int32(id), -1
		if int32(id) == n.opts.NodeID {
			rs.LogEndOffset = int64(n.raft.LastIndex())
		}
		if s.Suffrage == raft.Voter {
			sp.CurrentVoters = append(sp.CurrentVoters, rs)
		} else {
			sp.Observers = append(sp.Observers, rs)
		}
	}
}

// kafkaHandler serves controller-port Kafka connections with Handle.
type kafkaHandler struct{ n *Node }

func (h kafkaHandler) Handle(ctx context.Context, req *protocol.Request) protocol.Response {
	switch req.Key {
	case protocol.SaslHandshakeKey, protocol.SaslAuthenticateKey:
		return protocol.HandleSASL(req)
	case protocol.ApiVersionsKey:
	default:
		if auth := h.n.opts.Security.AuthorizeCaller; auth != nil && !auth(req.Conn.Principal(), req.Conn.Remote, req.Key) {
			h.n.log.Info("refused a controller request: the principal may not act for the cluster",
				"api", kmsg.NameForKey(req.Key), "principal", req.Conn.Principal().String(), "remote", req.Conn.Remote.String())
			if body := errorResponse(req.Body, kerr.ClusterAuthorizationFailed.Code); body != nil {
				return protocol.Response{Body: body}
			}
			return protocol.Response{Close: true}
		}
	}
	// A request not in an envelope is its connection's: its principal and
	// client id are the caller's (an envelope names another).
	ctx = WithCaller(ctx, Caller{Principal: req.Conn.Principal(), ClientID: req.ClientIDString()})
	resp, err := h.n.Handle(ctx, req.Body)
	if err != nil {
		h.n.log.Warn("closing controller connection", "err", err, "client", req.ClientIDString())
		return protocol.Response{Close: true}
	}
	return protocol.Response{Body: resp}
}

func (h kafkaHandler) ErrorResponse(req *protocol.Request, code int16) kmsg.Response {
	return errorResponse(req.Body, code)
}

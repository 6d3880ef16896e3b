package controller

import (
	"context"
	"errors"

	"github.com/hashicorp/raft"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/protocol"
)

// apiRange is the version range served for one API key.
type apiRange struct{ min, max int16 }

// controllerAPIs are the APIs Handle serves, with the versions it supports.
var controllerAPIs = map[int16]apiRange{
	(&kmsg.CreateTopicsRequest{}).Key():               {0, 7},
	(&kmsg.DeleteTopicsRequest{}).Key():               {0, 6},
	(&kmsg.AlterConfigsRequest{}).Key():               {0, 2},
	(&kmsg.CreatePartitionsRequest{}).Key():           {0, 3},
	(&kmsg.ElectLeadersRequest{}).Key():               {0, 2},
	(&kmsg.AlterPartitionAssignmentsRequest{}).Key():  {0, 0},
	(&kmsg.ListPartitionReassignmentsRequest{}).Key(): {0, 0},
	(&kmsg.IncrementalAlterConfigsRequest{}).Key():    {0, 1},
	(&kmsg.DescribeQuorumRequest{}).Key():             {0, 1},
	(&kmsg.AlterPartitionRequest{}).Key():             {0, 3},
	(&kmsg.BrokerRegistrationRequest{}).Key():         {0, 4},
	(&kmsg.BrokerHeartbeatRequest{}).Key():            {0, 1},
	(&kmsg.UnregisterBrokerRequest{}).Key():           {0, 0},
	(&kmsg.AllocateProducerIDsRequest{}).Key():        {0, 0},
	(&kmsg.ApiVersionsRequest{}).Key():                {0, 4},
	(&kmsg.CreateACLsRequest{}).Key():                 {0, 3},
	(&kmsg.DeleteACLsRequest{}).Key():                 {0, 3},
	(&kmsg.AlterUserSCRAMCredentialsRequest{}).Key():  {0, 0},
	(&kmsg.UpdateFeaturesRequest{}).Key():             {0, 2},
	(&kmsg.AlterClientQuotasRequest{}).Key():          {0, 1},
	(&kmsg.EnvelopeRequest{}).Key():                   {0, 0},
}

var (
	errNotController = errors.New("controller: not the active controller")
	errTimedOut      = errors.New("controller: metadata commit timed out")
)

// raftErr maps a Raft apply error onto the package's errors.
func raftErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrLeadershipLost),
		errors.Is(err, raft.ErrLeadershipTransferInProgress), errors.Is(err, raft.ErrRaftShutdown):
		return errNotController
	case errors.Is(err, raft.ErrEnqueueTimeout):
		return errTimedOut
	}
	return err
}

// codeFor is the Kafka error code answering a request that failed with err.
func codeFor(err error) int16 {
	switch {
	case errors.Is(err, errNotController):
		return kerr.NotController.Code
	case errors.Is(err, errTimedOut), errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return kerr.RequestTimedOut.Code
	}
	return kerr.UnknownServerError.Code
}

// errorResponse answers req with code in every error field of its response
// (protocol.ErrorResponse); DescribeQuorum answers NOT_CONTROLLER as Raft's
// non-leader does, NOT_LEADER_OR_FOLLOWER per partition. It returns nil for
// keys it does not serve.
func errorResponse(req kmsg.Request, code int16) kmsg.Response {
	if _, ok := controllerAPIs[req.Key()]; !ok {
		return nil
	}
	if _, ok := req.(*kmsg.DescribeQuorumRequest); ok && code == kerr.NotController.Code {
		code = kerr.NotLeaderForPartition.Code
	}
	return protocol.ErrorResponse(req, code)
}

// errorCodes returns every error code of a controller API response.
func errorCodes(resp kmsg.Response) []int16 {
	var out []int16
	switch r := resp.(type) {
	case *kmsg.CreateTopicsResponse:
		for _, t := range r.Topics {
			out = append(out, t.ErrorCode)
		}
	case *kmsg.DeleteTopicsResponse:
		for _, t := range r.Topics {
			out = append(out, t.ErrorCode)
		}
	case *kmsg.CreatePartitionsResponse:
		for _, t := range r.Topics {
			out = append(out, t.ErrorCode)
		}
	case *kmsg.ElectLeadersResponse:
		out = append(out, r.ErrorCode)
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				out = append(out, p.ErrorCode)
			}
		}
	case *kmsg.IncrementalAlterConfigsResponse:
		for _, res := range r.Resources {
			out = append(out, res.ErrorCode)
		}
	case *kmsg.AlterConfigsResponse:
		for _, res := range r.Resources {
			out = append(out, res.ErrorCode)
		}
	case *kmsg.AlterPartitionResponse:
		out = append(out, r.ErrorCode)
	case *kmsg.AlterPartitionAssignmentsResponse:
		out = append(out, r.ErrorCode)
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				out = append(out, p.ErrorCode)
			}
		}
	case *kmsg.ListPartitionReassignmentsResponse:
		out = append(out, r.ErrorCode)
	case *kmsg.DescribeQuorumResponse:
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				out = append(out, p.ErrorCode)
			}
		}
	case *kmsg.BrokerRegistrationResponse:
		out = append(out, r.ErrorCode)
	case *kmsg.BrokerHeartbeatResponse:
		out = append(out, r.ErrorCode)
	case *kmsg.UnregisterBrokerResponse:
		out = append(out, r.ErrorCode)
	case *kmsg.AllocateProducerIDsResponse:
		out = append(out, r.ErrorCode)
	case *kmsg.CreateACLsResponse:
		for _, res := range r.Results {
			out = append(out, res.ErrorCode)
		}
	case *kmsg.DeleteACLsResponse:
		for _, res := range r.Results {
			out = append(out, res.ErrorCode)
		}
	case *kmsg.AlterUserSCRAMCredentialsResponse:
		for _, res := range r.Results {
			out = append(out, res.ErrorCode)
		}
	}
	return out
}

// misdirected reports whether resp is a whole-request "ask the active
// controller" answer: every error code is NOT_CONTROLLER (or, for Raft's
// DescribeQuorum, NOT_LEADER_OR_FOLLOWER), so nothing was acted on.
func misdirected(resp kmsg.Response) bool {
	codes := errorCodes(resp)
	for _, c := range codes {
		if c != kerr.NotController.Code && c != kerr.NotLeaderForPartition.Code {
			return false
		}
	}
	return len(codes) > 0
}

package controller

import (
	"context"
	"errors"

	"github.com/hashicorp/raft"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
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

// errorResponse answers req with code in every error field of its response.
// It returns nil for keys it does not serve.
func errorResponse(req kmsg.Request, code int16) kmsg.Response {
	switch r := req.(type) {
	case *kmsg.CreateTopicsRequest:
		resp := r.ResponseKind().(*kmsg.CreateTopicsResponse)
		for _, t := range r.Topics {
			st := kmsg.NewCreateTopicsResponseTopic()
			st.Topic, st.ErrorCode, st.NumPartitions, st.ReplicationFactor = t.Topic, code, -1, -1
			resp.Topics = append(resp.Topics, st)
		}
		return resp
	case *kmsg.DeleteTopicsRequest:
		resp := r.ResponseKind().(*kmsg.DeleteTopicsResponse)
		for _, name := range r.TopicNames {
			st := kmsg.NewDeleteTopicsResponseTopic()
			st.Topic, st.ErrorCode = &name, code
			resp.Topics = append(resp.Topics, st)
		}
		for _, t := range r.Topics {
			st := kmsg.NewDeleteTopicsResponseTopic()
			st.Topic, st.TopicID, st.ErrorCode = t.Topic, t.TopicID, code
			resp.Topics = append(resp.Topics, st)
		}
		return resp
	case *kmsg.CreatePartitionsRequest:
		resp := r.ResponseKind().(*kmsg.CreatePartitionsResponse)
		for _, t := range r.Topics {
			st := kmsg.NewCreatePartitionsResponseTopic()
			st.Topic, st.ErrorCode = t.Topic, code
			resp.Topics = append(resp.Topics, st)
		}
		return resp
	case *kmsg.ElectLeadersRequest:
		resp := r.ResponseKind().(*kmsg.ElectLeadersResponse)
		resp.ErrorCode = code
		for _, t := range r.Topics {
			st := kmsg.NewElectLeadersResponseTopic()
			st.Topic = t.Topic
			for _, p := range t.Partitions {
				sp := kmsg.NewElectLeadersResponseTopicPartition()
				sp.Partition, sp.ErrorCode = p, code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp
	case *kmsg.IncrementalAlterConfigsRequest:
		resp := r.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
		for _, res := range r.Resources {
			rr := kmsg.NewIncrementalAlterConfigsResponseResource()
			rr.ResourceType, rr.ResourceName, rr.ErrorCode = res.ResourceType, res.ResourceName, code
			resp.Resources = append(resp.Resources, rr)
		}
		return resp
	case *kmsg.AlterConfigsRequest:
		resp := r.ResponseKind().(*kmsg.AlterConfigsResponse)
		for _, res := range r.Resources {
			rr := kmsg.NewAlterConfigsResponseResource()
			rr.ResourceType, rr.ResourceName, rr.ErrorCode = res.ResourceType, res.ResourceName, code
			resp.Resources = append(resp.Resources, rr)
		}
		return resp
	case *kmsg.AlterPartitionRequest:
		resp := r.ResponseKind().(*kmsg.AlterPartitionResponse)
		resp.ErrorCode = code
		return resp
	case *kmsg.AlterPartitionAssignmentsRequest:
		resp := r.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
		resp.ErrorCode = code
		for _, t := range r.Topics {
			st := kmsg.NewAlterPartitionAssignmentsResponseTopic()
			st.Topic = t.Topic
			for _, p := range t.Partitions {
				sp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
				sp.Partition, sp.ErrorCode = p.Partition, code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp
	case *kmsg.ListPartitionReassignmentsRequest:
		resp := r.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
		resp.ErrorCode = code
		return resp
	case *kmsg.DescribeQuorumRequest:
		resp := r.ResponseKind().(*kmsg.DescribeQuorumResponse)
		if code == kerr.NotController.Code {
			// Raft's own answer from a non-leader, per partition.
			code = kerr.NotLeaderForPartition.Code
		}
		for _, t := range r.Topics {
			st := kmsg.NewDescribeQuorumResponseTopic()
			st.Topic = t.Topic
			for _, p := range t.Partitions {
				sp := kmsg.NewDescribeQuorumResponseTopicPartition()
				sp.Partition, sp.ErrorCode, sp.LeaderID = p.Partition, code, -1
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp
	case *kmsg.BrokerRegistrationRequest:
		resp := r.ResponseKind().(*kmsg.BrokerRegistrationResponse)
		resp.ErrorCode, resp.BrokerEpoch = code, -1
		return resp
	case *kmsg.BrokerHeartbeatRequest:
		resp := r.ResponseKind().(*kmsg.BrokerHeartbeatResponse)
		resp.ErrorCode, resp.IsFenced = code, true
		return resp
	case *kmsg.UnregisterBrokerRequest:
		resp := r.ResponseKind().(*kmsg.UnregisterBrokerResponse)
		resp.ErrorCode = code
		return resp
	case *kmsg.AllocateProducerIDsRequest:
		resp := r.ResponseKind().(*kmsg.AllocateProducerIDsResponse)
		resp.ErrorCode = code
		return resp
	case *kmsg.ApiVersionsRequest:
		resp := r.ResponseKind().(*kmsg.ApiVersionsResponse)
		resp.ErrorCode = code
		return resp
	}
	return nil
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

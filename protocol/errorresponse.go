package protocol

import (
	"reflect"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ErrorResponse answers req with code on every topic, partition and
// resource it names, and in the response's top-level ErrorCode where it has
// one (Kafka's AbstractRequest.getErrorResponse): the answer to a request
// that failed as a whole (an unsupported version, a handler that panicked,
// a controller that is not active). The response has req's version and
// kmsg's defaults (NumPartitions -1, BrokerEpoch -1, IsFenced, ...). It
// returns nil when the response has no place for the error; the caller then
// closes the connection, as Kafka does.
func ErrorResponse(req kmsg.Request, code int16) kmsg.Response {
	resp := req.ResponseKind()
	switch r := req.(type) {
	case *kmsg.ProduceRequest:
		produceErrors(r, resp.(*kmsg.ProduceResponse), code)
	case *kmsg.ListOffsetsRequest:
		listOffsetsErrors(r, resp.(*kmsg.ListOffsetsResponse), code)
	case *kmsg.MetadataRequest:
		metadataErrors(r, resp.(*kmsg.MetadataResponse), code)
	case *kmsg.OffsetForLeaderEpochRequest:
		offsetForLeaderEpochErrors(r, resp.(*kmsg.OffsetForLeaderEpochResponse), code)
	case *kmsg.CreateTopicsRequest:
		createTopicsErrors(r, resp.(*kmsg.CreateTopicsResponse), code)
	case *kmsg.DeleteTopicsRequest:
		deleteTopicsErrors(r, resp.(*kmsg.DeleteTopicsResponse), code)
	case *kmsg.CreatePartitionsRequest:
		createPartitionsErrors(r, resp.(*kmsg.CreatePartitionsResponse), code)
	case *kmsg.ElectLeadersRequest:
		electLeadersErrors(r, resp.(*kmsg.ElectLeadersResponse), code)
	case *kmsg.DescribeConfigsRequest:
		describeConfigsErrors(r, resp.(*kmsg.DescribeConfigsResponse), code)
	case *kmsg.AlterConfigsRequest:
		alterConfigsErrors(r, resp.(*kmsg.AlterConfigsResponse), code)
	case *kmsg.IncrementalAlterConfigsRequest:
		incrementalAlterConfigsErrors(r, resp.(*kmsg.IncrementalAlterConfigsResponse), code)
	case *kmsg.AlterPartitionAssignmentsRequest:
		alterPartitionAssignmentsErrors(r, resp.(*kmsg.AlterPartitionAssignmentsResponse), code)
	case *kmsg.DescribeQuorumRequest:
		describeQuorumErrors(r, resp.(*kmsg.DescribeQuorumResponse), code)
	case *kmsg.CreateACLsRequest:
		for range r.Creations {
			resp.(*kmsg.CreateACLsResponse).Results = append(resp.(*kmsg.CreateACLsResponse).Results,
				kmsg.CreateACLsResponseResult{ErrorCode: code})
		}
	case *kmsg.DeleteACLsRequest:
		for range r.Filters {
			resp.(*kmsg.DeleteACLsResponse).Results = append(resp.(*kmsg.DeleteACLsResponse).Results,
				kmsg.DeleteACLsResponseResult{ErrorCode: code})
		}
	case *kmsg.AlterUserSCRAMCredentialsRequest:
		alterScramErrors(r, resp.(*kmsg.AlterUserSCRAMCredentialsResponse), code)
	case *kmsg.AlterClientQuotasRequest:
		alterClientQuotasErrors(r, resp.(*kmsg.AlterClientQuotasResponse), code)
	case *kmsg.OffsetCommitRequest:
		offsetCommitErrors(r, resp.(*kmsg.OffsetCommitResponse), code)
	case *kmsg.OffsetFetchRequest:
		offsetFetchErrors(r, resp.(*kmsg.OffsetFetchResponse), code)
	case *kmsg.DescribeGroupsRequest:
		for _, g := range r.Groups {
			dg := kmsg.NewDescribeGroupsResponseGroup()
			dg.Group, dg.ErrorCode = g, code
			resp.(*kmsg.DescribeGroupsResponse).Groups = append(resp.(*kmsg.DescribeGroupsResponse).Groups, dg)
		}
	case *kmsg.DeleteGroupsRequest:
		for _, g := range r.Groups {
			dg := kmsg.NewDeleteGroupsResponseGroup()
			dg.Group, dg.ErrorCode = g, code
			resp.(*kmsg.DeleteGroupsResponse).Groups = append(resp.(*kmsg.DeleteGroupsResponse).Groups, dg)
		}
	case *kmsg.ConsumerGroupDescribeRequest:
		for _, g := range r.Groups {
			dg := kmsg.NewConsumerGroupDescribeResponseGroup()
			dg.Group, dg.ErrorCode = g, code
			resp.(*kmsg.ConsumerGroupDescribeResponse).Groups = append(resp.(*kmsg.ConsumerGroupDescribeResponse).Groups, dg)
		}
	default:
		if shareErrorResponse(req, resp, code) {
			break
		}
		// Fetch, ApiVersions, AlterPartition, the broker lifecycle APIs
		// and every other API that answers with one code.
		if !setTopLevelErrorCode(resp, code) {
			return nil
		}
	}
	return resp
}

func produceErrors(r *kmsg.ProduceRequest, out *kmsg.ProduceResponse, code int16) {
	for _, t := range r.Topics {
		rt := kmsg.NewProduceResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewProduceResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, code
			rt.Partitions = append(rt.Partitions, rp)
		}
		out.Topics = append(out.Topics, rt)
	}
}

func listOffsetsErrors(r *kmsg.ListOffsetsRequest, out *kmsg.ListOffsetsResponse, code int16) {
	for _, t := range r.Topics {
		rt := kmsg.NewListOffsetsResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewListOffsetsResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, code
			rt.Partitions = append(rt.Partitions, rp)
		}
		out.Topics = append(out.Topics, rt)
	}
}

func metadataErrors(r *kmsg.MetadataRequest, out *kmsg.MetadataResponse, code int16) {
	for _, t := range r.Topics {
		rt := kmsg.NewMetadataResponseTopic()
		rt.Topic, rt.TopicID, rt.ErrorCode = t.Topic, t.TopicID, code
		out.Topics = append(out.Topics, rt)
	}
	out.ErrorCode = code
}

func offsetForLeaderEpochErrors(r *kmsg.OffsetForLeaderEpochRequest, out *kmsg.OffsetForLeaderEpochResponse, code int16) {
	for _, t := range r.Topics {
		rt := kmsg.NewOffsetForLeaderEpochResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, code
			rt.Partitions = append(rt.Partitions, rp)
		}
		out.Topics = append(out.Topics, rt)
	}
}

func createTopicsErrors(r *kmsg.CreateTopicsRequest, out *kmsg.CreateTopicsResponse, code int16) {
	for _, t := range r.Topics {
		rt := kmsg.NewCreateTopicsResponseTopic()
		rt.Topic, rt.ErrorCode = t.Topic, code
		out.Topics = append(out.Topics, rt)
	}
}

// deleteTopicsErrors answers both naming schemes: names (v0-v5) and
// name-or-id entries (v6+).
func deleteTopicsErrors(r *kmsg.DeleteTopicsRequest, out *kmsg.DeleteTopicsResponse, code int16) {
	for _, name := range r.TopicNames {
		rt := kmsg.NewDeleteTopicsResponseTopic()
		rt.Topic, rt.ErrorCode = kmsg.StringPtr(name), code
		out.Topics = append(out.Topics, rt)
	}
	for _, t := range r.Topics {
		rt := kmsg.NewDeleteTopicsResponseTopic()
		rt.Topic, rt.TopicID, rt.ErrorCode = t.Topic, t.TopicID, code
		out.Topics = append(out.Topics, rt)
	}
}

func createPartitionsErrors(r *kmsg.CreatePartitionsRequest, out *kmsg.CreatePartitionsResponse, code int16) {
	for _, t := range r.Topics {
		rt := kmsg.NewCreatePartitionsResponseTopic()
		rt.Topic, rt.ErrorCode = t.Topic, code
		out.Topics = append(out.Topics, rt)
	}
}

func electLeadersErrors(r *kmsg.ElectLeadersRequest, out *kmsg.ElectLeadersResponse, code int16) {
	out.ErrorCode = code
	for _, t := range r.Topics {
		rt := kmsg.NewElectLeadersResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewElectLeadersResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p, code
			rt.Partitions = append(rt.Partitions, rp)
		}
		out.Topics = append(out.Topics, rt)
	}
}

func describeConfigsErrors(r *kmsg.DescribeConfigsRequest, out *kmsg.DescribeConfigsResponse, code int16) {
	for _, res := range r.Resources {
		rr := kmsg.NewDescribeConfigsResponseResource()
		rr.ResourceType, rr.ResourceName, rr.ErrorCode = res.ResourceType, res.ResourceName, code
		out.Resources = append(out.Resources, rr)
	}
}

func alterConfigsErrors(r *kmsg.AlterConfigsRequest, out *kmsg.AlterConfigsResponse, code int16) {
	for _, res := range r.Resources {
		rr := kmsg.NewAlterConfigsResponseResource()
		rr.ResourceType, rr.ResourceName, rr.ErrorCode = res.ResourceType, res.ResourceName, code
		out.Resources = append(out.Resources, rr)
	}
}

func incrementalAlterConfigsErrors(r *kmsg.IncrementalAlterConfigsRequest, out *kmsg.IncrementalAlterConfigsResponse, code int16) {
	for _, res := range r.Resources {
		rr := kmsg.NewIncrementalAlterConfigsResponseResource()
		rr.ResourceType, rr.ResourceName, rr.ErrorCode = res.ResourceType, res.ResourceName, code
		out.Resources = append(out.Resources, rr)
	}
}

func alterPartitionAssignmentsErrors(r *kmsg.AlterPartitionAssignmentsRequest, out *kmsg.AlterPartitionAssignmentsResponse, code int16) {
	out.ErrorCode = code
	for _, t := range r.Topics {
		rt := kmsg.NewAlterPartitionAssignmentsResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, code
			rt.Partitions = append(rt.Partitions, rp)
		}
		out.Topics = append(out.Topics, rt)
	}
}

// describeQuorumErrors answers per partition, with no leader known.
func describeQuorumErrors(r *kmsg.DescribeQuorumRequest, out *kmsg.DescribeQuorumResponse, code int16) {
	for _, t := range r.Topics {
		rt := kmsg.NewDescribeQuorumResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewDescribeQuorumResponseTopicPartition()
			rp.Partition, rp.ErrorCode, rp.LeaderID = p.Partition, code, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		out.Topics = append(out.Topics, rt)
	}
}

// setTopLevelErrorCode sets the response's ErrorCode field, if it has one.
func setTopLevelErrorCode(resp kmsg.Response, code int16) bool {
	v := reflect.ValueOf(resp)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return false
	}
	f := v.Elem().FieldByName("ErrorCode")
	if !f.IsValid() || f.Kind() != reflect.Int16 || !f.CanSet() {
		return false
	}
	f.SetInt(int64(code))
	return true
}

// alterScramErrors answers each user named, once.
// alterClientQuotasErrors answers each entry's entity, as sent
// (AlterClientQuotasRequest.getErrorResponse).
func alterClientQuotasErrors(r *kmsg.AlterClientQuotasRequest, out *kmsg.AlterClientQuotasResponse, code int16) {
	for _, e := range r.Entries {
		re := kmsg.NewAlterClientQuotasResponseEntry()
		re.ErrorCode = code
		for _, c := range e.Entity {
			ec := kmsg.NewAlterClientQuotasResponseEntryEntity()
			ec.Type, ec.Name = c.Type, c.Name
			re.Entity = append(re.Entity, ec)
		}
		out.Entries = append(out.Entries, re)
	}
}

func alterScramErrors(r *kmsg.AlterUserSCRAMCredentialsRequest, out *kmsg.AlterUserSCRAMCredentialsResponse, code int16) {
	seen := map[string]bool{}
	add := func(user string) {
		if !seen[user] {
			seen[user] = true
			out.Results = append(out.Results, kmsg.AlterUserSCRAMCredentialsResponseResult{User: user, ErrorCode: code})
		}
	}
	for _, d := range r.Deletions {
		add(d.Name)
	}
	for _, u := range r.Upsertions {
		add(u.Name)
	}
}

func offsetCommitErrors(r *kmsg.OffsetCommitRequest, out *kmsg.OffsetCommitResponse, code int16) {
	for _, t := range r.Topics {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, code
			rt.Partitions = append(rt.Partitions, rp)
		}
		out.Topics = append(out.Topics, rt)
	}
}

// offsetFetchErrors answers v0-v7 with the top-level code (v2+) and per
// partition, v8+ per group.
func offsetFetchErrors(r *kmsg.OffsetFetchRequest, out *kmsg.OffsetFetchResponse, code int16) {
	out.ErrorCode = code
	for _, t := range r.Topics {
		rt := kmsg.NewOffsetFetchResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetFetchResponseTopicPartition()
			rp.Partition, rp.ErrorCode, rp.Offset = p, code, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		out.Topics = append(out.Topics, rt)
	}
	for _, g := range r.Groups {
		rg := kmsg.NewOffsetFetchResponseGroup()
		rg.Group, rg.ErrorCode = g.Group, code
		out.Groups = append(out.Groups, rg)
	}
}

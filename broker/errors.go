package broker

import (
	"reflect"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/protocol"
)

// errorResponse answers req with code on every topic and partition it names
// (Kafka's AbstractRequest.getErrorResponse), for a request that failed as a
// whole: an unsupported version, or a handler that panicked. It returns nil
// when the response has no place for the error; the connection is closed then.
func errorResponse(req *protocol.Request, code int16) kmsg.Response {
	resp := req.Body.ResponseKind()
	switch r := req.Body.(type) {
	case *kmsg.ProduceRequest:
		out := resp.(*kmsg.ProduceResponse)
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
	case *kmsg.FetchRequest:
		out := resp.(*kmsg.FetchResponse)
		out.ErrorCode = code
	case *kmsg.ListOffsetsRequest:
		out := resp.(*kmsg.ListOffsetsResponse)
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
	case *kmsg.MetadataRequest:
		out := resp.(*kmsg.MetadataResponse)
		for _, t := range r.Topics {
			rt := kmsg.NewMetadataResponseTopic()
			rt.Topic, rt.TopicID, rt.ErrorCode = t.Topic, t.TopicID, code
			out.Topics = append(out.Topics, rt)
		}
		out.ErrorCode = code
	case *kmsg.OffsetForLeaderEpochRequest:
		out := resp.(*kmsg.OffsetForLeaderEpochResponse)
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
	case *kmsg.CreateTopicsRequest:
		out := resp.(*kmsg.CreateTopicsResponse)
		for _, t := range r.Topics {
			rt := kmsg.NewCreateTopicsResponseTopic()
			rt.Topic, rt.ErrorCode = t.Topic, code
			out.Topics = append(out.Topics, rt)
		}
	case *kmsg.DeleteTopicsRequest:
		out := resp.(*kmsg.DeleteTopicsResponse)
		for _, t := range r.Topics {
			rt := kmsg.NewDeleteTopicsResponseTopic()
			rt.Topic, rt.TopicID, rt.ErrorCode = t.Topic, t.TopicID, code
			out.Topics = append(out.Topics, rt)
		}
		for _, name := range r.TopicNames {
			rt := kmsg.NewDeleteTopicsResponseTopic()
			rt.Topic, rt.ErrorCode = kmsg.StringPtr(name), code
			out.Topics = append(out.Topics, rt)
		}
	case *kmsg.DescribeConfigsRequest:
		out := resp.(*kmsg.DescribeConfigsResponse)
		for _, rr := range r.Resources {
			res := kmsg.NewDescribeConfigsResponseResource()
			res.ResourceType, res.ResourceName, res.ErrorCode = rr.ResourceType, rr.ResourceName, code
			out.Resources = append(out.Resources, res)
		}
	case *kmsg.ApiVersionsRequest:
		out := resp.(*kmsg.ApiVersionsResponse)
		out.ErrorCode = code
	default:
		if !setTopLevelErrorCode(resp, code) {
			return nil
		}
	}
	return resp
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

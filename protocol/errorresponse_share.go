package protocol

import "github.com/twmb/franz-go/pkg/kmsg"

// shareErrorResponse fills the answer of the share group APIs (KIP-932)
// whose errors are per group or per partition; false for other requests.
func shareErrorResponse(req kmsg.Request, resp kmsg.Response, code int16) bool {
	switch r := req.(type) {
	case *kmsg.ShareGroupDescribeRequest:
		out := resp.(*kmsg.ShareGroupDescribeResponse)
		for _, g := range r.GroupIDs {
			dg := kmsg.NewShareGroupDescribeResponseGroup()
			dg.GroupID, dg.ErrorCode = g, code
			out.Groups = append(out.Groups, dg)
		}
	case *kmsg.DescribeShareGroupOffsetsRequest:
		out := resp.(*kmsg.DescribeShareGroupOffsetsResponse)
		for _, g := range r.Groups {
			dg := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
			dg.GroupID, dg.ErrorCode = g.GroupID, code
			out.Groups = append(out.Groups, dg)
		}
	case *kmsg.InitializeShareGroupStateRequest:
		out := resp.(*kmsg.InitializeShareGroupStateResponse)
		for _, t := range r.Topics {
			rt := kmsg.NewInitializeShareGroupStateResponseTopic()
			rt.TopicID = t.TopicID
			for _, p := range t.Partitions {
				rt.Partitions = append(rt.Partitions, kmsg.InitializeShareGroupStateResponseTopicPartition{Partition: p.Partition, ErrorCode: code})
			}
			out.Topics = append(out.Topics, rt)
		}
	case *kmsg.ReadShareGroupStateRequest:
		out := resp.(*kmsg.ReadShareGroupStateResponse)
		for _, t := range r.Topics {
			rt := kmsg.NewReadShareGroupStateResponseTopic()
			rt.TopicID = t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewReadShareGroupStateResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, code
				rt.Partitions = append(rt.Partitions, rp)
			}
			out.Topics = append(out.Topics, rt)
		}
	case *kmsg.WriteShareGroupStateRequest:
		out := resp.(*kmsg.WriteShareGroupStateResponse)
		for _, t := range r.Topics {
			rt := kmsg.NewWriteShareGroupStateResponseTopic()
			rt.TopicID = t.TopicID
			for _, p := range t.Partitions {
				rt.Partitions = append(rt.Partitions, kmsg.WriteShareGroupStateResponseTopicPartition{Partition: p.Partition, ErrorCode: code})
			}
			out.Topics = append(out.Topics, rt)
		}
	case *kmsg.DeleteShareGroupStateRequest:
		out := resp.(*kmsg.DeleteShareGroupStateResponse)
		for _, t := range r.Topics {
			rt := kmsg.NewDeleteShareGroupStateResponseTopic()
			rt.TopicID = t.TopicID
			for _, p := range t.Partitions {
				rt.Partitions = append(rt.Partitions, kmsg.DeleteShareGroupStateResponseTopicPartition{Partition: p.Partition, ErrorCode: code})
			}
			out.Topics = append(out.Topics, rt)
		}
	case *kmsg.ReadShareGroupStateSummaryRequest:
		out := resp.(*kmsg.ReadShareGroupStateSummaryResponse)
		for _, t := range r.Topics {
			rt := kmsg.NewReadShareGroupStateSummaryResponseTopic()
			rt.TopicID = t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewReadShareGroupStateSummaryResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, code
				rt.Partitions = append(rt.Partitions, rp)
			}
			out.Topics = append(out.Topics, rt)
		}
	default:
		return false
	}
	return true
}

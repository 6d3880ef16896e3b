package broker

import (
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/protocol"
)

// vectorShareFetch is a ShareFetch response written without copying its
// records into the response buffer, as vectorFetch does for Fetch: the
// acquired batches, slices of the mapped log segments, go to the socket
// with writev. It encodes exactly what kmsg.ShareFetchResponse.AppendTo
// would (share_fetch_encode_test checks byte equality).
type vectorShareFetch struct {
	*kmsg.ShareFetchResponse
}

// shareFetchBody is the response to write: with writev when it carries
// enough record bytes to make skipping the copy worth a syscall.
func shareFetchBody(r *kmsg.ShareFetchResponse, recordBytes int) kmsg.Response {
	if recordBytes >= zeroCopyMin && shareVectorable(r) {
		return vectorShareFetch{r}
	}
	return r
}

// AppendVectors implements protocol.VectorResponse.
func (v vectorShareFetch) AppendVectors(vs []protocol.Vector, scratch []byte) []protocol.Vector {
	r := v.ShareFetchResponse
	b := scratch
	b = kbin.AppendInt32(b, r.ThrottleMillis)
	b = kbin.AppendInt16(b, r.ErrorCode)
	b = kbin.AppendCompactNullableString(b, r.ErrorMessage)
	if r.Version >= 1 {
		b = kbin.AppendInt32(b, r.AcquisitionLockTimeoutMillis)
	}
	b = appendArrayLen(b, len(r.Topics), true)
	for i := range r.Topics {
		t := &r.Topics[i]
		b = kbin.AppendUuid(b, t.TopicID)
		b = appendArrayLen(b, len(t.Partitions), true)
		for j := range t.Partitions {
			p := &t.Partitions[j]
			b = kbin.AppendInt32(b, p.Partition)
			b = kbin.AppendInt16(b, p.ErrorCode)
			b = kbin.AppendCompactNullableString(b, p.ErrorMessage)
			b = kbin.AppendInt16(b, p.AcknowledgeErrorCode)
			b = kbin.AppendCompactNullableString(b, p.AcknowledgeErrorMessage)
			b = kbin.AppendInt32(b, p.CurrentLeader.LeaderID)
			b = kbin.AppendInt32(b, p.CurrentLeader.LeaderEpoch)
			b = append(b, 0) // CurrentLeader's tags
			b = appendNullableBytesLen(b, len(p.Records), p.Records == nil, true)
			if len(p.Records) > 0 {
				vs = append(vs, protocol.Vector{B: b}, protocol.Vector{B: p.Records})
				b = b[len(b):] // keep appending after what vs holds
			}
			b = appendArrayLen(b, len(p.AcquiredRecords), true)
			for _, a := range p.AcquiredRecords {
				b = kbin.AppendInt64(b, a.FirstOffset)
				b = kbin.AppendInt64(b, a.LastOffset)
				b = kbin.AppendInt16(b, a.DeliveryCount)
				b = append(b, 0)
			}
			b = append(b, 0) // partition tags
		}
		b = append(b, 0) // topic tags
	}
	b = appendArrayLen(b, len(r.NodeEndpoints), true)
	for _, ne := range r.NodeEndpoints {
		b = kbin.AppendInt32(b, ne.NodeID)
		b = kbin.AppendCompactString(b, ne.Host)
		b = kbin.AppendInt32(b, ne.Port)
		b = kbin.AppendCompactNullableString(b, ne.Rack)
		b = append(b, 0)
	}
	b = append(b, 0) // response tags
	return append(vs, protocol.Vector{B: b})
}

// shareVectorable reports whether vectorShareFetch encodes r exactly: no
// unknown tags anywhere (kbroker sets none).
func shareVectorable(r *kmsg.ShareFetchResponse) bool {
	if r.UnknownTags.Len() > 0 {
		return false
	}
	for i := range r.Topics {
		t := &r.Topics[i]
		if t.UnknownTags.Len() > 0 {
			return false
		}
		for j := range t.Partitions {
			p := &t.Partitions[j]
			if p.UnknownTags.Len() > 0 || p.CurrentLeader.UnknownTags.Len() > 0 {
				return false
			}
			for k := range p.AcquiredRecords {
				if p.AcquiredRecords[k].UnknownTags.Len() > 0 {
					return false
				}
			}
		}
	}
	for i := range r.NodeEndpoints {
		if r.NodeEndpoints[i].UnknownTags.Len() > 0 {
			return false
		}
	}
	return true
}

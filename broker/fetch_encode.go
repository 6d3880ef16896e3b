package broker

import (
	"os"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/protocol"
)

// vectorFetch is a fetch response written without copying its records
// into the response buffer: the record batches, slices of the mapped log
// segments, go to the socket with sendfile from the segment file when it is
// open (Kafka's zero-copy transferTo) and with writev from the mapping
// otherwise. It encodes exactly what kmsg.FetchResponse.AppendTo would
// (fetch_encode_test checks byte equality) for the fields kbroker sets.
type vectorFetch struct {
	*kmsg.FetchResponse
	files []fetchFile
}

// fetchFile is where one partition's records lie in an open segment file.
type fetchFile struct {
	data   []byte
	file   *os.File
	offset int64
}

// vector is the piece for records, the k-th non-empty record set of the
// response: with its file when readFetch recorded one for these bytes.
func (v vectorFetch) vector(k int, records []byte) protocol.Vector {
	if k < len(v.files) {
		f := v.files[k]
		if f.file != nil && len(f.data) == len(records) && &f.data[0] == &records[0] {
			return protocol.Vector{B: records, File: f.file, Offset: f.offset}
		}
	}
	return protocol.Vector{B: records}
}

// zeroCopyMin is the record volume from which a fetch response is written
// with writev; below it, one copy into the connection's buffer is cheaper
// than an extra syscall.
const zeroCopyMin = 16 << 10

// AppendVectors implements protocol.VectorResponse: it appends the encoded
// body to vs, the small fields in scratch and each record set as its own
// piece.
func (v vectorFetch) AppendVectors(vs []protocol.Vector, scratch []byte) []protocol.Vector {
	r := v.FetchResponse
	k := 0 // record sets so far
	version, flex := r.Version, r.Version >= 12
	b := scratch
	if version >= 1 {
		b = kbin.AppendInt32(b, r.ThrottleMillis)
	}
	if version >= 7 {
		b = kbin.AppendInt16(b, r.ErrorCode)
		b = kbin.AppendInt32(b, r.SessionID)
	}
	b = appendArrayLen(b, len(r.Topics), flex)
	for i := range r.Topics {
		t := &r.Topics[i]
		if version <= 12 {
			b = appendString(b, t.Topic, flex)
		} else {
			b = kbin.AppendUuid(b, t.TopicID)
		}
		b = appendArrayLen(b, len(t.Partitions), flex)
		for j := range t.Partitions {
			p := &t.Partitions[j]
			b = kbin.AppendInt32(b, p.Partition)
			b = kbin.AppendInt16(b, p.ErrorCode)
			b = kbin.AppendInt64(b, p.HighWatermark)
			b = kbin.AppendInt64(b, p.LastStableOffset)
			if version >= 5 {
				b = kbin.AppendInt64(b, p.LogStartOffset)
			}
			b = appendNullableArrayLen(b, len(p.AbortedTransactions), p.AbortedTransactions == nil, flex)
			for _, a := range p.AbortedTransactions {
				b = kbin.AppendInt64(b, a.ProducerID)
				b = kbin.AppendInt64(b, a.FirstOffset)
				if flex {
					b = append(b, 0)
				}
			}
			if version >= 11 {
				b = kbin.AppendInt32(b, p.PreferredReadReplica)
			}
			b = appendNullableBytesLen(b, len(p.RecordBatches), p.RecordBatches == nil, flex)
			if len(p.RecordBatches) > 0 {
				vs = append(vs, protocol.Vector{B: b}, v.vector(k, p.RecordBatches))
				k++
				b = b[len(b):] // keep appending after what vs holds
			}
			if flex {
				b = appendPartitionTags(b, p)
			}
		}
		if flex {
			b = append(b, 0)
		}
	}
	if flex {
		b = appendResponseTags(b, r)
	}
	if len(b) > 0 {
		vs = append(vs, protocol.Vector{B: b})
	}
	return vs
}

func appendPartitionTags(b []byte, p *kmsg.FetchResponseTopicPartition) []byte {
	n := 0
	diverging := p.DivergingEpoch.Epoch != -1 || p.DivergingEpoch.EndOffset != -1
	leader := p.CurrentLeader.LeaderID != -1 || p.CurrentLeader.LeaderEpoch != -1
	snapshot := p.SnapshotID.EndOffset != -1 || p.SnapshotID.Epoch != -1
	for _, set := range []bool{diverging, leader, snapshot} {
		if set {
			n++
		}
	}
	b = kbin.AppendUvarint(b, uint32(n))
	if diverging {
		b = append(b, 0, 13) // tag 0, 4+8 bytes + empty tags
		b = kbin.AppendInt32(b, p.DivergingEpoch.Epoch)
		b = kbin.AppendInt64(b, p.DivergingEpoch.EndOffset)
		b = append(b, 0)
	}
	if leader {
		b = append(b, 1, 9) // tag 1, 4+4 bytes + empty tags
		b = kbin.AppendInt32(b, p.CurrentLeader.LeaderID)
		b = kbin.AppendInt32(b, p.CurrentLeader.LeaderEpoch)
		b = append(b, 0)
	}
	if snapshot {
		b = append(b, 2, 13) // tag 2, 8+4 bytes + empty tags
		b = kbin.AppendInt64(b, p.SnapshotID.EndOffset)
		b = kbin.AppendInt32(b, p.SnapshotID.Epoch)
		b = append(b, 0)
	}
	return b
}

func appendResponseTags(b []byte, r *kmsg.FetchResponse) []byte {
	if len(r.Brokers) == 0 {
		return append(b, 0)
	}
	var body []byte
	body = appendArrayLen(body, len(r.Brokers), true)
	for _, br := range r.Brokers {
		body = kbin.AppendInt32(body, br.NodeID)
		body = appendString(body, br.Host, true)
		body = kbin.AppendInt32(body, br.Port)
		body = kbin.AppendCompactNullableString(body, br.Rack)
		body = append(body, 0)
	}
	b = append(b, 1, 0) // one tag: 0
	b = kbin.AppendUvarint(b, uint32(len(body)))
	return append(b, body...)
}

func appendArrayLen(b []byte, n int, flex bool) []byte {
	if flex {
		return kbin.AppendUvarint(b, uint32(n+1))
	}
	return kbin.AppendInt32(b, int32(n))
}

func appendNullableArrayLen(b []byte, n int, null, flex bool) []byte {
	switch {
	case flex && null:
		return kbin.AppendUvarint(b, 0)
	case flex:
		return kbin.AppendUvarint(b, uint32(n+1))
	case null:
		return kbin.AppendInt32(b, -1)
	}
	return kbin.AppendInt32(b, int32(n))
}

func appendString(b []byte, s string, flex bool) []byte {
	if flex {
		return kbin.AppendCompactString(b, s)
	}
	return kbin.AppendString(b, s)
}

func appendNullableBytesLen(b []byte, n int, null, flex bool) []byte {
	return appendNullableArrayLen(b, n, null, flex)
}

// vectorable reports whether vectorFetch encodes r exactly: kbroker never
// sets unknown tags, but a defensive check keeps the fallback honest.
func vectorable(r *kmsg.FetchResponse) bool {
	if r.UnknownTags.Len() > 0 || r.Version < 4 {
		return false
	}
	for i := range r.Topics {
		if r.Topics[i].UnknownTags.Len() > 0 {
			return false
		}
		for j := range r.Topics[i].Partitions {
			p := &r.Topics[i].Partitions[j]
			if p.UnknownTags.Len() > 0 || p.DivergingEpoch.UnknownTags.Len() > 0 ||
				p.CurrentLeader.UnknownTags.Len() > 0 || p.SnapshotID.UnknownTags.Len() > 0 {
				return false
			}
		}
	}
	return true
}

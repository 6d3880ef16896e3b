package broker

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The writev encoding of a fetch response is byte for byte kmsg's, for every
// version served and the fields kbroker sets.
func TestVectorFetchMatchesKmsg(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for version := int16(4); version <= 16; version++ {
		for trial := range 50 {
			r := randomFetchResponse(rng, version)
			want := r.AppendTo(nil)
			var got []byte
			for _, v := range (vectorFetch{FetchResponse: r}).AppendVectors(nil, make([]byte, 0, 64)) {
				got = append(got, v.B...)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("v%d trial %d: %d bytes, kmsg encodes %d", version, trial, len(got), len(want))
			}
			if !vectorable(r) {
				t.Fatalf("v%d: a response kbroker builds is not vectorable", version)
			}
		}
	}
}

func randomFetchResponse(rng *rand.Rand, version int16) *kmsg.FetchResponse {
	r := kmsg.NewPtrFetchResponse()
	r.SetVersion(version)
	r.ThrottleMillis, r.ErrorCode, r.SessionID = rng.Int32N(5), int16(rng.IntN(2)), rng.Int32N(3)
	for ti := range rng.IntN(3) {
		t := kmsg.NewFetchResponseTopic()
		t.Topic = string(rune('a'+ti)) + "topic"
		t.TopicID[0] = byte(ti + 1)
		for pi := range rng.IntN(4) {
			p := kmsg.NewFetchResponseTopicPartition()
			p.Partition, p.ErrorCode = int32(pi), int16(rng.IntN(2))
			p.HighWatermark, p.LastStableOffset, p.LogStartOffset = rng.Int64N(1000), rng.Int64N(1000), rng.Int64N(10)
			p.PreferredReadReplica = -1
			switch rng.IntN(3) {
			case 0:
				p.RecordBatches = nil
			case 1:
				p.RecordBatches = []byte{}
			default:
				p.RecordBatches = bytes.Repeat([]byte{byte(pi)}, rng.IntN(3000))
			}
			if rng.IntN(2) == 0 {
				p.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
			}
			if rng.IntN(4) == 0 {
				p.AbortedTransactions = append(p.AbortedTransactions, kmsg.FetchResponseTopicPartitionAbortedTransaction{ProducerID: 7, FirstOffset: 9})
			}
			if rng.IntN(3) == 0 {
				p.DivergingEpoch.Epoch, p.DivergingEpoch.EndOffset = 3, 42
			}
			if rng.IntN(3) == 0 {
				p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch = 2, 5
			}
			t.Partitions = append(t.Partitions, p)
		}
		r.Topics = append(r.Topics, t)
	}
	if rng.IntN(3) == 0 {
		b := kmsg.NewFetchResponseBroker()
		b.NodeID, b.Host, b.Port = 2, "host", 9092
		if rng.IntN(2) == 0 {
			b.Rack = kmsg.StringPtr("r1")
		}
		r.Brokers = append(r.Brokers, b)
	}
	return r
}

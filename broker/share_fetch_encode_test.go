package broker

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The writev encoding of a ShareFetch response is byte for byte kmsg's,
// for every version served and the fields kbroker sets.
func TestVectorShareFetchMatchesKmsg(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for version := int16(0); version <= 2; version++ {
		for trial := range 200 {
			r := randomShareFetchResponse(rng, version)
			want := r.AppendTo(nil)
			var got []byte
			for _, v := range (vectorShareFetch{r}).AppendVectors(nil, make([]byte, 0, 64)) {
				got = append(got, v.B...)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("v%d trial %d: %d bytes, kmsg encodes %d", version, trial, len(got), len(want))
			}
			if !shareVectorable(r) {
				t.Fatalf("v%d: a response kbroker builds is not vectorable", version)
			}
		}
	}
}

func randomShareFetchResponse(rng *rand.Rand, version int16) *kmsg.ShareFetchResponse {
	str := func(s string) *string {
		if rng.IntN(2) == 0 {
			return nil
		}
		return &s
	}
	r := kmsg.NewPtrShareFetchResponse()
	r.SetVersion(version)
	r.ThrottleMillis, r.ErrorCode, r.ErrorMessage = rng.Int32N(5), int16(rng.IntN(2)), str("top error")
	r.AcquisitionLockTimeoutMillis = rng.Int32N(60000)
	for ti := range rng.IntN(3) {
		t := kmsg.NewShareFetchResponseTopic()
		t.TopicID[0] = byte(ti + 1)
		for pi := range rng.IntN(4) {
			p := kmsg.NewShareFetchResponseTopicPartition()
			p.Partition, p.ErrorCode, p.ErrorMessage = int32(pi), int16(rng.IntN(2)), str("part error")
			p.AcknowledgeErrorCode, p.AcknowledgeErrorMessage = int16(rng.IntN(2)), str("ack error")
			p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch = rng.Int32N(4)-1, rng.Int32N(9)-1
			switch rng.IntN(3) {
			case 0:
				p.Records = nil
			case 1:
				p.Records = []byte{}
			default:
				p.Records = bytes.Repeat([]byte{byte(pi)}, rng.IntN(3000))
			}
			for range rng.IntN(3) {
				a := kmsg.NewShareFetchResponseTopicPartitionAcquiredRecord()
				a.FirstOffset, a.LastOffset, a.DeliveryCount = rng.Int64N(1000), rng.Int64N(1000), int16(rng.IntN(5))
				p.AcquiredRecords = append(p.AcquiredRecords, a)
			}
			t.Partitions = append(t.Partitions, p)
		}
		r.Topics = append(r.Topics, t)
	}
	for id := range rng.IntN(3) {
		ne := kmsg.NewShareFetchResponseNodeEndpoint()
		ne.NodeID, ne.Host, ne.Port, ne.Rack = int32(id), "host", 9092, str("rack")
		r.NodeEndpoints = append(r.NodeEndpoints, ne)
	}
	return r
}

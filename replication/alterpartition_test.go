package replication

import (
	"errors"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var (
	topicA = [16]byte{1}
	topicB = [16]byte{2}
)

func testChanges() []AlterISR {
	return []AlterISR{
		{Topic: "a", TopicID: topicA, Partition: 0, LeaderEpoch: 3, PartitionEpoch: 7, NewISR: []int32{1, 2}},
		{Topic: "b", TopicID: topicB, Partition: 4, LeaderEpoch: 1, PartitionEpoch: 2, NewISR: []int32{1}},
		{Topic: "a", TopicID: topicA, Partition: 1, LeaderEpoch: 5, PartitionEpoch: 9, NewISR: []int32{1, 2, 3},
			NewISREpochs: []int64{-1, 17, -1}},
	}
}

func TestAlterPartitionRequestGroupsByTopic(t *testing.T) {
	req := AlterPartitionRequest(1, 42, testChanges())
	if req.GetVersion() != 3 || req.BrokerID != 1 || req.BrokerEpoch != 42 {
		t.Fatalf("header: v%d broker %d epoch %d", req.GetVersion(), req.BrokerID, req.BrokerEpoch)
	}
	if len(req.Topics) != 2 || req.Topics[0].TopicID != topicA || req.Topics[0].Topic != "a" || req.Topics[1].TopicID != topicB {
		t.Fatalf("topics %+v", req.Topics)
	}
	a := req.Topics[0].Partitions
	if len(a) != 2 || a[0].Partition != 0 || a[1].Partition != 1 {
		t.Fatalf("topic a partitions %+v", a)
	}
	p := a[1]
	if p.LeaderEpoch != 5 || p.PartitionEpoch != 9 || !slices.Equal(p.NewISR, []int32{1, 2, 3}) {
		t.Fatalf("partition a-1 %+v", p)
	}
	// KIP-903: each member with the broker epoch it fetched with, the
	// leader with its own, -1 where the leader knows none.
	if got := epochISR(p.NewEpochISR); !slices.Equal(got, []int64{1, 42, 2, 17, 3, -1}) {
		t.Fatalf("v3 ISR (id, epoch) %v", got)
	}
	if got := epochISR(req.Topics[1].Partitions[0].NewEpochISR); !slices.Equal(got, []int64{1, 42}) {
		t.Fatalf("b-4 v3 ISR (id, epoch) %v", got)
	}
}

// epochISR flattens a v3 ISR into id, epoch pairs.
func epochISR(isr []kmsg.AlterPartitionRequestTopicPartitionNewEpochISR) []int64 {
	var out []int64
	for _, m := range isr {
		out = append(out, int64(m.BrokerID), m.BrokerEpoch)
	}
	return out
}

// The request survives the wire at every version the controller serves:
// v0-v1 by name, v2 by id, v3 with broker epochs.
func TestAlterPartitionRequestRoundTrips(t *testing.T) {
	for v := int16(0); v <= 3; v++ {
		req := AlterPartitionRequest(1, 42, testChanges())
		req.SetVersion(v)
		got := kmsg.NewPtrAlterPartitionRequest()
		got.SetVersion(v)
		if err := got.ReadFrom(req.AppendTo(nil)); err != nil {
			t.Fatalf("v%d: %v", v, err)
		}
		if len(got.Topics) != 2 || len(got.Topics[0].Partitions) != 2 {
			t.Fatalf("v%d: %+v", v, got)
		}
		isr := got.Topics[0].Partitions[1].NewISR
		if v == 3 {
			isr = nil
			for _, e := range got.Topics[0].Partitions[1].NewEpochISR {
				isr = append(isr, e.BrokerID)
			}
		}
		if !slices.Equal(isr, []int32{1, 2, 3}) {
			t.Fatalf("v%d ISR %v", v, isr)
		}
		if got := epochISR(got.Topics[0].Partitions[1].NewEpochISR); v == 3 && !slices.Equal(got, []int64{1, 42, 2, 17, 3, -1}) {
			t.Fatalf("v3 epochs lost on the wire: %v", got)
		}
	}
}

func answer(id [16]byte, partition int32, code int16, isr ...int32) kmsg.AlterPartitionResponseTopic {
	t := kmsg.NewAlterPartitionResponseTopic()
	t.TopidID = id
	p := kmsg.NewAlterPartitionResponseTopicPartition()
	p.Partition, p.ErrorCode, p.ISR, p.LeaderEpoch, p.PartitionEpoch = partition, code, isr, 10+partition, 20+partition
	t.Partitions = append(t.Partitions, p)
	return t
}

// Results come back in the order of the changes, whatever the order of
// the response; a change the controller did not answer gets an error.
func TestAlterPartitionResultsInChangeOrder(t *testing.T) {
	resp := kmsg.NewPtrAlterPartitionResponse()
	resp.Topics = append(resp.Topics,
		answer(topicA, 1, 0, 1, 2, 3),
		answer(topicB, 4, kerr.FencedLeaderEpoch.Code),
	)
	out, err := AlterPartitionResults(testChanges(), resp)
	if err != nil || len(out) != 3 {
		t.Fatalf("%v %+v", err, out)
	}
	if out[0].Err == nil || errors.Is(out[0].Err, kerr.FencedLeaderEpoch) {
		t.Fatalf("unanswered change: %v", out[0].Err)
	}
	if !errors.Is(out[1].Err, kerr.FencedLeaderEpoch) {
		t.Fatalf("b-4: %v", out[1].Err)
	}
	r := out[2]
	if r.Err != nil || !slices.Equal(r.ISR, []int32{1, 2, 3}) || r.LeaderEpoch != 11 || r.PartitionEpoch != 21 {
		t.Fatalf("a-1: %+v", r)
	}
}

func TestAlterPartitionResultsWholeRequestError(t *testing.T) {
	resp := kmsg.NewPtrAlterPartitionResponse()
	resp.ErrorCode = kerr.StaleBrokerEpoch.Code
	resp.Topics = append(resp.Topics, answer(topicA, 0, 0, 1))
	out, err := AlterPartitionResults(testChanges(), resp)
	if !errors.Is(err, kerr.StaleBrokerEpoch) || out != nil {
		t.Fatalf("%v %+v", err, out)
	}
}

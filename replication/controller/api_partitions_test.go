package controller

import (
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func alterReq(version int16, broker int32, epoch int64, topic string, id [16]byte, p *Partition, isr ...int32) *kmsg.AlterPartitionRequest {
	req := kmsg.NewPtrAlterPartitionRequest()
	req.Version, req.BrokerID, req.BrokerEpoch = version, broker, epoch
	rt := kmsg.NewAlterPartitionRequestTopic()
	rt.Topic, rt.TopicID = topic, id
	rp := kmsg.NewAlterPartitionRequestTopicPartition()
	rp.Partition, rp.LeaderEpoch, rp.PartitionEpoch = p.Index, p.LeaderEpoch, p.PartitionEpoch
	if version >= 3 {
		for _, m := range isr {
			rp.NewEpochISR = append(rp.NewEpochISR, kmsg.AlterPartitionRequestTopicPartitionNewEpochISR{BrokerID: m, BrokerEpoch: -1})
		}
	} else {
		rp.NewISR = isr
	}
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// KIP-497: the leader shrinks and expands the ISR with its partition epoch;
// each accepted change bumps the partition epoch, not the leader epoch.
func TestAlterPartitionVersions(t *testing.T) {
	h := newCtlHarness(t)
	h.live(1, 2, 3)
	h.manualTopic("t", []int32{1, 2, 3})
	id := h.img().Topics["t"].ID
	for _, v := range []int16{0, 1, 2, 3} {
		p := h.img().Partition("t", 0)
		want := []int32{1, 2}
		if slices.Equal(p.ISR, want) {
			want = []int32{1, 2, 3}
		}
		resp := h.do(alterReq(v, 1, h.epoch(1), "t", id, p, want...)).(*kmsg.AlterPartitionResponse)
		if resp.ErrorCode != 0 {
			t.Fatalf("v%d: %v", v, kerr.ErrorForCode(resp.ErrorCode))
		}
		sp := resp.Topics[0].Partitions[0]
		after := h.img().Partition("t", 0)
		if sp.ErrorCode != 0 || sp.LeaderID != 1 || !slices.Equal(sp.ISR, want) ||
			sp.PartitionEpoch != p.PartitionEpoch+1 || sp.LeaderEpoch != p.LeaderEpoch ||
			!slices.Equal(after.ISR, want) || after.PartitionEpoch != sp.PartitionEpoch {
			t.Fatalf("v%d: response %+v, image %+v", v, sp, after)
		}
		if v >= 2 && resp.Topics[0].TopidID != id || v < 2 && resp.Topics[0].Topic != "t" {
			t.Fatalf("v%d: topic echoed as %+v", v, resp.Topics[0])
		}
	}
	// An unchanged ISR commits nothing and answers the current state.
	p := h.img().Partition("t", 0)
	idx := h.img().AppliedIndex
	resp := h.do(alterReq(2, 1, h.epoch(1), "t", id, p, p.ISR...)).(*kmsg.AlterPartitionResponse)
	if sp := resp.Topics[0].Partitions[0]; sp.ErrorCode != 0 || sp.PartitionEpoch != p.PartitionEpoch || h.img().AppliedIndex != idx {
		t.Fatalf("no-op alter %+v", sp)
	}
}

func TestAlterPartitionErrors(t *testing.T) {
	h := newCtlHarness(t)
	h.live(1, 2, 3)
	h.manualTopic("t", []int32{1, 2, 3})
	id := h.img().Topics["t"].ID
	p := h.img().Partition("t", 0)

	resp := h.do(alterReq(2, 1, h.epoch(1)+1, "t", id, p, 1)).(*kmsg.AlterPartitionResponse)
	if resp.ErrorCode != kerr.StaleBrokerEpoch.Code {
		t.Fatalf("stale broker epoch: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	check := func(req *kmsg.AlterPartitionRequest, want error) {
		t.Helper()
		resp := h.do(req).(*kmsg.AlterPartitionResponse)
		if got := kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode); got != want {
			t.Fatalf("got %v want %v", got, want)
		}
	}
	check(alterReq(2, 1, h.epoch(1), "", [16]byte{7}, p, 1), kerr.UnknownTopicID)
	check(alterReq(1, 1, h.epoch(1), "nope", id, p, 1), kerr.UnknownTopicOrPartition)
	check(alterReq(2, 1, h.epoch(1), "", id, withEpochs(p, 0, 0).withIndex(5), 1), kerr.UnknownTopicOrPartition)
	check(alterReq(2, 2, h.epoch(2), "", id, p, 1, 2), kerr.InvalidRequest)
	check(alterReq(2, 1, h.epoch(1), "", id, withEpochs(p, -1, 0), 1), kerr.FencedLeaderEpoch)

	// Fence broker 3 (it leaves the ISR), then try to add it back.
	h.clock.Advance(20e9)
	h.heartbeat(1, h.epoch(1), false, false)
	h.heartbeat(2, h.epoch(2), false, false)
	h.c.fenceExpired(h.ctx)
	p = h.img().Partition("t", 0)
	check(alterReq(3, 1, h.epoch(1), "", id, p, 1, 2, 3), kerr.IneligibleReplica)
	check(alterReq(1, 1, h.epoch(1), "t", id, p, 1, 2, 3), kerr.OperationNotAttempted)
	// A stale partition epoch: the leader missed a change.
	check(alterReq(2, 1, h.epoch(1), "", id, withEpochs(p, p.LeaderEpoch, p.PartitionEpoch-1), 1), kerr.InvalidUpdateVersion)
}

func (p *Partition) withIndex(i int32) *Partition {
	c := p.clone()
	c.Index = i
	return c
}

func TestElectLeaders(t *testing.T) {
	h := newCtlHarness(t)
	h.live(1, 2)
	h.manualTopic("t", []int32{1, 2}, []int32{2, 1})
	h.manualTopic("solo", []int32{1})
	id := h.img().Topics["t"].ID
	// Move t-0's leadership to 2 by fencing 1, then bring 1 back into the ISR.
	h.clock.Advance(20e9)
	h.heartbeat(2, h.epoch(2), false, false)
	h.c.fenceExpired(h.ctx)
	h.heartbeat(1, h.epoch(1), false, false) // unfenced again
	p := h.img().Partition("t", 0)
	if p.Leader != 2 {
		t.Fatalf("setup: %+v", p)
	}
	h.do(alterReq(2, 2, h.epoch(2), "", id, p, 2, 1))

	req := kmsg.NewPtrElectLeadersRequest()
	req.Version = 1
	req.Topics = []kmsg.ElectLeadersRequestTopic{{Topic: "t", Partitions: []int32{0, 1, 7}}}
	resp := h.do(req).(*kmsg.ElectLeadersResponse)
	got := resp.Topics[0].Partitions
	if got[0].ErrorCode != 0 || got[1].ErrorCode != kerr.ElectionNotNeeded.Code || got[2].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("preferred: %+v", got)
	}
	// Errors carry a message (Kafka's ApiError), successes none.
	if got[0].ErrorMessage != nil || got[1].ErrorMessage == nil || deref(got[2].ErrorMessage) != "No such partition as t-7" {
		t.Fatalf("messages %q %q %q", deref(got[0].ErrorMessage), deref(got[1].ErrorMessage), deref(got[2].ErrorMessage))
	}
	if p := h.img().Partition("t", 0); p.Leader != 1 {
		t.Fatalf("t-0 after preferred election %+v", p)
	}

	// Unclean: solo-0 is offline after its only replica was fenced; ISR = [1].
	h.clock.Advance(20e9)
	h.heartbeat(2, h.epoch(2), false, false)
	h.c.fenceExpired(h.ctx)
	req = kmsg.NewPtrElectLeadersRequest()
	req.Version, req.ElectionType = 1, 1
	req.Topics = []kmsg.ElectLeadersRequestTopic{{Topic: "solo", Partitions: []int32{0}}, {Topic: "t", Partitions: []int32{0}}}
	resp = h.do(req).(*kmsg.ElectLeadersResponse)
	if c := resp.Topics[0].Partitions[0].ErrorCode; c != kerr.EligibleLeadersNotAvailable.Code {
		t.Fatalf("unclean with no live replica: %v", kerr.ErrorForCode(c))
	}
	if c := resp.Topics[1].Partitions[0].ErrorCode; c != kerr.ElectionNotNeeded.Code {
		t.Fatalf("unclean on a led partition: %v", kerr.ErrorForCode(c))
	}

	// An unknown election type fails the whole request, as Kafka's
	// ControllerApis does.
	req = kmsg.NewPtrElectLeadersRequest()
	req.Version, req.ElectionType = 1, 2
	req.Topics = []kmsg.ElectLeadersRequestTopic{{Topic: "t", Partitions: []int32{0}}}
	resp = h.do(req).(*kmsg.ElectLeadersResponse)
	if resp.ErrorCode != kerr.InvalidRequest.Code || resp.Topics[0].Partitions[0].ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("election type 2: %+v", resp)
	}

	// Null topics: every partition; those needing nothing are left out.
	req = kmsg.NewPtrElectLeadersRequest()
	req.Version = 2
	resp = h.do(req).(*kmsg.ElectLeadersResponse)
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if rp.ErrorCode == kerr.ElectionNotNeeded.Code {
				t.Fatalf("ELECTION_NOT_NEEDED listed for %s-%d", rt.Topic, rp.Partition)
			}
		}
	}
}

func TestUncleanElectionViaConfigAndPeriodicCheck(t *testing.T) {
	h := newCtlHarness(t)
	h.live(1, 2)
	h.manualTopic("t", []int32{1, 2})
	id := h.img().Topics["t"].ID
	h.do(alterReq(2, 1, h.epoch(1), "", id, h.img().Partition("t", 0), 1)) // ISR [1]
	h.clock.Advance(20e9)
	h.heartbeat(2, h.epoch(2), false, false)
	h.c.fenceExpired(h.ctx)
	if p := h.img().Partition("t", 0); p.Leader != NoLeader {
		t.Fatalf("clean: %+v", p)
	}
	h.c.electOffline(h.ctx)
	if p := h.img().Partition("t", 0); p.Leader != NoLeader {
		t.Fatalf("periodic check elected uncleanly: %+v", p)
	}
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, "t"
	res.Configs = []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: uncleanConfig, Op: kmsg.IncrementalAlterConfigOpSet, Value: ptrTo("true")}}
	req.Resources = append(req.Resources, res)
	if r := h.do(req).(*kmsg.IncrementalAlterConfigsResponse); r.Resources[0].ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(r.Resources[0].ErrorCode))
	}
	h.c.electOffline(h.ctx)
	if p := h.img().Partition("t", 0); p.Leader != 2 || !slices.Equal(p.ISR, []int32{2}) {
		t.Fatalf("unclean by topic config: %+v", p)
	}
}

func TestRebalancePreferredLeaders(t *testing.T) {
	h := newCtlHarness(t)
	h.live(1, 2)
	h.manualTopic("t", []int32{1, 2})
	id := h.img().Topics["t"].ID
	h.clock.Advance(20e9)
	h.heartbeat(2, h.epoch(2), false, false)
	h.c.fenceExpired(h.ctx)
	h.heartbeat(1, h.epoch(1), false, false)
	h.c.rebalance(h.ctx)
	if p := h.img().Partition("t", 0); p.Leader != 2 {
		t.Fatalf("rebalanced to a replica outside the ISR: %+v", p)
	}
	h.do(alterReq(2, 2, h.epoch(2), "", id, h.img().Partition("t", 0), 2, 1))
	h.c.rebalance(h.ctx)
	if p := h.img().Partition("t", 0); p.Leader != 1 {
		t.Fatalf("not rebalanced: %+v", p)
	}
}

// alterReqEpochs is a v3 request whose ISR members carry broker epochs.
func alterReqEpochs(broker int32, epoch int64, id [16]byte, p *Partition, members ...isrMember) *kmsg.AlterPartitionRequest {
	req := alterReq(3, broker, epoch, "", id, p)
	for _, m := range members {
		req.Topics[0].Partitions[0].NewEpochISR = append(req.Topics[0].Partitions[0].NewEpochISR,
			kmsg.AlterPartitionRequestTopicPartitionNewEpochISR{BrokerID: m.id, BrokerEpoch: m.epoch})
	}
	return req
}

// KIP-903 through the handler: broker 3 restarts (a new incarnation, maybe
// with an empty log) while its leader holds an expansion earned by the old
// one's fetches. At v3 the expansion names the old broker epoch and is
// refused with INELIGIBLE_REPLICA, changing nothing; the new epoch, or -1
// (a leader that does not know it), is accepted as Kafka accepts it.
func TestAlterPartitionV3RefusesAStaleMemberEpoch(t *testing.T) {
	h := newCtlHarness(t)
	h.live(1, 2, 3)
	h.manualTopic("t", []int32{1, 2, 3})
	id := h.img().Topics["t"].ID
	oldEpoch := h.epoch(3)
	// Broker 3 dies; its session expires and the new incarnation registers
	// (leaving the ISR), then catches up on metadata and is unfenced.
	h.clock.Advance(11 * time.Second)
	h.heartbeat(1, h.epoch(1), false, false)
	h.heartbeat(2, h.epoch(2), false, false)
	r := h.register(3)
	if hb := h.heartbeat(3, r.BrokerEpoch, false, false); hb.IsFenced || r.BrokerEpoch == oldEpoch {
		t.Fatalf("new incarnation: epoch %d (old %d), heartbeat %+v", r.BrokerEpoch, oldEpoch, hb)
	}
	p := h.img().Partition("t", 0)
	if !slices.Equal(p.ISR, []int32{1, 2}) {
		t.Fatalf("ISR %v after the re-registration, want [1 2]", p.ISR)
	}
	alter := func(epoch3 int64) kmsg.AlterPartitionResponseTopicPartition {
		t.Helper()
		p := h.img().Partition("t", 0)
		req := alterReqEpochs(1, h.epoch(1), id, p, isrMember{1, h.epoch(1)}, isrMember{2, h.epoch(2)}, isrMember{3, epoch3})
		return h.do(req).(*kmsg.AlterPartitionResponse).Topics[0].Partitions[0]
	}
	if sp := alter(oldEpoch); sp.ErrorCode != kerr.IneligibleReplica.Code {
		t.Fatalf("expansion with the old incarnation's epoch: %v, want INELIGIBLE_REPLICA", kerr.ErrorForCode(sp.ErrorCode))
	}
	if after := h.img().Partition("t", 0); !slices.Equal(after.ISR, []int32{1, 2}) || after.PartitionEpoch != p.PartitionEpoch {
		t.Fatalf("a refused expansion changed the partition: %+v", after)
	}
	if sp := alter(r.BrokerEpoch); sp.ErrorCode != 0 || !slices.Equal(sp.ISR, []int32{1, 2, 3}) {
		t.Fatalf("expansion with the current epoch: %v, ISR %v", kerr.ErrorForCode(sp.ErrorCode), sp.ISR)
	}
	p = h.img().Partition("t", 0)
	if sp := h.do(alterReq(3, 1, h.epoch(1), "", id, p, 1, 2)).(*kmsg.AlterPartitionResponse).Topics[0].Partitions[0]; sp.ErrorCode != 0 {
		t.Fatalf("shrink: %v", kerr.ErrorForCode(sp.ErrorCode))
	}
	if sp := alter(-1); sp.ErrorCode != 0 || !slices.Equal(sp.ISR, []int32{1, 2, 3}) {
		t.Fatalf("expansion with epoch -1 (unknown): %v, ISR %v", kerr.ErrorForCode(sp.ErrorCode), sp.ISR)
	}
}

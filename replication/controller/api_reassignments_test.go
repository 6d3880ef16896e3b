package controller

import (
	"bytes"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Partition reassignment, KIP-455 as Kafka's KRaft controller does it
// (ReplicationControlManager.alterPartitionReassignments,
// PartitionReassignmentReplicas, PartitionChangeBuilder).

type reassignment struct {
	topic     string
	partition int32
	replicas  []int32 // nil: cancel
}

func reassignReq(rs ...reassignment) *kmsg.AlterPartitionAssignmentsRequest {
	req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	for _, r := range rs {
		i := slices.IndexFunc(req.Topics, func(t kmsg.AlterPartitionAssignmentsRequestTopic) bool { return t.Topic == r.topic })
		if i < 0 {
			rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
			rt.Topic = r.topic
			req.Topics = append(req.Topics, rt)
			i = len(req.Topics) - 1
		}
		rp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
		rp.Partition, rp.Replicas = r.partition, r.replicas
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
	}
	return req
}

// reassign sends one request and returns each partition's error, in order.
func (h *ctlHarness) reassign(rs ...reassignment) []error {
	h.t.Helper()
	resp := h.do(reassignReq(rs...)).(*kmsg.AlterPartitionAssignmentsResponse)
	if resp.ErrorCode != 0 {
		h.t.Fatalf("top-level error %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	var out []error
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			out = append(out, kerr.ErrorForCode(rp.ErrorCode))
		}
	}
	return out
}

func (h *ctlHarness) mustReassign(rs ...reassignment) {
	h.t.Helper()
	for i, err := range h.reassign(rs...) {
		if err != nil {
			h.t.Fatalf("reassignment %d (%+v): %v", i, rs[i], err)
		}
	}
}

func (h *ctlHarness) list(topics ...kmsg.ListPartitionReassignmentsRequestTopic) []kmsg.ListPartitionReassignmentsResponseTopic {
	h.t.Helper()
	req := kmsg.NewPtrListPartitionReassignmentsRequest()
	req.Topics = topics
	resp := h.do(req).(*kmsg.ListPartitionReassignmentsResponse)
	if resp.ErrorCode != 0 {
		h.t.Fatalf("list: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	return resp.Topics
}

// alterISR sends the leader's AlterPartition (v3) for t-0 and returns the
// partition's answer.
func (h *ctlHarness) alterISR(topic string, isr ...int32) kmsg.AlterPartitionResponseTopicPartition {
	h.t.Helper()
	p := h.img().Partition(topic, 0)
	resp := h.do(alterReq(3, p.Leader, h.epoch(p.Leader), "", h.img().Topics[topic].ID, p, isr...)).(*kmsg.AlterPartitionResponse)
	if resp.ErrorCode != 0 {
		h.t.Fatalf("AlterPartition: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	return resp.Topics[0].Partitions[0]
}

type wantPartition struct {
	replicas, isr, adding, removing []int32
	leader                          int32
}

func checkPartition(t *testing.T, p *Partition, w wantPartition) {
	t.Helper()
	if !slices.Equal(p.Replicas, w.replicas) || !slices.Equal(p.ISR, w.isr) || p.Leader != w.leader ||
		!slices.Equal(p.AddingReplicas, w.adding) || !slices.Equal(p.RemovingReplicas, w.removing) {
		t.Fatalf("partition: replicas %v isr %v leader %d adding %v removing %v; want replicas %v isr %v leader %d adding %v removing %v",
			p.Replicas, p.ISR, p.Leader, p.AddingReplicas, p.RemovingReplicas, w.replicas, w.isr, w.leader, w.adding, w.removing)
	}
}

// {1,2,3} -> {2,3,4}: the replicas grow to [2 3 4 1] with 4 adding and 1
// removing; when the leader adds 4 to the ISR the reassignment completes,
// the leader (1) is removed and 2, first of the target in the ISR, leads.
func TestReassignMovesLeaderOff(t *testing.T) {
	h := newCtlHarness(t)
	h.live(1, 2, 3, 4)
	h.manualTopic("t", []int32{1, 2, 3})
	before := h.img().Partition("t", 0)

	h.mustReassign(reassignment{"t", 0, []int32{2, 3, 4}})
	p := h.img().Partition("t", 0)
	checkPartition(t, p, wantPartition{replicas: []int32{2, 3, 4, 1}, isr: []int32{1, 2, 3}, adding: []int32{4}, removing: []int32{1}, leader: 1})
	if !p.Reassigning() || p.PartitionEpoch != before.PartitionEpoch+1 || p.LeaderEpoch != before.LeaderEpoch {
		t.Fatalf("epochs after start: leader %d partition %d (before %d/%d)", p.LeaderEpoch, p.PartitionEpoch, before.LeaderEpoch, before.PartitionEpoch)
	}
	got := h.list()
	if len(got) != 1 || got[0].Topic != "t" || len(got[0].Partitions) != 1 {
		t.Fatalf("list %+v", got)
	}
	if lp := got[0].Partitions[0]; lp.Partition != 0 || !slices.Equal(lp.Replicas, []int32{2, 3, 4, 1}) ||
		!slices.Equal(lp.AddingReplicas, []int32{4}) || !slices.Equal(lp.RemovingReplicas, []int32{1}) {
		t.Fatalf("listed %+v", lp)
	}

	// The adding replica joins the ISR: not INELIGIBLE_REPLICA, and the
	// reassignment completes in the same change.
	sp := h.alterISR("t", 1, 2, 3, 4)
	if sp.ErrorCode != kerr.NewLeaderElected.Code {
		t.Fatalf("AlterPartition completing the move answered %v", kerr.ErrorForCode(sp.ErrorCode))
	}
	after := h.img().Partition("t", 0)
	checkPartition(t, after, wantPartition{replicas: []int32{2, 3, 4}, isr: []int32{2, 3, 4}, leader: 2})
	if after.LeaderEpoch != p.LeaderEpoch+1 || after.PartitionEpoch != p.PartitionEpoch+1 {
		t.Fatalf("epochs after completion %d/%d, want %d/%d", after.LeaderEpoch, after.PartitionEpoch, p.LeaderEpoch+1, p.PartitionEpoch+1)
	}
	if got := h.list(); len(got) != 0 {
		t.Fatalf("list after completion %+v", got)
	}
}

// The leader stays when it is kept; the leader epoch is bumped all the same
// because a replica left (Kafka's triggerLeaderEpochBumpForReplicaReassignmentIfNeeded).
func TestReassignLeaderKeptBumpsLeaderEpoch(t *testing.T) {
	h := newCtlHarness(t)
	h.live(1, 2, 3, 4)
	h.manualTopic("t", []int32{1, 2, 3})
	h.mustReassign(reassignment{"t", 0, []int32{1, 2, 4}})
	p := h.img().Partition("t", 0)
	checkPartition(t, p, wantPartition{replicas: []int32{1, 2, 4, 3}, isr: []int32{1, 2, 3}, adding: []int32{4}, removing: []int32{3}, leader: 1})
	sp := h.alterISR("t", 1, 2, 3, 4)
	after := h.img().Partition("t", 0)
	checkPartition(t, after, wantPartition{replicas: []int32{1, 2, 4}, isr: []int32{1, 2, 4}, leader: 1})
	if after.LeaderEpoch != p.LeaderEpoch+1 || after.PartitionEpoch != p.PartitionEpoch+1 {
		t.Fatalf("epochs %d/%d, want %d/%d", after.LeaderEpoch, after.PartitionEpoch, p.LeaderEpoch+1, p.PartitionEpoch+1)
	}
	if sp.ErrorCode != 0 || sp.LeaderID != 1 || sp.LeaderEpoch != after.LeaderEpoch || !slices.Equal(sp.ISR, []int32{1, 2, 4}) {
		t.Fatalf("AlterPartition answer %+v", sp)
	}
}

// ISR changes keep working during a reassignment; it completes only once
// every target replica is in the ISR (Kafka's maybeCompleteReassignment
// checks the whole target, not just the adding replicas).
func TestReassignWaitsForWholeTargetInISR(t *testing.T) {
	h := newCtlHarness(t)
	h.live(1, 2, 3, 4)
	h.manualTopic("t", []int32{1, 2, 3})
	h.mustReassign(reassignment{"t", 0, []int32{1, 3, 4}})
	if sp := h.alterISR("t", 1, 2); sp.ErrorCode != 0 { // 3 falls behind
		t.Fatalf("shrink: %v", kerr.ErrorForCode(sp.ErrorCode))
	}
	if sp := h.alterISR("t", 1, 2, 4); sp.ErrorCode != 0 { // 4 caught up, 3 still out
		t.Fatalf("expand: %v", kerr.ErrorForCode(sp.ErrorCode))
	}
	checkPartition(t, h.img().Partition("t", 0),
		wantPartition{replicas: []int32{1, 3, 4, 2}, isr: []int32{1, 2, 4}, adding: []int32{4}, removing: []int32{2}, leader: 1})
	if sp := h.alterISR("t", 1, 2, 4, 3); sp.ErrorCode != 0 || !slices.Equal(sp.ISR, []int32{1, 4, 3}) {
		t.Fatalf("completing expand: %v %+v", kerr.ErrorForCode(sp.ErrorCode), sp)
	}
	checkPartition(t, h.img().Partition("t", 0), wantPartition{replicas: []int32{1, 3, 4}, isr: []int32{1, 4, 3}, leader: 1})
}

// Targets the ISR already covers complete at once: a reorder changes only
// the replica order (no epoch bump of the leader), a shrink drops replicas
// and re-elects when the leader goes.
func TestReassignCompletesAtOnce(t *testing.T) {
	h := newCtlHarness(t)
	h.live(1, 2, 3)
	h.manualTopic("t", []int32{1, 2, 3}, []int32{1, 2, 3})
	p0, p1 := h.img().Partition("t", 0), h.img().Partition("t", 1)
	h.mustReassign(reassignment{"t", 0, []int32{3, 2, 1}}, reassignment{"t", 1, []int32{2, 3}})
	a0, a1 := h.img().Partition("t", 0), h.img().Partition("t", 1)
	checkPartition(t, a0, wantPartition{replicas: []int32{3, 2, 1}, isr: []int32{1, 2, 3}, leader: 1})
	if a0.LeaderEpoch != p0.LeaderEpoch || a0.PartitionEpoch != p0.PartitionEpoch+1 {
		t.Fatalf("reorder epochs %d/%d", a0.LeaderEpoch, a0.PartitionEpoch)
	}
	checkPartition(t, a1, wantPartition{replicas: []int32{2, 3}, isr: []int32{2, 3}, leader: 2})
	if a1.LeaderEpoch != p1.LeaderEpoch+1 || a1.PartitionEpoch != p1.PartitionEpoch+1 {
		t.Fatalf("shrink epochs %d/%d", a1.LeaderEpoch, a1.PartitionEpoch)
	}
	// The same target again changes nothing and commits nothing.
	idx := h.img().AppliedIndex
	h.mustReassign(reassignment{"t", 1, []int32{2, 3}})
	if h.img().AppliedIndex != idx {
		t.Fatal("a no-op reassignment committed an entry")
	}
}

// Cancelling takes the adding replicas out of the replicas and the ISR; the
// replicas keep their current order (target survivors first), as in Kafka.
func TestReassignCancel(t *testing.T) {
	h := newCtlHarness(t)
	h.live(1, 2, 3, 4, 5, 6)
	h.manualTopic("t", []int32{1, 2, 3}, []int32{1, 2, 3})
	h.mustReassign(reassignment{"t", 0, []int32{4, 5, 6}}, reassignment{"t", 1, []int32{2, 3, 4}})
	checkPartition(t, h.img().Partition("t", 0),
		wantPartition{replicas: []int32{4, 5, 6, 1, 2, 3}, isr: []int32{1, 2, 3}, adding: []int32{4, 5, 6}, removing: []int32{1, 2, 3}, leader: 1})
	h.alterISR("t", 1, 2, 3, 4) // one of three adding replicas caught up
	p := h.img().Partition("t", 0)
	checkPartition(t, p,
		wantPartition{replicas: []int32{4, 5, 6, 1, 2, 3}, isr: []int32{1, 2, 3, 4}, adding: []int32{4, 5, 6}, removing: []int32{1, 2, 3}, leader: 1})

	h.mustReassign(reassignment{"t", 0, nil}, reassignment{"t", 1, nil})
	after := h.img().Partition("t", 0)
	checkPartition(t, after, wantPartition{replicas: []int32{1, 2, 3}, isr: []int32{1, 2, 3}, leader: 1})
	if after.PartitionEpoch != p.PartitionEpoch+1 || after.LeaderEpoch != p.LeaderEpoch+1 {
		t.Fatalf("cancel epochs %d/%d, want %d/%d", after.LeaderEpoch, after.PartitionEpoch, p.LeaderEpoch+1, p.PartitionEpoch+1)
	}
	checkPartition(t, h.img().Partition("t", 1), wantPartition{replicas: []int32{2, 3, 1}, isr: []int32{1, 2, 3}, leader: 1})
	if got := h.list(); len(got) != 0 {
		t.Fatalf("list after cancel %+v", got)
	}
	if errs := h.reassign(reassignment{"t", 0, nil}); errs[0] != kerr.NoReassignmentInProgress {
		t.Fatalf("cancel of nothing: %v", errs[0])
	}
}

// A revert whose ISR would hold only adding replicas needs an unclean
// election: refused unless unclean.leader.election.enable allows it.
func TestReassignCancelNeedingUncleanElection(t *testing.T) {
	h := newCtlHarness(t)
	h.live(1, 2, 3)
	h.manualTopic("t", []int32{1, 2})
	h.mustReassign(reassignment{"t", 0, []int32{2, 3}})
	h.alterISR("t", 1) // 2 falls behind, then 3 catches up
	h.alterISR("t", 1, 3)
	checkPartition(t, h.img().Partition("t", 0), wantPartition{replicas: []int32{2, 3, 1}, isr: []int32{1, 3}, adding: []int32{3}, removing: []int32{1}, leader: 1})
	// Fence 1: 3 leads, the ISR is [3], all of it being added.
	h.clock.Advance(20e9)
	h.heartbeat(2, h.epoch(2), false, false)
	h.heartbeat(3, h.epoch(3), false, false)
	h.c.fenceExpired(h.ctx)
	checkPartition(t, h.img().Partition("t", 0), wantPartition{replicas: []int32{2, 3, 1}, isr: []int32{3}, adding: []int32{3}, removing: []int32{1}, leader: 3})

	errs := h.reassign(reassignment{"t", 0, nil})
	if errs[0] != kerr.InvalidReplicaAssignment {
		t.Fatalf("unclean revert without unclean election: %v", errs[0])
	}
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, "t"
	res.Configs = []kmsg.IncrementalAlterConfigsRequestResourceConfig{incOp(uncleanConfig, kmsg.IncrementalAlterConfigOpSet, ptrTo("true"))}
	req.Resources = append(req.Resources, res)
	h.do(req)
	h.mustReassign(reassignment{"t", 0, nil})
	// Back to [2 1] with the ISR [2]: 2 is live, so it leads.
	checkPartition(t, h.img().Partition("t", 0), wantPartition{replicas: []int32{2, 1}, isr: []int32{2}, leader: 2})
}

func TestReassignErrors(t *testing.T) {
	h := newCtlHarness(t)
	h.live(1, 2, 3, 4)
	h.manualTopic("t", []int32{1, 2, 3})
	idx := h.img().AppliedIndex
	errs := h.reassign(
		reassignment{"nope", 0, []int32{1}},
		reassignment{"t", 5, []int32{1}},
		reassignment{"t", -1, []int32{1}},
		reassignment{"t", 0, []int32{}},
		reassignment{"t", 0, []int32{1, 2, 2}},
	)
	want := []error{kerr.UnknownTopicOrPartition, kerr.UnknownTopicOrPartition, kerr.UnknownTopicOrPartition,
		kerr.InvalidRequest, kerr.InvalidRequest} // t-0 twice: both refused
	if !slices.Equal(errs, want) {
		t.Fatalf("got %v, want %v", errs, want)
	}
	errs = h.reassign(reassignment{"t", 0, []int32{}})
	errs = append(errs, h.reassign(reassignment{"t", 0, []int32{1, 2, 2}})...)
	errs = append(errs, h.reassign(reassignment{"t", 0, []int32{1, 2, 9}})...)
	errs = append(errs, h.reassign(reassignment{"t", 0, nil})...)
	want = []error{kerr.InvalidReplicaAssignment, kerr.InvalidReplicaAssignment, kerr.InvalidReplicaAssignment, kerr.NoReassignmentInProgress}
	if !slices.Equal(errs, want) {
		t.Fatalf("got %v, want %v", errs, want)
	}
	if h.img().AppliedIndex != idx {
		t.Fatal("refused reassignments committed an entry")
	}
	resp := h.do(reassignReq(reassignment{"t", 0, []int32{1, 2, 9}})).(*kmsg.AlterPartitionAssignmentsResponse)
	if m := deref(resp.Topics[0].Partitions[0].ErrorMessage); !strings.Contains(m, "broker 9") {
		t.Fatalf("message %q", m)
	}

	// A fenced broker is registered: it may be a target (Kafka checks
	// registration, not liveness); it just cannot join the ISR.
	h.clock.Advance(20e9)
	for _, id := range []int32{1, 2, 3} {
		h.heartbeat(id, h.epoch(id), false, false)
	}
	h.c.fenceExpired(h.ctx)
	h.mustReassign(reassignment{"t", 0, []int32{1, 2, 4}})
	p := h.img().Partition("t", 0)
	resp2 := h.do(alterReq(3, 1, h.epoch(1), "", h.img().Topics["t"].ID, p, 1, 2, 3, 4)).(*kmsg.AlterPartitionResponse)
	if c := resp2.Topics[0].Partitions[0].ErrorCode; c != kerr.IneligibleReplica.Code {
		t.Fatalf("fenced adding replica into the ISR: %v", kerr.ErrorForCode(c))
	}
}

func TestListPartitionReassignments(t *testing.T) {
	h := newCtlHarness(t)
	h.live(1, 2, 3, 4)
	h.manualTopic("a", []int32{1, 2}, []int32{2, 3}, []int32{3, 1})
	h.manualTopic("b", []int32{1, 2})
	if got := h.list(); len(got) != 0 {
		t.Fatalf("nothing in progress: %+v", got)
	}
	h.mustReassign(reassignment{"a", 2, []int32{4, 1}}, reassignment{"b", 0, []int32{3, 4}}, reassignment{"a", 0, []int32{1, 4}})
	got := h.list()
	if len(got) != 2 || got[0].Topic != "a" || got[1].Topic != "b" || len(got[0].Partitions) != 2 ||
		got[0].Partitions[0].Partition != 0 || got[0].Partitions[1].Partition != 2 {
		t.Fatalf("list all %+v", got)
	}
	if lp := got[1].Partitions[0]; !slices.Equal(lp.Replicas, []int32{3, 4, 1, 2}) ||
		!slices.Equal(lp.AddingReplicas, []int32{3, 4}) || !slices.Equal(lp.RemovingReplicas, []int32{1, 2}) {
		t.Fatalf("b-0 %+v", lp)
	}
	// Named partitions: unknown topics and partitions and partitions not
	// being reassigned are left out.
	got = h.list(
		kmsg.ListPartitionReassignmentsRequestTopic{Topic: "a", Partitions: []int32{2, 1, 7}},
		kmsg.ListPartitionReassignmentsRequestTopic{Topic: "nope", Partitions: []int32{0}},
		kmsg.ListPartitionReassignmentsRequestTopic{Topic: "b", Partitions: []int32{}},
	)
	if len(got) != 1 || got[0].Topic != "a" || len(got[0].Partitions) != 1 || got[0].Partitions[0].Partition != 2 {
		t.Fatalf("list named %+v", got)
	}
	// a-2 gains 4 without losing 3's removal: [4 1 3], adding [4], removing [3].
	if lp := got[0].Partitions[0]; !slices.Equal(lp.Replicas, []int32{4, 1, 3}) || !slices.Equal(lp.AddingReplicas, []int32{4}) ||
		!slices.Equal(lp.RemovingReplicas, []int32{3}) {
		t.Fatalf("a-2 %+v", lp)
	}
}

// A new target while one is in progress replaces it, computed against the
// current merged replicas.
func TestReassignReplacesReassignmentInProgress(t *testing.T) {
	h := newCtlHarness(t)
	h.live(1, 2, 3, 4, 5)
	h.manualTopic("t", []int32{1, 2, 3})
	h.mustReassign(reassignment{"t", 0, []int32{4, 5, 3}})
	h.mustReassign(reassignment{"t", 0, []int32{1, 2, 4}})
	checkPartition(t, h.img().Partition("t", 0),
		wantPartition{replicas: []int32{1, 2, 4, 3, 5}, isr: []int32{1, 2, 3}, removing: []int32{3, 5}, leader: 1})
	h.alterISR("t", 1, 2, 3, 4)
	checkPartition(t, h.img().Partition("t", 0), wantPartition{replicas: []int32{1, 2, 4}, isr: []int32{1, 2, 4}, leader: 1})
}

// Other elections see the reassignment too: a preferred election during one
// prefers the target's first replica, and CreatePartitions uses the
// target's replication factor.
func TestReassignWithElectLeadersAndCreatePartitions(t *testing.T) {
	h := newCtlHarness(t)
	h.live(1, 2, 3, 4)
	h.manualTopic("t", []int32{1, 2, 3})
	h.mustReassign(reassignment{"t", 0, []int32{2, 4, 3}})
	req := kmsg.NewPtrElectLeadersRequest()
	req.Version = 1
	req.Topics = []kmsg.ElectLeadersRequestTopic{{Topic: "t", Partitions: []int32{0}}}
	if r := h.do(req).(*kmsg.ElectLeadersResponse); r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("preferred election: %v", kerr.ErrorForCode(r.Topics[0].Partitions[0].ErrorCode))
	}
	checkPartition(t, h.img().Partition("t", 0),
		wantPartition{replicas: []int32{2, 4, 3, 1}, isr: []int32{1, 2, 3}, adding: []int32{4}, removing: []int32{1}, leader: 2})

	cp := kmsg.NewPtrCreatePartitionsRequest()
	rt := kmsg.NewCreatePartitionsRequestTopic()
	rt.Topic, rt.Count = "t", 2
	cp.Topics = append(cp.Topics, rt)
	if r := h.do(cp).(*kmsg.CreatePartitionsResponse); r.Topics[0].ErrorCode != 0 {
		t.Fatalf("create partitions: %v", kerr.ErrorForCode(r.Topics[0].ErrorCode))
	}
	if p := h.img().Partition("t", 1); len(p.Replicas) != 3 || p.Reassigning() {
		t.Fatalf("new partition %+v", p)
	}
}

// The reassignment fields survive snapshots, and records carrying them are
// version 2 so that older nodes refuse rather than drop them.
func TestReassignmentPersistence(t *testing.T) {
	h := newCtlHarness(t)
	h.live(1, 2, 3, 4)
	h.manualTopic("t", []int32{1, 2, 3})
	h.mustReassign(reassignment{"t", 0, []int32{2, 3, 4}})
	var buf bytes.Buffer
	if err := encodeSnapshot(&buf, h.img()); err != nil {
		t.Fatal(err)
	}
	img, err := decodeSnapshot(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := img.Partition("t", 0), h.img().Partition("t", 0); !reflect.DeepEqual(got, want) {
		t.Fatalf("after snapshot %+v, want %+v", got, want)
	}

	rec := &partitionChangeRecord{Topic: "t", TopicID: uuid{1}, Leader: 1, ISR: []int32{1}, Replicas: []int32{1, 2}, Adding: []int32{2}}
	data, err := encodeEntry(rec)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(data), `{"type":"PartitionChange","v":2,`) {
		t.Fatalf("encoding %s", data)
	}
	out, err := decodeEntry(data)
	if err != nil || !reflect.DeepEqual(out, []record{rec}) {
		t.Fatalf("round trip %v %+v", err, out)
	}
	if _, err := decodeEntry([]byte(`{"type":"PartitionChange","v":4,"topic":"t"}`)); err == nil {
		t.Fatal("PartitionChange v4 accepted")
	}
}

// In-process cluster of four nodes (real Raft): a reassignment from
// {1,2,3} to {2,3,4}, sent to a node that is not the active controller,
// starts on every node, and completes once the leader (broker 1, simulated)
// reports broker 4 in the ISR.
func TestReassignmentInCluster(t *testing.T) {
	c := startCluster(t, 4)
	active := c.waitActive()
	via := c.nonActive()

	// The new APIs answer NOT_CONTROLLER off the active controller, so
	// that Forward retries elsewhere.
	resp, err := via.Handle(ctxT(t, 5*time.Second), reassignReq(reassignment{"moves", 0, []int32{2, 3, 4}}))
	if err != nil || !misdirected(resp) {
		t.Fatalf("non-active node: %v %+v", err, resp)
	}
	lresp, err := via.Handle(ctxT(t, 5*time.Second), kmsg.NewPtrListPartitionReassignmentsRequest())
	if err != nil || !misdirected(lresp) {
		t.Fatalf("non-active node list: %v %+v", err, lresp)
	}

	create := kmsg.NewPtrCreateTopicsRequest()
	create.Version = 7
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "moves", -1, -1
	rt.ReplicaAssignment = []kmsg.CreateTopicsRequestTopicReplicaAssignment{{Partition: 0, Replicas: []int32{1, 2, 3}}}
	create.Topics = append(create.Topics, rt)
	cr, err := active.Forward(ctxT(t, 10*time.Second), create)
	if err != nil || cr.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode != 0 {
		t.Fatalf("create: %v %+v", err, cr)
	}

	resp, err = via.Forward(ctxT(t, 10*time.Second), reassignReq(reassignment{"moves", 0, []int32{2, 3, 4}}))
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.(*kmsg.AlterPartitionAssignmentsResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("reassign: %v", kerr.ErrorForCode(code))
	}
	c.converged("reassignment started on every node", func(img *Image) bool {
		p := img.Partition("moves", 0)
		return p != nil && slices.Equal(p.Replicas, []int32{2, 3, 4, 1}) && slices.Equal(p.AddingReplicas, []int32{4}) &&
			slices.Equal(p.RemovingReplicas, []int32{1}) && p.Leader == 1
	})
	lresp, err = c.nodes[4].Forward(ctxT(t, 10*time.Second), kmsg.NewPtrListPartitionReassignmentsRequest())
	if err != nil {
		t.Fatal(err)
	}
	if ts := lresp.(*kmsg.ListPartitionReassignmentsResponse).Topics; len(ts) != 1 || ts[0].Topic != "moves" ||
		!slices.Equal(ts[0].Partitions[0].AddingReplicas, []int32{4}) {
		t.Fatalf("listed %+v", ts)
	}

	// Broker 4 caught up: the leader adds it to the ISR.
	n1 := c.nodes[1]
	img := n1.Image()
	p := img.Partition("moves", 0)
	ar, err := n1.Forward(ctxT(t, 10*time.Second), alterReq(3, 1, n1.BrokerEpoch(), "", img.Topics["moves"].ID, p, 1, 2, 3, 4))
	if err != nil {
		t.Fatal(err)
	}
	apr := ar.(*kmsg.AlterPartitionResponse)
	if apr.ErrorCode != 0 || apr.Topics[0].Partitions[0].ErrorCode != kerr.NewLeaderElected.Code {
		t.Fatalf("AlterPartition: %v %+v", kerr.ErrorForCode(apr.ErrorCode), apr.Topics)
	}
	c.converged("reassignment completed on every node", func(img *Image) bool {
		q := img.Partition("moves", 0)
		return slices.Equal(q.Replicas, []int32{2, 3, 4}) && slices.Equal(q.ISR, []int32{2, 3, 4}) && q.Leader == 2 &&
			!q.Reassigning() && q.LeaderEpoch == p.LeaderEpoch+1
	})
	lresp, err = via.Forward(ctxT(t, 10*time.Second), kmsg.NewPtrListPartitionReassignmentsRequest())
	if err != nil || len(lresp.(*kmsg.ListPartitionReassignmentsResponse).Topics) != 0 {
		t.Fatalf("list after completion: %v %+v", err, lresp)
	}
}

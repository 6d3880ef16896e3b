package share

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A member joins, the group initializes the share state of its topic and
// assigns the partitions at the next heartbeat (Kafka 4.1+).
func TestJoinInitializeAssign(t *testing.T) {
	e := newEnv(t)
	r := e.heartbeat("g", "m1", 0, "foo")
	if r.ErrorCode != 0 || r.MemberEpoch != 1 || *r.MemberID != "m1" || r.HeartbeatIntervalMillis != 5000 {
		t.Fatalf("join: %+v", r)
	}
	if a := assigned(r); a == nil || len(a) != 0 {
		t.Fatalf("join assignment %v: nothing is initialized yet", a)
	}
	e.waitInitialized("g", idFoo, 3)
	r = e.heartbeat("g", "m1", 1)
	if r.ErrorCode != 0 || r.MemberEpoch != 2 || !reflect.DeepEqual(assigned(r), assignment{idFoo: {0, 1, 2}}) {
		t.Fatalf("after initialization: %+v %v", r, assigned(r))
	}
	// The share coordinator holds the state at the group epoch of the join.
	sum := e.state.ReadShareGroupStateSummary(context.Background(), &kmsg.ReadShareGroupStateSummaryRequest{GroupID: "g",
		Topics: []kmsg.ReadShareGroupStateSummaryRequestTopic{{TopicID: idFoo, Partitions: []kmsg.ReadShareGroupStateSummaryRequestTopicPartition{{Partition: 2}}}}})
	if p := sum.Topics[0].Partitions[0]; p.ErrorCode != 0 || p.StateEpoch != 1 || p.StartOffset != -1 {
		t.Fatalf("share state %+v", p)
	}
	// A second member: each gets some of the three partitions.
	r2 := e.heartbeat("g", "m2", 0, "foo")
	if r2.MemberEpoch != 3 {
		t.Fatalf("second join: %+v", r2)
	}
	r = e.heartbeat("g", "m1", 2)
	a1, a2 := assigned(r), assigned(r2)
	if len(a1[idFoo])+len(a2[idFoo]) != 3 || r.MemberEpoch != 3 {
		t.Fatalf("split %v %v (epoch %d)", a1, a2, r.MemberEpoch)
	}
	// Heartbeats without changes carry no assignment.
	if r = e.heartbeat("g", "m1", 3); r.Assignment != nil || r.MemberEpoch != 3 {
		t.Fatalf("steady heartbeat %+v", r)
	}
	// The metrics' view of the group.
	if got := e.c.Summaries(); !reflect.DeepEqual(got, []GroupSummary{{ID: "g", State: "Stable", Members: 2}}) {
		t.Fatalf("summaries %+v", got)
	}
}

func TestHeartbeatValidation(t *testing.T) {
	e := newEnv(t)
	empty := ""
	cases := []struct {
		name string
		mod  func(*kmsg.ShareGroupHeartbeatRequest)
		want int16
	}{
		{"no member id", func(r *kmsg.ShareGroupHeartbeatRequest) { r.MemberID = "" }, kerr.InvalidRequest.Code},
		{"no group id", func(r *kmsg.ShareGroupHeartbeatRequest) { r.GroupID = "" }, kerr.InvalidRequest.Code},
		{"empty rack", func(r *kmsg.ShareGroupHeartbeatRequest) { r.RackID = &empty }, kerr.InvalidRequest.Code},
		{"join without topics", func(r *kmsg.ShareGroupHeartbeatRequest) { r.SubscribedTopicNames = nil }, kerr.InvalidRequest.Code},
		{"join with empty topics", func(r *kmsg.ShareGroupHeartbeatRequest) { r.SubscribedTopicNames = []string{} }, kerr.InvalidRequest.Code},
		{"epoch -2", func(r *kmsg.ShareGroupHeartbeatRequest) { r.MemberEpoch = -2 }, kerr.InvalidRequest.Code},
		{"unknown group", func(r *kmsg.ShareGroupHeartbeatRequest) { r.MemberEpoch = 5 }, kerr.GroupIDNotFound.Code},
		{"leave of unknown group", func(r *kmsg.ShareGroupHeartbeatRequest) { r.MemberEpoch = -1 }, kerr.GroupIDNotFound.Code},
		{"a consumer group", func(r *kmsg.ShareGroupHeartbeatRequest) { r.GroupID = "cg" }, kerr.GroupIDNotFound.Code},
	}
	e.other["cg"] = "consumer"
	for _, c := range cases {
		req := kmsg.NewPtrShareGroupHeartbeatRequest()
		req.GroupID, req.MemberID, req.SubscribedTopicNames = "g", "m", []string{"foo"}
		c.mod(req)
		if r := e.c.ShareGroupHeartbeat(context.Background(), client, req); r.ErrorCode != c.want || r.ErrorMessage == nil {
			t.Errorf("%s: code %d (%v), want %d", c.name, r.ErrorCode, r.ErrorMessage, c.want)
		}
	}
	if groups, _ := e.c.ListGroups(nil, nil); len(groups) != 0 {
		t.Fatalf("failed requests left groups: %+v", groups)
	}
}

// Member epochs as Kafka's throwIfShareGroupMemberEpochIsInvalid: the
// current or the previous epoch is accepted, anything else fenced; epoch 0
// rejoins; an unknown member with an epoch is UNKNOWN_MEMBER_ID.
func TestMemberEpochs(t *testing.T) {
	e := newEnv(t)
	e.heartbeat("g", "m1", 0, "foo")
	e.waitInitialized("g", idFoo, 3)
	r := e.heartbeat("g", "m1", 1) // -> 2 (assignment); previous 1
	if r.MemberEpoch != 2 {
		t.Fatalf("%+v", r)
	}
	cases := []struct {
		member string
		epoch  int32
		want   int16
	}{
		{"m1", 3, kerr.FencedMemberEpoch.Code},
		{"m1", 1, 0}, // the previous epoch: its response may have been lost
		{"m1", 2, 0},
		{"x", 2, kerr.UnknownMemberID.Code},
		{"x", -1, kerr.UnknownMemberID.Code},
	}
	for _, c := range cases {
		if r := e.heartbeat("g", c.member, c.epoch); r.ErrorCode != c.want {
			t.Errorf("%s@%d: code %d, want %d", c.member, c.epoch, r.ErrorCode, c.want)
		}
	}
	e.heartbeat("g", "m2", 0, "foo") // -> epoch 3, m1 is still at 2 (previous 1)
	e.heartbeat("g", "m1", 2)        // -> 3, previous 2
	if r := e.heartbeat("g", "m1", 1); r.ErrorCode != kerr.FencedMemberEpoch.Code {
		t.Fatalf("epoch before the previous: %d", r.ErrorCode)
	}
	// Rejoining with epoch 0 gets the current state back (Kafka's
	// testShareGroupMemberCanRejoinWithEpochZero).
	r = e.heartbeat("g", "m1", 0, "foo")
	if r.ErrorCode != 0 || r.MemberEpoch != 3 || r.Assignment == nil {
		t.Fatalf("rejoin %+v", r)
	}
}

// Leaving and session expiry write Kafka's records: the member's three
// tombstones, the bumped group epoch and the new target assignment.
func TestLeaveAndSessionTimeout(t *testing.T) {
	e := newEnv(t)
	e.heartbeat("g", "m1", 0, "foo")
	e.waitInitialized("g", idFoo, 3)
	e.heartbeat("g", "m2", 0, "foo")
	before := e.log.Len()
	r := e.heartbeat("g", "m2", -1)
	if r.ErrorCode != 0 || r.MemberEpoch != -1 {
		t.Fatalf("leave %+v", r)
	}
	var types []int16
	for _, rec := range e.log.Records()[before:] {
		k, _ := decodeKey(rec.Key)
		if rec.Value == nil {
			types = append(types, -k.typ)
		} else {
			types = append(types, k.typ)
		}
	}
	want := []int16{-typeCurrentMemberAssign, -typeTargetAssignmentMember, -typeMemberMetadata, typeGroupMetadata, typeTargetAssignmentMember, typeTargetAssignmentMeta}
	if !reflect.DeepEqual(types, want) {
		t.Fatalf("leave records %v, want %v", types, want)
	}
	// m1 (still at epoch 1) gets all three partitions at its next heartbeat.
	r = e.heartbeat("g", "m1", 1)
	if r.MemberEpoch != 3 || !reflect.DeepEqual(assigned(r), assignment{idFoo: {0, 1, 2}}) {
		t.Fatalf("after leave %v", assigned(r))
	}
	// m1 stops heartbeating: fenced after share.session.timeout.ms.
	e.clock.Advance(45 * time.Second)
	if r := e.heartbeat("g", "m1", r.MemberEpoch); r.ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("after session timeout: %d", r.ErrorCode)
	}
	if len(e.left) != 2 {
		t.Fatalf("MemberLeft %v", e.left)
	}
	if groups, _ := e.c.ListGroups(nil, nil); len(groups) != 1 || groups[0].GroupState != "Empty" {
		t.Fatalf("list %+v", groups)
	}
}

func TestGroupMaxSize(t *testing.T) {
	e := newEnv(t)
	e.c.opts.MaxGroupSize = 2
	e.heartbeat("g", "a", 0, "foo")
	e.heartbeat("g", "b", 0, "foo")
	if r := e.heartbeat("g", "c", 0, "foo"); r.ErrorCode != kerr.GroupMaxSizeReached.Code {
		t.Fatalf("third member: %d", r.ErrorCode)
	}
	if r := e.heartbeat("g", "a", 0, "foo"); r.ErrorCode != 0 {
		t.Fatalf("a member of a full group rejoins: %d", r.ErrorCode)
	}
}

// A new coordinator loads the same group from the log, with the session
// timeouts armed again.
func TestFailoverReload(t *testing.T) {
	e := newEnv(t)
	e.heartbeat("g", "m1", 0, "foo", "bar")
	e.waitInitialized("g", idFoo, 3)
	e.waitInitialized("g", idBar, 2)
	r := e.heartbeat("g", "m1", 1)
	e.failover()
	r2 := e.heartbeat("g", "m1", r.MemberEpoch)
	if r2.ErrorCode != 0 || r2.MemberEpoch != r.MemberEpoch || r2.Assignment != nil {
		t.Fatalf("after failover %+v", r2)
	}
	d := e.describe("g")
	if d.GroupEpoch != r.MemberEpoch || d.AssignmentEpoch != r.MemberEpoch || len(d.Members) != 1 ||
		!reflect.DeepEqual(d.Members[0].SubscribedTopicNames, []string{"bar", "foo"}) || len(d.Members[0].Assignment.TopicPartitions) != 2 {
		t.Fatalf("described %+v", d)
	}
	e.clock.Advance(46 * time.Second)
	if d := e.describe("g"); len(d.Members) != 0 || d.GroupState != "Empty" {
		t.Fatalf("session timeout not re-armed after load: %+v", d)
	}
}

// A failed append leaves the group as it was.
func TestAppendFailure(t *testing.T) {
	e := newEnv(t)
	e.log.FailNext(kerr.NotEnoughReplicas)
	if r := e.heartbeat("g", "m1", 0, "foo"); r.ErrorCode != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("code %d", r.ErrorCode)
	}
	if groups, _ := e.c.ListGroups(nil, nil); len(groups) != 0 {
		t.Fatalf("group kept: %+v", groups)
	}
	if r := e.heartbeat("g", "m1", 0, "foo"); r.ErrorCode != 0 || r.MemberEpoch != 1 {
		t.Fatalf("retry %+v", r)
	}
}

func TestNotCoordinator(t *testing.T) {
	e := newEnv(t)
	e.c.Resign(0)
	if r := e.heartbeat("g", "m1", 0, "foo"); r.ErrorCode != kerr.NotCoordinator.Code {
		t.Fatalf("code %d", r.ErrorCode)
	}
}

func (e *env) describe(id string) kmsg.ShareGroupDescribeResponseGroup {
	req := kmsg.NewPtrShareGroupDescribeRequest()
	req.GroupIDs = []string{id}
	return e.c.ShareGroupDescribe(context.Background(), req).Groups[0]
}

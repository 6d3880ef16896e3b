package group

import (
	"fmt"
	"math/rand"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ---- KIP-848 helpers ----

func cgReq(group, member string, epoch int32, topics []string, owned assignment) *kmsg.ConsumerGroupHeartbeatRequest {
	r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	r.Version = 1
	r.Group, r.MemberID, r.MemberEpoch = group, member, epoch
	r.SubscribedTopicNames = topics
	if epoch == 0 {
		r.RebalanceTimeoutMillis = 30000
		if topics == nil {
			r.SubscribedTopicNames = []string{}
		}
	}
	r.Topics = ownedTopics(owned)
	return r
}

func ownedTopics(a assignment) []kmsg.ConsumerGroupHeartbeatRequestTopic {
	out := []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	for _, id := range a.topicIDs() {
		out = append(out, kmsg.ConsumerGroupHeartbeatRequestTopic{TopicID: id, Partitions: slices.Clone(a[id])})
	}
	return out
}

func fromResponse(a *kmsg.ConsumerGroupHeartbeatResponseAssignment) assignment {
	out := assignment{}
	for _, t := range a.Topics {
		out.add(t.TopicID, t.Partitions...)
	}
	return out
}

func (h *harness) cgHeartbeat(req *kmsg.ConsumerGroupHeartbeatRequest) *kmsg.ConsumerGroupHeartbeatResponse {
	return h.c.ConsumerGroupHeartbeat(ctxBG, Client{ID: "c-" + req.MemberID, Host: "/10.0.0.1"}, req)
}

// consumerJoin joins a KIP-848 member (epoch 0) and returns the response.
func (h *harness) consumerJoin(group, member string, topics []string) *kmsg.ConsumerGroupHeartbeatResponse {
	h.t.Helper()
	r := h.cgHeartbeat(cgReq(group, member, 0, topics, nil))
	if r.ErrorCode != 0 {
		h.t.Fatalf("join %s: error %d %v", member, r.ErrorCode, r.ErrorMessage)
	}
	return r
}

// client is a KIP-848 consumer: it owns what it was last assigned and
// reports it on every heartbeat.
type client struct {
	id     string
	topics []string
	epoch  int32
	owned  assignment
}

func (h *harness) step(group string, c *client) *kmsg.ConsumerGroupHeartbeatResponse {
	h.t.Helper()
	req := cgReq(group, c.id, c.epoch, c.topics, c.owned)
	if c.epoch == 0 {
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	}
	r := h.cgHeartbeat(req)
	if r.ErrorCode != 0 {
		return r
	}
	c.epoch = r.MemberEpoch
	if r.Assignment != nil {
		c.owned = fromResponse(r.Assignment)
	}
	return r
}

// checkExclusive asserts that no partition is owned by two members, both in
// the coordinator's view (assigned or being revoked) and the clients'.
func (h *harness) checkExclusive(group string, clients []*client) {
	h.t.Helper()
	seen := map[topicPartition]string{}
	for _, c := range clients {
		for id, ps := range c.owned {
			for _, p := range ps {
				tp := topicPartition{string(id[:]), p}
				if other, ok := seen[tp]; ok {
					h.t.Fatalf("partition %v owned by %s and %s", tp, other, c.id)
				}
				seen[tp] = c.id
			}
		}
	}
	g, _ := h.c.lookup(group, kindNone)
	if g == nil {
		return
	}
	g.run(ctxBG, func() {
		owner := map[topicPartition]string{}
		for _, m := range g.consumer.members {
			for _, a := range []assignment{m.assigned, m.pendingRevocation} {
				for id, ps := range a {
					for _, p := range ps {
						tp := topicPartition{string(id[:]), p}
						if other, ok := owner[tp]; ok {
							h.t.Errorf("coordinator: partition %v owned by %s and %s", tp, other, m.id)
						}
						owner[tp] = m.id
					}
				}
			}
		}
	})
}

func (h *harness) consumerDescribe(group string) kmsg.ConsumerGroupDescribeResponseGroup {
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Version = 1
	req.Groups = []string{group}
	return h.c.ConsumerGroupDescribe(ctxBG, req).Groups[0]
}

// settle heartbeats every client until the group is Stable.
func (h *harness) settle(group string, clients []*client) {
	h.t.Helper()
	for range 20 {
		for _, c := range clients {
			if r := h.step(group, c); r.ErrorCode != 0 {
				h.t.Fatalf("heartbeat of %s: %d %v", c.id, r.ErrorCode, deref(r.ErrorMessage))
			}
			h.checkExclusive(group, clients)
		}
		if h.consumerDescribe(group).State == "Stable" {
			return
		}
	}
	h.t.Fatalf("group %s never became Stable: %+v", group, h.consumerDescribe(group))
}

func counts(clients []*client) []int {
	var out []int
	for _, c := range clients {
		out = append(out, c.owned.count())
	}
	return out
}

// ---- tests ----

// TestConsumerJoinAndAssign: the first member gets every partition at epoch 1.
func TestConsumerJoinAndAssign(t *testing.T) {
	h := newHarness(t, nil)
	r := h.consumerJoin("g", "m1", []string{"t1", "t2"})
	if r.MemberEpoch != 1 || r.Assignment == nil || fromResponse(r.Assignment).count() != 7 || r.HeartbeatIntervalMillis != 5000 {
		t.Fatalf("join: %+v", r)
	}
	d := h.consumerDescribe("g")
	if d.State != "Stable" || d.Epoch != 1 || d.AssignmentEpoch != 1 || d.AssignorName != "uniform" || len(d.Members) != 1 {
		t.Fatalf("describe: %+v", d)
	}
	m := d.Members[0]
	if m.ClientID != "c-m1" || m.MemberType != 1 || len(m.Assignment.TopicPartitions) != 2 || m.Assignment.TopicPartitions[0].Topic == "" {
		t.Fatalf("member: %+v", m)
	}
	// A v0 member without id gets one from the coordinator.
	v0 := cgReq("g", "", 0, []string{"t1"}, nil)
	v0.Version = 0
	if r := h.cgHeartbeat(v0); r.ErrorCode != 0 || r.MemberID == nil || len(*r.MemberID) != 22 {
		t.Fatalf("v0 join: %+v", r)
	}
}

// TestConsumerReconciliation: a partition moves to a new member only after
// its owner revoked it.
func TestConsumerReconciliation(t *testing.T) {
	h := newHarness(t, nil)
	a := &client{id: "a", topics: []string{"t1"}}
	h.step("g", a)
	if a.owned.count() != 4 || a.epoch != 1 {
		t.Fatalf("a: %+v", a)
	}
	b := &client{id: "b", topics: []string{"t1"}}
	clients := []*client{a, b}
	h.step("g", b)
	// b is at epoch 2 but its partitions are still a's.
	if b.epoch != 2 || b.owned.count() != 0 {
		t.Fatalf("b: %+v", b)
	}
	h.checkExclusive("g", clients)
	// a is asked to revoke two partitions and stays at epoch 1.
	h.step("g", a)
	if a.epoch != 1 || a.owned.count() != 2 {
		t.Fatalf("a revoking: %+v", a)
	}
	// a confirms (its next heartbeat reports the smaller set): epoch 2.
	h.step("g", a)
	if a.epoch != 2 {
		t.Fatalf("a after revoking: %+v", a)
	}
	h.step("g", b)
	if b.owned.count() != 2 {
		t.Fatalf("b: %+v", b)
	}
	h.checkExclusive("g", clients)
	if d := h.consumerDescribe("g"); d.State != "Stable" || d.Epoch != 2 {
		t.Fatalf("describe: %+v", d)
	}
}

// TestConsumerReconciliationRandom churns members (joins, leaves, topic
// growth) with clients that heartbeat in random order, checking after every
// heartbeat that no partition has two owners, then that the group settles
// balanced.
func TestConsumerReconciliationRandom(t *testing.T) {
	for seed := int64(1); seed <= 5; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			h := newHarness(t, nil)
			h.setTopic("big", 12)
			rng := rand.New(rand.NewSource(seed))
			var clients []*client
			next := 0
			for i := 0; i < 150; i++ {
				switch op := rng.Intn(12); {
				case op == 0 && len(clients) < 6 || len(clients) == 0:
					next++
					clients = append(clients, &client{id: fmt.Sprintf("m%d", next), topics: []string{"big", "t1"}})
				case op == 1 && len(clients) > 1:
					k := rng.Intn(len(clients))
					c := clients[k]
					if r := h.cgHeartbeat(cgReq("g", c.id, leaveGroupMemberEpoch, nil, nil)); r.ErrorCode != 0 && c.epoch > 0 {
						t.Fatalf("leave: %d", r.ErrorCode)
					}
					clients = slices.Delete(clients, k, k+1)
				case op == 2:
					h.setTopic("big", 12+int32(rng.Intn(4)))
				default:
					c := clients[rng.Intn(len(clients))]
					if r := h.step("g", c); r.ErrorCode != 0 {
						t.Fatalf("heartbeat of %s: %d %v", c.id, r.ErrorCode, deref(r.ErrorMessage))
					}
				}
				h.checkExclusive("g", clients)
			}
			h.settle("g", clients)
			total := 0
			for _, n := range counts(clients) {
				total += n
			}
			n := counts(clients)
			if total != int(h.topics["big"])+4 || slices.Max(n)-slices.Min(n) > 1 {
				t.Fatalf("not balanced: %v (total %d)", n, total)
			}
		})
	}
}

// TestConsumerLeave: a leaving member (epoch -1) is removed at once and the
// group epoch is bumped; its partitions go to the others.
func TestConsumerLeave(t *testing.T) {
	h := newHarness(t, nil)
	a, b := &client{id: "a", topics: []string{"t1"}}, &client{id: "b", topics: []string{"t1"}}
	clients := []*client{a, b}
	h.settle("g", clients)
	r := h.cgHeartbeat(cgReq("g", "a", leaveGroupMemberEpoch, nil, nil))
	if r.ErrorCode != 0 || r.MemberEpoch != -1 {
		t.Fatalf("leave: %+v", r)
	}
	h.settle("g", []*client{b})
	if b.owned.count() != 4 {
		t.Fatalf("b: %+v", b)
	}
	if r := h.step("g", a); r.ErrorCode != codeUnknownMemberID {
		t.Fatalf("heartbeat after leave: %d", r.ErrorCode)
	}
	if r := h.cgHeartbeat(cgReq("g", "ghost", leaveGroupMemberEpoch, nil, nil)); r.ErrorCode != codeUnknownMemberID {
		t.Fatalf("unknown member leave: %d", r.ErrorCode)
	}
}

// TestConsumerSessionTimeout: a member that stops heartbeating is fenced
// after group.consumer.session.timeout.ms.
func TestConsumerSessionTimeout(t *testing.T) {
	h := newHarness(t, nil)
	a, b := &client{id: "a", topics: []string{"t1"}}, &client{id: "b", topics: []string{"t1"}}
	h.settle("g", []*client{a, b})
	for range 10 {
		h.clock.Advance(5 * time.Second)
		h.step("g", b)
	}
	if r := h.step("g", a); r.ErrorCode != codeUnknownMemberID {
		t.Fatalf("expired member: %d", r.ErrorCode)
	}
	h.settle("g", []*client{b})
	if b.owned.count() != 4 {
		t.Fatalf("b: %+v", b)
	}
	// The fenced client rejoins with its member id and epoch 0.
	a.epoch, a.owned = 0, nil
	h.settle("g", []*client{a, b})
}

// TestConsumerFencedEpoch: an epoch ahead of the coordinator's, or an old
// one that is not the previous epoch, is FENCED_MEMBER_EPOCH; rejoining with
// epoch 0 recovers (KAFKA-19233).
func TestConsumerFencedEpoch(t *testing.T) {
	h := newHarness(t, nil)
	a := &client{id: "a", topics: []string{"t1"}}
	h.settle("g", []*client{a})
	if r := h.cgHeartbeat(cgReq("g", "a", a.epoch+5, nil, nil)); r.ErrorCode != codeFencedMemberEpoch {
		t.Fatalf("future epoch: %d", r.ErrorCode)
	}
	b := &client{id: "b", topics: []string{"t1"}}
	h.settle("g", []*client{a, b})
	c := &client{id: "c", topics: []string{"t1"}}
	h.settle("g", []*client{a, b, c})
	if r := h.cgHeartbeat(cgReq("g", "a", a.epoch-2, nil, nil)); a.epoch < 3 || r.ErrorCode != codeFencedMemberEpoch {
		t.Fatalf("old epoch %d: %d", a.epoch-2, r.ErrorCode)
	}
	a.epoch, a.owned = 0, nil
	if r := h.step("g", a); r.ErrorCode != 0 || r.MemberEpoch <= 0 {
		t.Fatalf("rejoin: %+v", r)
	}
	h.settle("g", []*client{a, b, c})
	if r := h.cgHeartbeat(cgReq("nope", "a", 3, nil, nil)); r.ErrorCode != codeGroupIDNotFound {
		t.Fatalf("unknown group: %d", r.ErrorCode)
	}
}

// TestConsumerRebalanceTimeout: a member that does not revoke within its
// rebalance timeout is fenced and its partitions freed.
func TestConsumerRebalanceTimeout(t *testing.T) {
	h := newHarness(t, nil)
	a := &client{id: "a", topics: []string{"t1"}}
	h.settle("g", []*client{a})
	b := &client{id: "b", topics: []string{"t1"}}
	h.step("g", b)
	h.step("g", a) // told to revoke; a never confirms
	if a.owned.count() != 2 {
		t.Fatalf("a: %+v", a)
	}
	h.clock.Advance(31 * time.Second) // rebalance timeout 30s
	h.step("g", b)
	h.step("g", b)
	if b.owned.count() != 4 {
		t.Fatalf("b did not get a's partitions: %+v", b)
	}
	if r := h.cgHeartbeat(cgReq("g", "a", a.epoch, nil, a.owned)); r.ErrorCode != codeUnknownMemberID {
		t.Fatalf("fenced member: %d", r.ErrorCode)
	}
}

// TestConsumerStaticMembership: a static member leaving with epoch -2
// keeps its assignment; it comes back under a new member id with the same
// partitions. Its instance id cannot be taken while it is active.
func TestConsumerStaticMembership(t *testing.T) {
	h := newHarness(t, nil)
	static := func(c *client, inst string, epoch int32) *kmsg.ConsumerGroupHeartbeatRequest {
		r := cgReq("g", c.id, epoch, c.topics, c.owned)
		if epoch == 0 {
			r.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		}
		r.InstanceID = &inst
		return r
	}
	a := &client{id: "a", topics: []string{"t1"}}
	b := &client{id: "b", topics: []string{"t1"}}
	r := h.cgHeartbeat(static(a, "inst-a", 0))
	a.epoch, a.owned = r.MemberEpoch, fromResponse(r.Assignment)
	h.settle("g", []*client{a, b})
	before := a.owned.clone()
	epoch := h.consumerDescribe("g").Epoch

	// Another process with the same instance id: UNRELEASED_INSTANCE_ID.
	if r := h.cgHeartbeat(static(&client{id: "a2", topics: []string{"t1"}}, "inst-a", 0)); r.ErrorCode != codeUnreleasedInstanceID {
		t.Fatalf("duplicate instance: %d", r.ErrorCode)
	}
	// Temporary leave.
	if r := h.cgHeartbeat(static(a, "inst-a", leaveGroupStaticMemberEpoch)); r.ErrorCode != 0 || r.MemberEpoch != -2 {
		t.Fatalf("static leave: %+v", r)
	}
	// Comes back with a new member id: same partitions, no new group epoch.
	a2 := &client{id: "a2", topics: []string{"t1"}}
	r = h.cgHeartbeat(static(a2, "inst-a", 0))
	if r.ErrorCode != 0 || !fromResponse(r.Assignment).equal(before) {
		t.Fatalf("static rejoin: %+v", r)
	}
	if d := h.consumerDescribe("g"); d.Epoch != epoch || len(d.Members) != 2 {
		t.Fatalf("describe after static rejoin: %+v", d)
	}
	// The old member id is fenced.
	if r := h.cgHeartbeat(static(a, "inst-a", a.epoch)); r.ErrorCode != codeFencedInstanceID {
		t.Fatalf("old member id: %d", r.ErrorCode)
	}
}

// TestConsumerOffsets: KIP-848 members commit with their member epoch.
func TestConsumerOffsets(t *testing.T) {
	h := newHarness(t, nil)
	a := &client{id: "a", topics: []string{"t1"}}
	h.settle("g", []*client{a})
	allZero(t, h.commit("g", "a", a.epoch, map[string]map[int32]int64{"t1": {0: 5}}))
	if got := h.commit("g", "a", a.epoch+1, map[string]map[int32]int64{"t1": {0: 6}}); got[tpKey("t1", 0)] != codeStaleMemberEpoch {
		t.Fatalf("stale epoch: %v", got)
	}
	if got := h.commit("g", "nobody", 1, map[string]map[int32]int64{"t1": {0: 6}}); got[tpKey("t1", 0)] != codeUnknownMemberID {
		t.Fatalf("unknown member: %v", got)
	}
	old := commitReq("g", "a", a.epoch, map[string]map[int32]int64{"t1": {0: 6}})
	old.Version = 8
	if got := commitCodes(h.c.OffsetCommit(ctxBG, old)); got[tpKey("t1", 0)] != codeUnsupportedVersion {
		t.Fatalf("v8 from a KIP-848 member: %v", got)
	}
	// OffsetFetch v9 with the member epoch.
	fetch := func(member string, epoch int32) kmsg.OffsetFetchResponseGroup {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Version = 9
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group, rg.MemberID, rg.MemberEpoch = "g", &member, epoch
		rg.Topics = []kmsg.OffsetFetchRequestGroupTopic{{Topic: "t1", Partitions: []int32{0}}}
		req.Groups = []kmsg.OffsetFetchRequestGroup{rg}
		return h.c.OffsetFetch(ctxBG, req).Groups[0]
	}
	if g := fetch("a", a.epoch); g.ErrorCode != 0 || g.Topics[0].Partitions[0].Offset != 5 {
		t.Fatalf("fetch: %+v", g)
	}
	if g := fetch("a", a.epoch-1); g.ErrorCode != codeStaleMemberEpoch {
		t.Fatalf("stale fetch: %+v", g)
	}
	// Offsets of subscribed topics cannot be deleted.
	del := kmsg.NewPtrOffsetDeleteRequest()
	del.Group = "g"
	del.Topics = []kmsg.OffsetDeleteRequestTopic{{Topic: "t1", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}}}
	if resp := h.c.OffsetDelete(ctxBG, del); resp.Topics[0].Partitions[0].ErrorCode != codeGroupSubscribedToTopic {
		t.Fatalf("offset delete: %+v", resp)
	}
}

// TestClassicAndConsumerShareNoID: a classic group and a consumer group
// cannot share an id; empty ones convert.
func TestClassicAndConsumerShareNoID(t *testing.T) {
	h := newHarness(t, nil)
	h.stableGroup("classic", 1)
	if r := h.cgHeartbeat(cgReq("classic", "m", 0, []string{"t1"}, nil)); r.ErrorCode != codeGroupIDNotFound {
		t.Fatalf("consumer heartbeat to a classic group: %d", r.ErrorCode)
	}
	h.consumerJoin("modern", "m", []string{"t1"})
	if r := h.join(joinReq("modern", "")); r.ErrorCode != codeInconsistentGroupProtocol {
		t.Fatalf("join of a consumer group: %d", r.ErrorCode)
	}
	if code := h.heartbeat("modern", "m", 1); code != codeUnknownMemberID {
		t.Fatalf("classic heartbeat to a consumer group: %d", code)
	}
	if d := h.consumerDescribe("classic"); d.ErrorCode != codeGroupIDNotFound {
		t.Fatalf("ConsumerGroupDescribe of a classic group: %+v", d)
	}
	// An empty classic group (offsets only) becomes a consumer group and
	// keeps its offsets.
	allZero(t, h.commit("simple", "", -1, map[string]map[int32]int64{"t1": {0: 9}}))
	h.consumerJoin("simple", "m", []string{"t1"})
	if _, got := h.fetch("simple", map[string][]int32{"t1": {0}}); got[tpKey("t1", 0)].Offset != 9 {
		t.Fatalf("offsets lost in the conversion: %+v", got)
	}
	// An empty consumer group becomes a classic group.
	if r := h.cgHeartbeat(cgReq("simple", "m", leaveGroupMemberEpoch, nil, nil)); r.ErrorCode != 0 {
		t.Fatalf("leave: %d", r.ErrorCode)
	}
	if r := h.join(joinReq("simple", "")); r.ErrorCode != codeMemberIDRequired {
		t.Fatalf("join of an empty consumer group: %d", r.ErrorCode)
	}
	// Classic LeaveGroup removes KIP-848 members (an admin removal).
	leave := kmsg.NewPtrLeaveGroupRequest()
	leave.Version, leave.Group = 5, "modern"
	leave.Members = []kmsg.LeaveGroupRequestMember{{MemberID: "m"}}
	if resp := h.c.LeaveGroup(ctxBG, leave); resp.ErrorCode != 0 || resp.Members[0].ErrorCode != 0 {
		t.Fatalf("admin leave: %+v", resp)
	}
	if d := h.consumerDescribe("modern"); d.State != "Empty" {
		t.Fatalf("after admin leave: %+v", d)
	}
	// Now empty: DeleteGroups works.
	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Groups = []string{"modern"}
	if resp := h.c.DeleteGroups(ctxBG, del); resp.Groups[0].ErrorCode != 0 {
		t.Fatalf("delete: %+v", resp)
	}
}

// TestConsumerHeartbeatValidation covers the request checks.
func TestConsumerHeartbeatValidation(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.ConsumerMaxGroupSize = 1 })
	cases := []struct {
		name string
		mod  func(*kmsg.ConsumerGroupHeartbeatRequest)
		want int16
	}{
		{"no member id (v1)", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberID = "" }, codeInvalidRequest},
		{"no group", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.Group = "" }, codeInvalidRequest},
		{"no rebalance timeout", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.RebalanceTimeoutMillis = -1 }, codeInvalidRequest},
		{"owned partitions on join", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.Topics = ownedTopics(assignment{tidA: {1}}) }, codeInvalidRequest},
		{"no subscription", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.SubscribedTopicNames = nil }, codeInvalidRequest},
		{"bad epoch", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch = -3 }, codeInvalidRequest},
		{"static leave without instance", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch = -2 }, codeInvalidRequest},
		{"unknown assignor", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.ServerAssignor = kmsg.StringPtr("sticky") }, codeUnsupportedAssignor},
		{"bad regex", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.SubscribedTopicRegex = kmsg.StringPtr("(") }, codeInvalidRegularExpression},
	}
	for _, tc := range cases {
		req := cgReq("g", "m", 0, []string{"t1"}, nil)
		tc.mod(req)
		if r := h.cgHeartbeat(req); r.ErrorCode != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, r.ErrorCode, tc.want)
		}
	}
	h.consumerJoin("g", "m", []string{"t1"})
	if r := h.cgHeartbeat(cgReq("g", "m2", 0, []string{"t1"}, nil)); r.ErrorCode != codeGroupMaxSizeReached {
		t.Errorf("group full: %d", r.ErrorCode)
	}
}

// TestConsumerRegexSubscription: a regex subscription follows topics as
// they appear.
func TestConsumerRegexSubscription(t *testing.T) {
	h := newHarness(t, nil)
	req := cgReq("g", "m", 0, nil, nil)
	req.SubscribedTopicNames, req.SubscribedTopicRegex = nil, kmsg.StringPtr("t.*")
	r := h.cgHeartbeat(req)
	if r.ErrorCode != 0 || fromResponse(r.Assignment).count() != 7 {
		t.Fatalf("regex join: %+v", r)
	}
	h.setTopic("t3", 2)
	h.setTopic("other", 2)
	c := &client{id: "m", epoch: r.MemberEpoch, owned: fromResponse(r.Assignment)}
	h.clock.Advance(10 * time.Second) // regexes are resolved again after 10s
	h.step("g", c)
	if c.owned.count() != 9 {
		t.Fatalf("new topic not assigned: %v", c.owned)
	}
}

// TestConsumerLostResponse: a member whose epoch bump got lost heartbeats
// with the previous epoch and a subset of its partitions: accepted.
func TestConsumerLostResponse(t *testing.T) {
	h := newHarness(t, nil)
	a := &client{id: "a", topics: []string{"t1"}}
	h.settle("g", []*client{a})
	b := &client{id: "b", topics: []string{"t1"}}
	h.step("g", b)
	h.step("g", a) // revoke two: still epoch 1
	old := a.epoch
	h.step("g", a) // epoch 2; pretend the response was lost
	if a.epoch == old {
		t.Fatalf("epoch did not move: %d", a.epoch)
	}
	if r := h.cgHeartbeat(cgReq("g", "a", old, nil, a.owned)); r.ErrorCode != 0 || r.MemberEpoch != a.epoch {
		t.Fatalf("previous epoch with a subset: %+v", r)
	}
	if r := h.cgHeartbeat(cgReq("g", "a", old, nil, assignment{testTopicID("t1"): {0, 1, 2, 3}})); r.ErrorCode != codeFencedMemberEpoch {
		t.Fatalf("previous epoch with partitions it lost: %d", r.ErrorCode)
	}
}

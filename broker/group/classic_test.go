package group

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// stableGroup brings n dynamic members into a Stable group at generation 1
// and returns their ids (the first is the leader).
func (h *harness) stableGroup(group string, n int, opts ...joinOpt) []string {
	h.t.Helper()
	var ids []string
	var chans []<-chan *kmsg.JoinGroupResponse
	for range n {
		id, ch := h.joinNew(group, opts...)
		ids = append(ids, id)
		chans = append(chans, ch)
	}
	// The initial delay extends while members arrive.
	h.advanceUntil(func() bool { return len(chans[len(chans)-1]) > 0 })
	var leader string
	var gen int32
	for _, ch := range chans {
		r := recv(h.t, ch)
		if r.ErrorCode != 0 {
			h.t.Fatalf("join: error %d", r.ErrorCode)
		}
		leader, gen = r.LeaderID, r.Generation
	}
	assign := make(map[string]string)
	for _, id := range ids {
		assign[id] = "assignment-" + id
	}
	var syncs []<-chan *kmsg.SyncGroupResponse
	for _, id := range ids {
		if id != leader {
			syncs = append(syncs, h.syncAsync(group, id, gen, nil))
		}
	}
	syncs = append(syncs, h.syncAsync(group, leader, gen, assign))
	for _, ch := range syncs {
		if r := recv(h.t, ch); r.ErrorCode != 0 {
			h.t.Fatalf("sync: error %d", r.ErrorCode)
		}
	}
	if s := h.state(group); s != "Stable" {
		h.t.Fatalf("state %s, want Stable", s)
	}
	// Leader first.
	for i, id := range ids {
		if id == leader {
			ids[0], ids[i] = ids[i], ids[0]
		}
	}
	return ids
}

// TestJoinSyncSingleMember walks one member through KIP-394's
// MEMBER_ID_REQUIRED, the initial rebalance delay, SyncGroup and heartbeats.
func TestJoinSyncSingleMember(t *testing.T) {
	h := newHarness(t, nil)
	first := h.join(joinReq("g", ""))
	if first.ErrorCode != codeMemberIDRequired || first.MemberID == "" {
		t.Fatalf("first join: %+v", first)
	}
	ch := h.joinAsync(joinReq("g", first.MemberID))
	h.describe("g")
	parked(t, ch) // waiting for group.initial.rebalance.delay.ms
	if s := h.state("g"); s != "PreparingRebalance" {
		t.Fatalf("state %s", s)
	}
	h.clock.Advance(3 * time.Second)
	r := recv(t, ch)
	if r.ErrorCode != 0 || r.Generation != 1 || r.LeaderID != first.MemberID || len(r.Members) != 1 || *r.Protocol != "range" {
		t.Fatalf("join: %+v", r)
	}
	if s := h.state("g"); s != "CompletingRebalance" {
		t.Fatalf("state %s", s)
	}
	// Heartbeats between JoinGroup and SyncGroup succeed.
	if code := h.heartbeat("g", first.MemberID, 1); code != 0 {
		t.Fatalf("heartbeat: %d", code)
	}
	s := recv(t, h.syncAsync("g", first.MemberID, 1, map[string]string{first.MemberID: "a"}))
	if s.ErrorCode != 0 || string(s.MemberAssignment) != "a" || *s.Protocol != "range" {
		t.Fatalf("sync: %+v", s)
	}
	if code := h.heartbeat("g", first.MemberID, 1); code != 0 {
		t.Fatalf("heartbeat: %d", code)
	}
	d := h.describe("g")
	if d.State != "Stable" || d.Protocol != "range" || d.ProtocolType != "consumer" || len(d.Members) != 1 ||
		string(d.Members[0].MemberAssignment) != "a" || d.Members[0].ClientID != "client" || d.Members[0].ClientHost != "/127.0.0.1" {
		t.Fatalf("describe: %+v", d)
	}
}

// TestJoinSyncManyMembers: followers' SyncGroup waits for the leader's;
// only the leader gets the member list.
func TestJoinSyncManyMembers(t *testing.T) {
	for _, n := range []int{2, 5} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			h := newHarness(t, nil)
			var ids []string
			var chans []<-chan *kmsg.JoinGroupResponse
			for range n {
				id, ch := h.joinNew("g")
				ids, chans = append(ids, id), append(chans, ch)
			}
			h.advanceUntil(func() bool { return len(chans[0]) > 0 })
			var leader string
			for i, ch := range chans {
				r := recv(t, ch)
				if r.ErrorCode != 0 || r.Generation != 1 || r.MemberID != ids[i] {
					t.Fatalf("join %d: %+v", i, r)
				}
				leader = r.LeaderID
				if (r.LeaderID == r.MemberID) != (len(r.Members) == n) {
					t.Fatalf("member %s got %d members (leader %s)", r.MemberID, len(r.Members), r.LeaderID)
				}
			}
			var followers []<-chan *kmsg.SyncGroupResponse
			for _, id := range ids {
				if id != leader {
					followers = append(followers, h.syncAsync("g", id, 1, nil))
				}
			}
			h.describe("g")
			for _, ch := range followers {
				parked(t, ch)
			}
			assign := map[string]string{}
			for _, id := range ids {
				assign[id] = "to-" + id
			}
			if r := recv(t, h.syncAsync("g", leader, 1, assign)); r.ErrorCode != 0 || string(r.MemberAssignment) != "to-"+leader {
				t.Fatalf("leader sync: %+v", r)
			}
			for _, ch := range followers {
				if r := recv(t, ch); r.ErrorCode != 0 || len(r.MemberAssignment) == 0 {
					t.Fatalf("follower sync: %+v", r)
				}
			}
		})
	}
}

// TestJoinV3NoMemberIDRequired: before v4 a new member joins at once.
func TestJoinV3NoMemberIDRequired(t *testing.T) {
	h := newHarness(t, nil)
	ch := h.joinAsync(joinReq("g", "", withVersion(3)))
	h.clock.Advance(3 * time.Second)
	r := recv(t, ch)
	if r.ErrorCode != 0 || r.MemberID == "" || r.Generation != 1 {
		t.Fatalf("join: %+v", r)
	}
}

// TestRebalanceOnNewMember: a new member moves a Stable group to
// PreparingRebalance; heartbeats then get REBALANCE_IN_PROGRESS and the
// next generation starts once every member rejoined.
func TestRebalanceOnNewMember(t *testing.T) {
	h := newHarness(t, nil)
	ids := h.stableGroup("g", 2)
	newID, newCh := h.joinNew("g")
	if s := h.state("g"); s != "PreparingRebalance" {
		t.Fatalf("state %s", s)
	}
	for _, id := range ids {
		if code := h.heartbeat("g", id, 1); code != codeRebalanceInProgress {
			t.Fatalf("heartbeat during rebalance: %d", code)
		}
	}
	a := h.joinAsync(joinReq("g", ids[0]))
	h.describe("g")
	parked(t, newCh)
	b := h.joinAsync(joinReq("g", ids[1]))
	for _, ch := range []<-chan *kmsg.JoinGroupResponse{a, b, newCh} {
		r := recv(t, ch)
		if r.ErrorCode != 0 || r.Generation != 2 || r.LeaderID != ids[0] {
			t.Fatalf("rejoin: %+v", r)
		}
	}
	// The old generation is now stale.
	if code := h.heartbeat("g", newID, 1); code != codeIllegalGeneration {
		t.Fatalf("stale heartbeat: %d", code)
	}
}

// TestProtocolSelection: the protocol every member supports with the most
// votes wins; a member with no common protocol is refused.
func TestProtocolSelection(t *testing.T) {
	h := newHarness(t, nil)
	_, a := h.joinNew("g", withProtocols("roundrobin", "range"))
	_, b := h.joinNew("g", withProtocols("range", "roundrobin"))
	_, c := h.joinNew("g", withProtocols("sticky", "range", "roundrobin"))
	// range: 2 votes (b, and c's first common), roundrobin: 1.
	if r := h.join(joinReq("g", "", withProtocols("cooperative"))); r.ErrorCode != codeInconsistentGroupProtocol {
		t.Fatalf("unsupported protocol: %d", r.ErrorCode)
	}
	bad := joinReq("g", "")
	bad.ProtocolType = "connect"
	if r := h.join(bad); r.ErrorCode != codeInconsistentGroupProtocol {
		t.Fatalf("other protocol type: %d", r.ErrorCode)
	}
	h.advanceUntil(func() bool { return len(a) > 0 })
	for _, ch := range []<-chan *kmsg.JoinGroupResponse{a, b, c} {
		if r := recv(t, ch); r.ErrorCode != 0 || *r.Protocol != "range" {
			t.Fatalf("join: %+v (%s)", r, *r.Protocol)
		}
	}
	// A new empty group needs a protocol type and protocols.
	none := joinReq("g2", "")
	none.Protocols = nil
	if r := h.join(none); r.ErrorCode != codeInconsistentGroupProtocol {
		t.Fatalf("no protocols: %d", r.ErrorCode)
	}
	if d := h.describe("g2"); d.State != "Dead" {
		t.Fatalf("failed join left a group: %+v", d)
	}
}

// TestSessionTimeoutRemovesMember: a member that stops heartbeating is
// removed after its session timeout and the group rebalances.
func TestSessionTimeoutRemovesMember(t *testing.T) {
	h := newHarness(t, nil)
	ids := h.stableGroup("g", 2, withTimeouts(10*time.Second, 20*time.Second))
	for range 2 {
		h.clock.Advance(4 * time.Second)
		if code := h.heartbeat("g", ids[0], 1); code != 0 {
			t.Fatalf("heartbeat: %d", code)
		}
	}
	h.clock.Advance(3 * time.Second)
	// ids[1] has not heartbeaten for 11s > 10s.
	if code := h.heartbeat("g", ids[1], 1); code != codeUnknownMemberID {
		t.Fatalf("expired member heartbeat: %d", code)
	}
	if code := h.heartbeat("g", ids[0], 1); code != codeRebalanceInProgress {
		t.Fatalf("survivor heartbeat: %d", code)
	}
	r := recv(t, h.joinAsync(joinReq("g", ids[0], withTimeouts(10*time.Second, 20*time.Second))))
	if r.ErrorCode != 0 || r.Generation != 2 || len(r.Members) != 1 {
		t.Fatalf("rejoin: %+v", r)
	}
}

// TestRebalanceTimeoutRemovesSlowMember: members that do not rejoin within
// the rebalance timeout are dropped from the next generation.
func TestRebalanceTimeoutRemovesSlowMember(t *testing.T) {
	h := newHarness(t, nil)
	ids := h.stableGroup("g", 3, withTimeouts(50*time.Second, 20*time.Second))
	// The leader rejoins: that forces a rebalance.
	lead := h.joinAsync(joinReq("g", ids[0], withTimeouts(50*time.Second, 20*time.Second)))
	second := h.joinAsync(joinReq("g", ids[1], withTimeouts(50*time.Second, 20*time.Second)))
	h.clock.Advance(19 * time.Second)
	h.describe("g")
	parked(t, lead)
	h.clock.Advance(time.Second)
	r := recv(t, lead)
	if r.ErrorCode != 0 || r.Generation != 2 || len(r.Members) != 2 {
		t.Fatalf("leader join: %+v", r)
	}
	if r := recv(t, second); r.ErrorCode != 0 || r.Generation != 2 {
		t.Fatalf("second join: %+v", r)
	}
	if code := h.heartbeat("g", ids[2], 1); code != codeUnknownMemberID {
		t.Fatalf("slow member heartbeat: %d", code)
	}
}

// TestInitialRebalanceDelay: the first rebalance of an empty group waits
// group.initial.rebalance.delay.ms, and again while new members arrive, up
// to the rebalance timeout.
func TestInitialRebalanceDelay(t *testing.T) {
	h := newHarness(t, nil)
	_, a := h.joinNew("g")
	h.clock.Advance(2 * time.Second)
	_, b := h.joinNew("g")
	h.clock.Advance(time.Second) // 3s: a member came in, wait another delay
	h.describe("g")
	parked(t, a)
	h.clock.Advance(2 * time.Second)
	h.describe("g")
	parked(t, a)
	h.clock.Advance(time.Second) // 6s
	for _, ch := range []<-chan *kmsg.JoinGroupResponse{a, b} {
		if r := recv(t, ch); r.ErrorCode != 0 || r.Generation != 1 {
			t.Fatalf("join: %+v", r)
		}
	}

	// Without a delay the group completes at once.
	h2 := newHarness(t, func(o *Options) { o.InitialRebalanceDelay = 0 })
	_, c := h2.joinNew("g")
	if r := recv(t, c); r.ErrorCode != 0 || r.Generation != 1 {
		t.Fatalf("join without delay: %+v", r)
	}
}

// TestStaticMemberRejoin (KIP-345): a known group.instance.id joining with
// an unknown member id replaces the old member id without a rebalance; the
// old id is fenced.
func TestStaticMemberRejoin(t *testing.T) {
	h := newHarness(t, nil)
	// Static members join directly (no MEMBER_ID_REQUIRED).
	a := h.joinAsync(joinReq("g", "", withInstance("i-a")))
	b := h.joinAsync(joinReq("g", "", withInstance("i-b")))
	h.advanceUntil(func() bool { return len(a) > 0 })
	ra, rb := recv(t, a), recv(t, b)
	if ra.ErrorCode != 0 || rb.ErrorCode != 0 {
		t.Fatalf("joins: %d %d", ra.ErrorCode, rb.ErrorCode)
	}
	leader, follower := ra, rb
	if rb.LeaderID == rb.MemberID {
		leader, follower = rb, ra
	}
	fs := h.syncAsync("g", follower.MemberID, 1, nil)
	if r := recv(t, h.syncAsync("g", leader.MemberID, 1, map[string]string{leader.MemberID: "L", follower.MemberID: "F"})); r.ErrorCode != 0 {
		t.Fatalf("sync: %d", r.ErrorCode)
	}
	recv(t, fs)
	followerInstance, leaderInstance := "i-b", "i-a"
	if follower == ra {
		followerInstance, leaderInstance = "i-a", "i-b"
	}

	// The follower restarts: same instance id, no member id.
	r := h.join(joinReq("g", "", withInstance(followerInstance)))
	if r.ErrorCode != 0 || r.Generation != 1 || r.MemberID == follower.MemberID || r.SkipAssignment {
		t.Fatalf("static rejoin: %+v", r)
	}
	if s := h.state("g"); s != "Stable" {
		t.Fatalf("state %s: a static rejoin must not rebalance", s)
	}
	if s := recv(t, h.syncAsync("g", r.MemberID, 1, nil)); s.ErrorCode != 0 || string(s.MemberAssignment) != "F" {
		t.Fatalf("sync after static rejoin: %+v", s)
	}
	// The old member id is fenced.
	old := kmsg.NewPtrHeartbeatRequest()
	old.Group, old.MemberID, old.Generation, old.InstanceID = "g", follower.MemberID, 1, &followerInstance
	if code := h.c.Heartbeat(ctxBG, old).ErrorCode; code != codeFencedInstanceID {
		t.Fatalf("old member id: %d, want FENCED_INSTANCE_ID", code)
	}

	// The static leader restarts (v9): it is told to skip the assignment.
	rl := h.join(joinReq("g", "", withInstance(leaderInstance)))
	if rl.ErrorCode != 0 || !rl.SkipAssignment || rl.LeaderID != rl.MemberID || len(rl.Members) != 2 {
		t.Fatalf("static leader rejoin: %+v", rl)
	}
	// New protocols that do not change the group's protocol: no rebalance
	// either, the new metadata is stored.
	r = h.join(joinReq("g", "", withInstance(followerInstance), withProtocols("range", "sticky")))
	if r.ErrorCode != 0 || h.state("g") != "Stable" {
		t.Fatalf("static rejoin with more protocols: %+v in %s", r, h.state("g"))
	}
}

// TestLeaveGroupBatch: LeaveGroup v3+ answers per member; v0-v2 carry the
// member's error at the top.
func TestLeaveGroupBatch(t *testing.T) {
	h := newHarness(t, nil)
	ids := h.stableGroup("g", 3)
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Version, req.Group = 5, "g"
	for _, id := range []string{ids[1], "nobody", ids[2]} {
		m := kmsg.NewLeaveGroupRequestMember()
		m.MemberID = id
		req.Members = append(req.Members, m)
	}
	resp := h.c.LeaveGroup(ctxBG, req)
	if resp.ErrorCode != 0 || len(resp.Members) != 3 || resp.Members[0].ErrorCode != 0 ||
		resp.Members[1].ErrorCode != codeUnknownMemberID || resp.Members[2].ErrorCode != 0 {
		t.Fatalf("leave: %+v", resp)
	}
	if code := h.heartbeat("g", ids[0], 1); code != codeRebalanceInProgress {
		t.Fatalf("heartbeat after leaves: %d", code)
	}
	r := recv(t, h.joinAsync(joinReq("g", ids[0])))
	if r.ErrorCode != 0 || r.Generation != 2 || len(r.Members) != 1 {
		t.Fatalf("rejoin: %+v", r)
	}

	v0 := kmsg.NewPtrLeaveGroupRequest()
	v0.Version, v0.Group, v0.MemberID = 0, "g", "nobody"
	if resp := h.c.LeaveGroup(ctxBG, v0); resp.ErrorCode != codeUnknownMemberID || resp.Members != nil {
		t.Fatalf("v0 leave of unknown member: %+v", resp)
	}
	v0.MemberID = ids[0]
	if resp := h.c.LeaveGroup(ctxBG, v0); resp.ErrorCode != 0 {
		t.Fatalf("v0 leave: %+v", resp)
	}
	if s := h.state("g"); s != "Empty" {
		t.Fatalf("state %s after the last member left", s)
	}
}

// TestGroupErrors checks every error of KAFKA-PITFALLS "Groups and
// offsets" for the classic protocol.
func TestGroupErrors(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.MaxGroupSize = 2 })
	ids := h.stableGroup("g", 2)

	// Unknown member: UNKNOWN_MEMBER_ID from Heartbeat, SyncGroup, LeaveGroup.
	if code := h.heartbeat("g", "ghost", 1); code != codeUnknownMemberID {
		t.Errorf("heartbeat unknown member: %d", code)
	}
	if r := recv(t, h.syncAsync("g", "ghost", 1, nil)); r.ErrorCode != codeUnknownMemberID {
		t.Errorf("sync unknown member: %d", r.ErrorCode)
	}
	// Unknown group: the same.
	if code := h.heartbeat("nope", "ghost", 1); code != codeUnknownMemberID {
		t.Errorf("heartbeat unknown group: %d", code)
	}
	if r := recv(t, h.syncAsync("nope", "ghost", 1, nil)); r.ErrorCode != codeUnknownMemberID {
		t.Errorf("sync unknown group: %d", r.ErrorCode)
	}
	leave := kmsg.NewPtrLeaveGroupRequest()
	leave.Version, leave.Group, leave.MemberID = 1, "nope", "ghost"
	if code := h.c.LeaveGroup(ctxBG, leave).ErrorCode; code != codeUnknownMemberID {
		t.Errorf("leave unknown group: %d", code)
	}
	if r := h.join(joinReq("nope", "ghost")); r.ErrorCode != codeUnknownMemberID {
		t.Errorf("join with a member id of an unknown group: %d", r.ErrorCode)
	}
	// Stale generation: ILLEGAL_GENERATION.
	if code := h.heartbeat("g", ids[0], 7); code != codeIllegalGeneration {
		t.Errorf("heartbeat stale generation: %d", code)
	}
	if r := recv(t, h.syncAsync("g", ids[0], 0, nil)); r.ErrorCode != codeIllegalGeneration {
		t.Errorf("sync stale generation: %d", r.ErrorCode)
	}
	// Session timeout outside [min, max]: INVALID_SESSION_TIMEOUT.
	for _, d := range []time.Duration{500 * time.Millisecond, 2 * time.Minute} {
		if r := h.c.JoinGroup(ctxBG, Client{}, joinReq("g", "", withTimeouts(d, time.Minute))); r.ErrorCode != codeInvalidSessionTimeout {
			t.Errorf("session timeout %v: %d", d, r.ErrorCode)
		}
	}
	// Empty group id: INVALID_GROUP_ID.
	if r := h.c.JoinGroup(ctxBG, Client{}, joinReq("", "")); r.ErrorCode != codeInvalidGroupID {
		t.Errorf("empty group id: %d", r.ErrorCode)
	}
	// group.max.size: GROUP_MAX_SIZE_REACHED.
	if r := h.join(joinReq("g", "")); r.ErrorCode != codeGroupMaxSizeReached {
		t.Errorf("third member: %d, want GROUP_MAX_SIZE_REACHED", r.ErrorCode)
	}
	if s := h.state("g"); s != "Stable" {
		t.Errorf("state %s after a refused member", s)
	}
	// During a rebalance: REBALANCE_IN_PROGRESS for heartbeats and syncs.
	h.joinAsync(joinReq("g", ids[0]))
	if code := h.heartbeat("g", ids[1], 1); code != codeRebalanceInProgress {
		t.Errorf("heartbeat during rebalance: %d", code)
	}
	if r := recv(t, h.syncAsync("g", ids[1], 1, nil)); r.ErrorCode != codeRebalanceInProgress {
		t.Errorf("sync during rebalance: %d", r.ErrorCode)
	}
}

// TestSeveralGroupsRebalanceAtOnce: many groups on the same coordinator
// (and partition) rebalancing concurrently keep all their members.
func TestSeveralGroupsRebalanceAtOnce(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.InitialRebalanceDelay = 0 })
	const groups, members = 12, 4
	var wg sync.WaitGroup
	errs := make(chan error, groups*members)
	for gi := range groups {
		group := fmt.Sprintf("group-%d", gi)
		for range members {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs <- h.runMember(group, members)
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for gi := range groups {
		d := h.describe(fmt.Sprintf("group-%d", gi))
		if d.State != "Stable" || len(d.Members) != members {
			t.Fatalf("group %d: %s with %d members", gi, d.State, len(d.Members))
		}
	}
}

// runMember is a client loop: join until the generation has want members,
// then sync. It uses real goroutines and no clock.
func (h *harness) runMember(group string, want int) error {
	member := ""
	for attempt := 0; attempt < 100; attempt++ {
		r := h.c.JoinGroup(ctxBG, Client{ID: "c"}, joinReq(group, member))
		switch r.ErrorCode {
		case codeMemberIDRequired:
			member = r.MemberID
			continue
		case 0:
		case codeRebalanceInProgress, codeUnknownMemberID:
			continue
		default:
			return fmt.Errorf("join: %d", r.ErrorCode)
		}
		var assign map[string]string
		if r.LeaderID == member {
			assign = map[string]string{}
			for _, m := range r.Members {
				assign[m.MemberID] = "x"
			}
		}
		s := recv(h.t, h.syncAsync(group, member, r.Generation, assign))
		if s.ErrorCode == codeRebalanceInProgress {
			continue
		}
		if s.ErrorCode != 0 {
			return fmt.Errorf("sync: %d", s.ErrorCode)
		}
		// Keep rejoining until the group has everyone.
		for {
			code := h.heartbeat(group, member, r.Generation)
			if code == codeRebalanceInProgress {
				break
			}
			if code != 0 {
				return fmt.Errorf("heartbeat: %d", code)
			}
			if len(h.describe(group).Members) == want && h.state(group) == "Stable" {
				return nil
			}
			time.Sleep(time.Millisecond) // a client's heartbeat interval
		}
	}
	return fmt.Errorf("member of %s never settled", group)
}

// TestResignAnswersParkedJoins: losing the partition answers parked
// JoinGroup and SyncGroup requests NOT_COORDINATOR.
func TestResignAnswersParkedJoins(t *testing.T) {
	h := newHarness(t, nil)
	ids := h.stableGroup("h", 2)
	_, parkedJoin := h.joinNew("g") // waits for the initial delay
	h.joinAsync(joinReq("h", ids[0]))
	// "h" is rebalancing; put it back to CompletingRebalance with a parked sync.
	r := recv(t, h.joinAsync(joinReq("h", ids[1])))
	follower := ids[0]
	if r.LeaderID == follower {
		follower = ids[1]
	}
	parkedSync := h.syncAsync("h", follower, r.Generation, nil)

	h.c.Resign(h.c.PartitionFor("g"))
	if h.c.PartitionFor("h") != h.c.PartitionFor("g") {
		h.c.Resign(h.c.PartitionFor("h"))
	}
	if r := recv(t, parkedJoin); r.ErrorCode != codeNotCoordinator {
		t.Fatalf("parked join: %d", r.ErrorCode)
	}
	if r := recv(t, parkedSync); r.ErrorCode != codeNotCoordinator {
		t.Fatalf("parked sync: %d", r.ErrorCode)
	}
	if code := h.heartbeat("g", "x", 1); code != codeNotCoordinator {
		t.Fatalf("heartbeat after resign: %d", code)
	}
	if d := h.describe("h"); d.ErrorCode != codeNotCoordinator {
		t.Fatalf("describe after resign: %d", d.ErrorCode)
	}
}

// TestLoadInProgress: requests for a partition being loaded get
// COORDINATOR_LOAD_IN_PROGRESS.
func TestLoadInProgress(t *testing.T) {
	h := newHarness(t, nil)
	p := h.c.PartitionFor("g")
	h.c.Resign(p)
	release := make(chan struct{})
	loading := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- h.c.BecomeLeader(p, h.stores[p], func(yield func(Record, error) bool) {
			close(loading)
			<-release
		})
	}()
	<-loading
	if code := h.heartbeat("g", "m", 1); code != codeCoordinatorLoadInProgress {
		t.Fatalf("heartbeat while loading: %d", code)
	}
	list := h.c.ListGroups(ctxBG, kmsg.NewPtrListGroupsRequest())
	if list.ErrorCode != codeCoordinatorLoadInProgress {
		t.Fatalf("list while loading: %d", list.ErrorCode)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if code := h.heartbeat("g", "m", 1); code != codeUnknownMemberID {
		t.Fatalf("heartbeat after load: %d", code)
	}
}

// TestRejoinWithoutChange: a follower rejoining a Stable group with the
// same metadata gets the current generation without a rebalance; a member
// that lost its JoinGroup response during CompletingRebalance gets it
// again; changed metadata rebalances.
func TestRejoinWithoutChange(t *testing.T) {
	h := newHarness(t, nil)
	ids := h.stableGroup("g", 2)
	r := h.join(joinReq("g", ids[1]))
	if r.ErrorCode != 0 || r.Generation != 1 || len(r.Members) != 0 || h.state("g") != "Stable" {
		t.Fatalf("follower rejoin: %+v (%s)", r, h.state("g"))
	}
	// The leader rejoining forces a rebalance.
	lead := h.joinAsync(joinReq("g", ids[0]))
	follow := h.joinAsync(joinReq("g", ids[1]))
	recv(t, lead)
	recv(t, follow)
	if s := h.state("g"); s != "CompletingRebalance" {
		t.Fatalf("state %s", s)
	}
	again := h.join(joinReq("g", ids[0]))
	if again.ErrorCode != 0 || again.Generation != 2 || len(again.Members) != 2 {
		t.Fatalf("lost response: %+v", again)
	}
	// New metadata: a rebalance.
	h.joinAsync(joinReq("g", ids[1], withProtocols("range", "sticky")))
	if s := h.state("g"); s != "PreparingRebalance" {
		t.Fatalf("state %s after new metadata", s)
	}
}

// TestPendingSyncExpiry: members that got their JoinGroup response but do
// not send SyncGroup within the rebalance timeout are removed.
func TestPendingSyncExpiry(t *testing.T) {
	h := newHarness(t, nil)
	ids := h.stableGroup("g", 2, withTimeouts(time.Minute, 10*time.Second))
	a := h.joinAsync(joinReq("g", ids[0], withTimeouts(time.Minute, 10*time.Second)))
	b := h.joinAsync(joinReq("g", ids[1], withTimeouts(time.Minute, 10*time.Second)))
	ra, rb := recv(t, a), recv(t, b)
	leader, follower := ra, rb
	if rb.LeaderID == rb.MemberID {
		leader, follower = rb, ra
	}
	// Only the follower syncs; the leader never does.
	fs := h.syncAsync("g", follower.MemberID, 2, nil)
	h.clock.Advance(10 * time.Second)
	if r := recv(t, fs); r.ErrorCode != codeRebalanceInProgress {
		t.Fatalf("follower sync: %d", r.ErrorCode)
	}
	if code := h.heartbeat("g", leader.MemberID, 2); code != codeUnknownMemberID {
		t.Fatalf("leader that never synced: %d", code)
	}
	r := recv(t, h.joinAsync(joinReq("g", follower.MemberID, withTimeouts(time.Minute, 10*time.Second))))
	if r.ErrorCode != 0 || r.Generation != 3 || r.LeaderID != follower.MemberID {
		t.Fatalf("rejoin: %+v", r)
	}
}

// TestParkedRequestsRespectContext: JoinGroup and SyncGroup return when the
// request's context ends.
func TestParkedRequestsRespectContext(t *testing.T) {
	h := newHarness(t, nil)
	first := h.c.JoinGroup(ctxBG, Client{ID: "c"}, joinReq("g", ""))
	ctx, cancel := context.WithCancel(ctxBG)
	done := make(chan *kmsg.JoinGroupResponse, 1)
	go func() { done <- h.c.JoinGroup(ctx, Client{ID: "c"}, joinReq("g", first.MemberID)) }()
	cancel()
	if r := recv(t, done); r.ErrorCode != codeCoordinatorNotAvailable || r.Version != 9 {
		t.Fatalf("cancelled join: %+v", r)
	}
	ids := h.stableGroup("s", 2)
	h.joinAsync(joinReq("s", ids[0]))
	r := recv(t, h.joinAsync(joinReq("s", ids[1])))
	follower := ids[0]
	if r.LeaderID == follower {
		follower = ids[1]
	}
	req := kmsg.NewPtrSyncGroupRequest()
	req.Version, req.Group, req.MemberID, req.Generation = 3, "s", follower, r.Generation
	sctx, scancel := context.WithTimeout(ctxBG, 10*time.Millisecond)
	defer scancel()
	if s := h.c.SyncGroup(sctx, req); s.ErrorCode != codeCoordinatorNotAvailable || s.Version != 3 {
		t.Fatalf("sync with an expired context: %+v", s)
	}
	req.Group = ""
	if s := h.c.SyncGroup(ctxBG, req); s.ErrorCode != codeInvalidGroupID {
		t.Fatalf("sync without group: %+v", s)
	}
}

package group

import (
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestOffsetCommitFetchRoundTrip: offsets and their metadata strings come
// back from OffsetFetch (KAFKA-PITFALLS "Groups and offsets").
func TestOffsetCommitFetchRoundTrip(t *testing.T) {
	h := newHarness(t, nil)
	ids := h.stableGroup("g", 1)
	allZero(t, h.commit("g", ids[0], 1, map[string]map[int32]int64{"t1": {0: 10, 3: 13}, "t2": {1: 21}}))
	code, got := h.fetch("g", map[string][]int32{"t1": {0, 1, 3}, "t2": {1}})
	if code != 0 {
		t.Fatalf("fetch: %d", code)
	}
	want := map[string]int64{tpKey("t1", 0): 10, tpKey("t1", 1): -1, tpKey("t1", 3): 13, tpKey("t2", 1): 21}
	for k, off := range want {
		p := got[k]
		if p.Offset != off || p.ErrorCode != 0 || p.Metadata == nil {
			t.Fatalf("%s: %+v", k, p)
		}
		if off >= 0 && *p.Metadata != "meta-"+strings.Split(k, "/")[0] {
			t.Fatalf("%s: metadata %q", k, *p.Metadata)
		}
	}
	// nil topics: every committed offset.
	if _, all := h.fetch("g", nil); len(all) != 3 || all[tpKey("t2", 1)].Offset != 21 {
		t.Fatalf("fetch all: %+v", all)
	}
	// Leader epochs (v6+) round trip too; the last commit wins.
	req := commitReq("g", ids[0], 1, map[string]map[int32]int64{"t1": {0: 11}})
	req.Topics[0].Partitions[0].LeaderEpoch = 4
	allZero(t, commitCodes(h.c.OffsetCommit(ctxBG, req)))
	if _, got := h.fetch("g", map[string][]int32{"t1": {0}}); got[tpKey("t1", 0)].Offset != 11 || got[tpKey("t1", 0)].LeaderEpoch != 4 {
		t.Fatalf("after recommit: %+v", got)
	}
}

// TestOffsetFetchUnknownGroup: a group that never committed gets -1 per
// partition and no error, not GROUP_ID_NOT_FOUND.
func TestOffsetFetchUnknownGroup(t *testing.T) {
	h := newHarness(t, nil)
	code, got := h.fetch("never", map[string][]int32{"t1": {0, 1}})
	if code != 0 || len(got) != 2 || got[tpKey("t1", 0)].Offset != -1 || got[tpKey("t1", 0)].ErrorCode != 0 {
		t.Fatalf("fetch: %d %+v", code, got)
	}
	// The old single-group versions too.
	for _, v := range []int16{1, 5, 7} {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Version, req.Group = v, "never"
		req.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "t1", Partitions: []int32{2}}}
		resp := h.c.OffsetFetch(ctxBG, req)
		if resp.ErrorCode != 0 || len(resp.Topics) != 1 || resp.Topics[0].Partitions[0].Offset != -1 {
			t.Fatalf("v%d: %+v", v, resp)
		}
	}
	if _, ok := h.c.lookup("never", kindNone); ok != 0 {
		t.Fatal("lookup")
	}
	if g, _ := h.c.lookup("never", kindNone); g != nil {
		t.Fatal("OffsetFetch created a group")
	}
}

// TestOffsetCommitValidation: who may commit.
func TestOffsetCommitValidation(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.OffsetMetadataMaxBytes = 8 })
	ids := h.stableGroup("g", 2)
	one := map[string]map[int32]int64{"t1": {0: 1}}
	check := func(name string, codes map[string]int16, want int16) {
		t.Helper()
		if got := codes[tpKey("t1", 0)]; got != want {
			t.Errorf("%s: %d, want %d", name, got, want)
		}
	}
	check("stale generation", h.commit("g", ids[0], 0, one), codeIllegalGeneration)
	check("unknown member", h.commit("g", "ghost", 1, one), codeUnknownMemberID)
	check("simple consumer on a live group", h.commit("g", "", -1, one), codeUnknownMemberID)
	if c := h.commit("g", ids[0], 1, map[string]map[int32]int64{"nope": {0: 1}}); c[tpKey("nope", 0)] != codeUnknownTopicOrPartition {
		t.Errorf("unknown topic: %v", c)
	}
	big := commitReq("g", ids[0], 1, one)
	big.Topics[0].Partitions[0].Metadata = kmsg.StringPtr("123456789")
	check("metadata too large", commitCodes(h.c.OffsetCommit(ctxBG, big)), codeOffsetMetadataTooLarge)

	// No group yet with a generation: ILLEGAL_GENERATION before v9,
	// GROUP_ID_NOT_FOUND from v9.
	check("v9 unknown group", h.commit("nope", "m", 3, one), codeGroupIDNotFound)
	old := commitReq("nope", "m", 3, one)
	old.Version = 8
	check("v8 unknown group", commitCodes(h.c.OffsetCommit(ctxBG, old)), codeIllegalGeneration)

	// Between JoinGroup and SyncGroup: REBALANCE_IN_PROGRESS.
	h.joinAsync(joinReq("g", ids[0]))
	r := recv(t, h.joinAsync(joinReq("g", ids[1])))
	check("completing rebalance", h.commit("g", ids[0], r.Generation, one), codeRebalanceInProgress)

	// A simple consumer (generation -1) creates its group.
	allZero(t, h.commit("simple", "", -1, one))
	if d := h.describe("simple"); d.State != "Empty" || d.ProtocolType != "" {
		t.Fatalf("simple group: %+v", d)
	}
	// Empty group id.
	check("empty group id", h.commit("", "", -1, one), codeInvalidGroupID)
}

// TestOffsetCommitStoreFailure: a commit whose records are not committed is
// not applied and the client is sent to look for the coordinator again.
func TestOffsetCommitStoreFailure(t *testing.T) {
	h := newHarness(t, nil)
	one := map[string]map[int32]int64{"t1": {0: 1}}
	allZero(t, h.commit("g", "", -1, one))
	cases := []struct {
		err  error
		want int16
	}{
		{kerr.NotEnoughReplicas, codeCoordinatorNotAvailable},
		{kerr.NotLeaderForPartition, codeNotCoordinator},
		{kerr.RequestTimedOut, codeCoordinatorNotAvailable},
		{kerr.MessageTooLarge, codeInvalidCommitOffsetSize},
		{errBoom, codeCoordinatorNotAvailable},
	}
	for _, tc := range cases {
		h.store("g").fail(tc.err)
		if got := h.commit("g", "", -1, map[string]map[int32]int64{"t1": {0: 99}})[tpKey("t1", 0)]; got != tc.want {
			t.Errorf("%v: %d, want %d", tc.err, got, tc.want)
		}
	}
	h.store("g").fail(nil)
	if _, got := h.fetch("g", map[string][]int32{"t1": {0}}); got[tpKey("t1", 0)].Offset != 1 {
		t.Fatalf("a failed commit was applied: %+v", got)
	}
}

// TestOffsetRetention: offsets of an empty group expire
// offsets.retention.minutes after it became empty (tombstones are written);
// the group goes with them. Offsets of a live group's topics stay.
func TestOffsetRetention(t *testing.T) {
	h := newHarness(t, func(o *Options) {
		o.OffsetsRetention = time.Hour
		o.OffsetsRetentionCheckInterval = 10 * time.Minute
	})
	allZero(t, h.commit("simple", "", -1, map[string]map[int32]int64{"t1": {0: 5}}))
	ids := h.stableGroup("live", 1, withMetadata("t1"), withTimeouts(time.Minute, time.Minute))
	allZero(t, h.commit("live", ids[0], 1, map[string]map[int32]int64{"t1": {0: 7}}))
	for range 8 { // 80 minutes, heartbeating
		h.clock.Advance(10 * time.Minute / 20)
		for range 19 {
			h.heartbeat("live", ids[0], 1)
			h.clock.Advance(10 * time.Minute / 20)
		}
		h.heartbeat("live", ids[0], 1)
	}
	if _, got := h.fetch("simple", map[string][]int32{"t1": {0}}); got[tpKey("t1", 0)].Offset != -1 {
		t.Fatalf("simple group offset did not expire: %+v", got)
	}
	if d := h.describe("simple"); d.State != "Dead" {
		t.Fatalf("expired simple group still exists: %+v", d)
	}
	if _, got := h.fetch("live", map[string][]int32{"t1": {0}}); got[tpKey("t1", 0)].Offset != 7 {
		t.Fatalf("subscribed offset expired: %+v", got)
	}
	tombstone := false
	for _, r := range h.store("simple").snapshot() {
		if k, _ := decodeKey(r.Key); k.typ == typeOffsetCommit && k.group == "simple" && r.Value == nil {
			tombstone = true
		}
	}
	if !tombstone {
		t.Fatal("no offset tombstone written")
	}
	// Once the live group empties, its offsets expire an hour later.
	leave := kmsg.NewPtrLeaveGroupRequest()
	leave.Version, leave.Group, leave.MemberID = 1, "live", ids[0]
	h.c.LeaveGroup(ctxBG, leave)
	h.clock.Advance(50 * time.Minute)
	if _, got := h.fetch("live", map[string][]int32{"t1": {0}}); got[tpKey("t1", 0)].Offset != 7 {
		t.Fatalf("expired too early: %+v", got)
	}
	h.clock.Advance(20 * time.Minute)
	if _, got := h.fetch("live", map[string][]int32{"t1": {0}}); got[tpKey("t1", 0)].Offset != -1 {
		t.Fatalf("did not expire: %+v", got)
	}
}

// TestOffsetCommitRetentionTime: OffsetCommit v2-v4 may set a retention
// time; such an offset expires then (written as OffsetCommitValue v1).
func TestOffsetCommitRetentionTime(t *testing.T) {
	h := newHarness(t, func(o *Options) {
		o.OffsetsRetention = 24 * time.Hour
		o.OffsetsRetentionCheckInterval = time.Minute
	})
	req := commitReq("g", "", -1, map[string]map[int32]int64{"t1": {0: 3}})
	req.Version, req.RetentionTimeMillis = 2, (5 * time.Minute).Milliseconds()
	allZero(t, commitCodes(h.c.OffsetCommit(ctxBG, req)))
	recs := h.store("g").snapshot()
	if v := recs[len(recs)-1].Value; v[1] != 1 {
		t.Fatalf("value version %d, want 1", v[1])
	}
	h.clock.Advance(6 * time.Minute)
	if _, got := h.fetch("g", map[string][]int32{"t1": {0}}); got[tpKey("t1", 0)].Offset != -1 {
		t.Fatalf("did not expire: %+v", got)
	}
}

// TestOffsetDelete: offsets of topics the group consumes cannot be deleted.
func TestOffsetDelete(t *testing.T) {
	h := newHarness(t, nil)
	ids := h.stableGroup("g", 1, withMetadata("t1"))
	allZero(t, h.commit("g", ids[0], 1, map[string]map[int32]int64{"t1": {0: 1}, "t2": {0: 2}}))
	del := func(group string, topics ...string) *kmsg.OffsetDeleteResponse {
		req := kmsg.NewPtrOffsetDeleteRequest()
		req.Group = group
		for _, t := range topics {
			req.Topics = append(req.Topics, kmsg.OffsetDeleteRequestTopic{Topic: t, Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}})
		}
		return h.c.OffsetDelete(ctxBG, req)
	}
	resp := del("g", "t1", "t2")
	if resp.ErrorCode != 0 || resp.Topics[0].Partitions[0].ErrorCode != codeGroupSubscribedToTopic || resp.Topics[1].Partitions[0].ErrorCode != 0 {
		t.Fatalf("delete: %+v", resp)
	}
	if _, got := h.fetch("g", nil); len(got) != 1 || got[tpKey("t1", 0)].Offset != 1 {
		t.Fatalf("after delete: %+v", got)
	}
	if resp := del("nope", "t1"); resp.ErrorCode != codeGroupIDNotFound {
		t.Fatalf("unknown group: %+v", resp)
	}
	// A live group that does not use the consumer protocol: NON_EMPTY_GROUP.
	connect := joinReq("c", "")
	connect.ProtocolType = "connect"
	first := h.join(connect)
	connect.MemberID = first.MemberID
	h.joinAsync(connect)
	if resp := del("c", "t1"); resp.ErrorCode != codeNonEmptyGroup {
		t.Fatalf("connect group: %+v", resp)
	}
}

// TestDeleteGroups: only empty groups are deleted, with their offsets.
func TestDeleteGroups(t *testing.T) {
	h := newHarness(t, nil)
	h.stableGroup("busy", 1)
	allZero(t, h.commit("idle", "", -1, map[string]map[int32]int64{"t1": {0: 1}}))
	req := kmsg.NewPtrDeleteGroupsRequest()
	req.Version = 2
	req.Groups = []string{"busy", "idle", "nope", ""}
	resp := h.c.DeleteGroups(ctxBG, req)
	want := []int16{codeNonEmptyGroup, 0, codeGroupIDNotFound, codeInvalidGroupID}
	for i, g := range resp.Groups {
		if g.Group != req.Groups[i] || g.ErrorCode != want[i] {
			t.Fatalf("group %d: %+v", i, g)
		}
	}
	if _, got := h.fetch("idle", map[string][]int32{"t1": {0}}); got[tpKey("t1", 0)].Offset != -1 {
		t.Fatalf("offset survived the delete: %+v", got)
	}
	var offsetGone, groupGone bool
	for _, r := range h.store("idle").snapshot() {
		k, _ := decodeKey(r.Key)
		offsetGone = offsetGone || k.group == "idle" && k.typ == typeOffsetCommit && r.Value == nil
		groupGone = groupGone || k.group == "idle" && k.typ == typeGroupMetadata && r.Value == nil
	}
	if !offsetGone || !groupGone {
		t.Fatalf("tombstones: offset %v group %v", offsetGone, groupGone)
	}
	if list := h.listGroups(nil, nil); len(list) != 1 || list[0].Group != "busy" {
		t.Fatalf("list after delete: %+v", list)
	}
}

func (h *harness) listGroups(states, types []string) []kmsg.ListGroupsResponseGroup {
	req := kmsg.NewPtrListGroupsRequest()
	req.Version = 5
	req.StatesFilter, req.TypesFilter = states, types
	return h.c.ListGroups(ctxBG, req).Groups
}

// TestListGroups: a group that was just used shows up with its state and
// protocol type; state and type filters apply, case-insensitively.
func TestListGroups(t *testing.T) {
	h := newHarness(t, nil)
	h.stableGroup("stable", 1)
	allZero(t, h.commit("simple", "", -1, map[string]map[int32]int64{"t1": {0: 1}}))
	h.joinNew("preparing")
	h.consumerJoin("modern", "m1", []string{"t1"})

	all := h.listGroups(nil, nil)
	got := map[string]kmsg.ListGroupsResponseGroup{}
	for _, g := range all {
		got[g.Group] = g
	}
	want := map[string][3]string{
		"stable":    {"Stable", "consumer", "classic"},
		"simple":    {"Empty", "", "classic"},
		"preparing": {"PreparingRebalance", "consumer", "classic"},
		"modern":    {"Stable", "consumer", "consumer"},
	}
	if len(got) != len(want) {
		t.Fatalf("list: %+v", all)
	}
	for name, w := range want {
		g := got[name]
		if g.GroupState != w[0] || g.ProtocolType != w[1] || g.GroupType != w[2] {
			t.Errorf("%s: %+v", name, g)
		}
	}
	if l := h.listGroups([]string{"stable"}, nil); len(l) != 2 {
		t.Errorf("states filter: %+v", l)
	}
	if l := h.listGroups([]string{"Empty", "PreparingRebalance"}, []string{"Classic"}); len(l) != 2 {
		t.Errorf("states and types filter: %+v", l)
	}
	if l := h.listGroups(nil, []string{"consumer"}); len(l) != 1 || l[0].Group != "modern" {
		t.Errorf("types filter: %+v", l)
	}
}

// TestDescribeGroups covers the states DescribeGroups reports.
func TestDescribeGroups(t *testing.T) {
	h := newHarness(t, nil)
	ids := h.stableGroup("g", 2)
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Version = 5
	req.Groups = []string{"g", "nope", ""}
	req.IncludeAuthorizedOperations = true
	resp := h.c.DescribeGroups(ctxBG, req)
	g := resp.Groups[0]
	if g.State != "Stable" || g.Protocol != "range" || len(g.Members) != 2 || g.AuthorizedOperations != allGroupOperations {
		t.Fatalf("g: %+v", g)
	}
	for _, m := range g.Members {
		if string(m.MemberAssignment) != "assignment-"+m.MemberID || string(m.ProtocolMetadata) != "range-meta" {
			t.Fatalf("member: %+v", m)
		}
	}
	if n := resp.Groups[1]; n.State != "Dead" || n.ErrorCode != 0 {
		t.Fatalf("unknown group: %+v", n)
	}
	if e := resp.Groups[2]; e.ErrorCode != codeInvalidGroupID {
		t.Fatalf("empty id: %+v", e)
	}
	// While rebalancing, no protocol and no member metadata.
	h.joinAsync(joinReq("g", ids[0]))
	if d := h.describe("g"); d.State != "PreparingRebalance" || d.Protocol != "" || len(d.Members[0].MemberAssignment) != 0 {
		t.Fatalf("rebalancing: %+v", d)
	}
}

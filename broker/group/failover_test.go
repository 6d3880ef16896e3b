package group

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// failover moves every partition to a new coordinator that loads the
// records the old one wrote (compacted when compact is set), as a new
// partition leader does.
func (h *harness) failover(compact bool) *harness {
	h.t.Helper()
	n := &harness{t: h.t, clock: h.clock, stores: make(map[int32]*memStore), topics: h.topics, opts: h.opts}
	n.c = NewCoordinator(h.opts)
	h.t.Cleanup(n.c.Close)
	h.c.Close()
	for p, s := range h.stores {
		recs := s.snapshot()
		if compact {
			recs = compactRecords(recs)
		}
		n.stores[p] = &memStore{records: slices.Clone(recs)}
		if err := n.c.BecomeLeader(p, n.stores[p], seqOf(recs)); err != nil {
			h.t.Fatal(err)
		}
	}
	return n
}

// compactRecords keeps the last record of every key, and drops tombstones,
// as log compaction eventually does.
func compactRecords(recs []Record) []Record {
	last := map[string]int{}
	for i, r := range recs {
		last[string(r.Key)] = i
	}
	var out []Record
	for i, r := range recs {
		if last[string(r.Key)] == i && r.Value != nil {
			out = append(out, r)
		}
	}
	return out
}

// TestFailover: the records written by one coordinator, replayed by a new
// one, reproduce the groups (members, generations, assignments, epochs) and
// the offsets; members keep working and timers are armed again.
func TestFailover(t *testing.T) {
	for _, compact := range []bool{false, true} {
		t.Run(map[bool]string{false: "log", true: "compacted"}[compact], func(t *testing.T) {
			h := newHarness(t, nil)
			ids := h.stableGroup("classic", 2, withMetadata("t1"))
			allZero(t, h.commit("classic", ids[0], 1, map[string]map[int32]int64{"t1": {0: 10, 1: 11}}))
			allZero(t, h.commit("simple", "", -1, map[string]map[int32]int64{"t2": {2: 22}}))
			allZero(t, h.commit("deleted", "", -1, map[string]map[int32]int64{"t2": {0: 1}}))
			del := kmsg.NewPtrDeleteGroupsRequest()
			del.Groups = []string{"deleted"}
			h.c.DeleteGroups(ctxBG, del)
			h.joinNew("empty") // created, never completed a rebalance

			a, b := &client{id: "a", topics: []string{"t1", "t2"}}, &client{id: "b", topics: []string{"t1"}}
			h.settle("modern", []*client{a, b})
			allZero(t, h.commit("modern", "a", a.epoch, map[string]map[int32]int64{"t1": {3: 33}}))
			// A third member leaves again: the group epoch moves on.
			c := &client{id: "c", topics: []string{"t1"}}
			h.step("modern", c)
			h.cgHeartbeat(cgReq("modern", "c", leaveGroupMemberEpoch, nil, nil))
			h.settle("modern", []*client{a, b})

			beforeClassic := h.describe("classic")
			beforeModern := h.consumerDescribe("modern")
			beforeList := h.listGroups(nil, nil)
			_, beforeOffsets := h.fetch("classic", nil)

			n := h.failover(compact)
			// "empty" had a join parked: the new coordinator only knows the
			// empty group record written at its creation.
			wantList := slices.DeleteFunc(slices.Clone(beforeList), func(g kmsg.ListGroupsResponseGroup) bool { return g.Group == "empty" })
			gotList := slices.DeleteFunc(n.listGroups(nil, nil), func(g kmsg.ListGroupsResponseGroup) bool { return g.Group == "empty" })
			if !reflect.DeepEqual(gotList, wantList) {
				t.Fatalf("list:\n%+v\n%+v", gotList, wantList)
			}
			if d := n.describe("empty"); d.State != "Empty" {
				t.Fatalf("empty group: %+v", d)
			}
			if d := n.describe("classic"); !reflect.DeepEqual(d, beforeClassic) {
				t.Fatalf("classic group:\n%+v\n%+v", d, beforeClassic)
			}
			if d := n.consumerDescribe("modern"); !reflect.DeepEqual(d, beforeModern) {
				t.Fatalf("consumer group:\n%+v\n%+v", d, beforeModern)
			}
			if _, got := n.fetch("classic", nil); !reflect.DeepEqual(got, beforeOffsets) {
				t.Fatalf("offsets:\n%+v\n%+v", got, beforeOffsets)
			}
			if _, got := n.fetch("simple", map[string][]int32{"t2": {2}}); got[tpKey("t2", 2)].Offset != 22 {
				t.Fatalf("simple offsets: %+v", got)
			}
			if _, got := n.fetch("deleted", map[string][]int32{"t2": {0}}); got[tpKey("t2", 0)].Offset != -1 {
				t.Fatalf("deleted group offsets came back: %+v", got)
			}
			// Members go on: the classic generation and the KIP-848 epochs
			// are the same.
			if code := n.heartbeat("classic", ids[0], 1); code != 0 {
				t.Fatalf("classic heartbeat after failover: %d", code)
			}
			for _, cl := range []*client{a, b} {
				if r := n.step("modern", cl); r.ErrorCode != 0 {
					t.Fatalf("consumer heartbeat after failover: %d", r.ErrorCode)
				}
			}
			n.checkExclusive("modern", []*client{a, b})
			// Session timers were armed at load: ids[1] never heartbeats.
			for range 3 {
				n.clock.Advance(4 * time.Second)
				n.heartbeat("classic", ids[0], 1)
			}
			if code := n.heartbeat("classic", ids[1], 1); code != codeUnknownMemberID {
				t.Fatalf("member without heartbeats after failover: %d", code)
			}
		})
	}
}

// TestResignWhileAppending: a group whose append fails because the
// partition was lost answers NOT_COORDINATOR and changes nothing.
func TestAppendFailureLeavesStateUnchanged(t *testing.T) {
	h := newHarness(t, nil)
	ids := h.stableGroup("g", 2)
	h.joinAsync(joinReq("g", ids[0]))
	r := recv(t, h.joinAsync(joinReq("g", ids[1])))
	follower := ids[1]
	if r.LeaderID == follower {
		follower = ids[0]
	}
	fs := h.syncAsync("g", follower, 2, nil)
	h.store("g").fail(errBoom)
	ls := recv(t, h.syncAsync("g", r.LeaderID, 2, map[string]string{ids[0]: "x", ids[1]: "y"}))
	if ls.ErrorCode != codeCoordinatorNotAvailable {
		t.Fatalf("leader sync with a failing store: %d", ls.ErrorCode)
	}
	if s := recv(t, fs); s.ErrorCode != codeCoordinatorNotAvailable {
		t.Fatalf("follower sync: %d", s.ErrorCode)
	}
	// The group rebalances again rather than handing out an assignment
	// that is not in the log.
	if s := h.state("g"); s != "PreparingRebalance" {
		t.Fatalf("state %s", s)
	}
	h.store("g").fail(nil)

	// A KIP-848 join whose records fail leaves no member behind.
	h.store("m").fail(errBoom)
	if r := h.cgHeartbeat(cgReq("m", "x", 0, []string{"t1"}, nil)); r.ErrorCode != codeCoordinatorNotAvailable {
		t.Fatalf("consumer join with a failing store: %d", r.ErrorCode)
	}
	if d := h.consumerDescribe("m"); d.ErrorCode != codeGroupIDNotFound {
		t.Fatalf("group after failed join: %+v", d)
	}
}

package share

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (e *env) alter(group, topic string, partition int32, start int64) *kmsg.AlterShareGroupOffsetsResponse {
	req := kmsg.NewPtrAlterShareGroupOffsetsRequest()
	req.GroupID = group
	req.Topics = []kmsg.AlterShareGroupOffsetsRequestTopic{{Topic: topic, Partitions: []kmsg.AlterShareGroupOffsetsRequestTopicPartition{{Partition: partition, StartOffset: start}}}}
	return e.c.AlterShareGroupOffsets(context.Background(), req)
}

func (e *env) describeOffsets(group string, topics []kmsg.DescribeShareGroupOffsetsRequestGroupTopic) kmsg.DescribeShareGroupOffsetsResponseGroup {
	req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	req.Version = 1
	req.Groups = []kmsg.DescribeShareGroupOffsetsRequestGroup{{GroupID: group, Topics: topics}}
	return e.c.DescribeShareGroupOffsets(context.Background(), req).Groups[0]
}

func (e *env) deleteOffsets(group string, topics ...string) *kmsg.DeleteShareGroupOffsetsResponse {
	req := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
	req.GroupID = group
	for _, t := range topics {
		req.Topics = append(req.Topics, kmsg.DeleteShareGroupOffsetsRequestTopic{Topic: t})
	}
	return e.c.DeleteShareGroupOffsets(context.Background(), req)
}

// franz-go's TestShareGroupOffsetsAdmin: altering the offsets of a group
// that does not exist creates it; describing them, explicitly and for all
// topics, shows the offset; deleting them succeeds.
func TestOffsetsAdminRoundTrip(t *testing.T) {
	e := newEnv(t)
	r := e.alter("g", "foo", 0, 8)
	if r.ErrorCode != 0 || len(r.Topics) != 1 || r.Topics[0].TopicID != idFoo || r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("alter %+v", r)
	}
	for _, topics := range [][]kmsg.DescribeShareGroupOffsetsRequestGroupTopic{{{Topic: "foo", Partitions: []int32{0, 1}}}, nil} {
		d := e.describeOffsets("g", topics)
		if d.ErrorCode != 0 || len(d.Topics) != 1 || d.Topics[0].TopicID != idFoo {
			t.Fatalf("describe %+v", d)
		}
		p := d.Topics[0].Partitions[0]
		if p.ErrorCode != 0 || p.StartOffset != 8 || p.Lag != 92 {
			t.Fatalf("describe partition 0: %+v", p)
		}
		if topics != nil {
			if q := d.Topics[0].Partitions[1]; q.StartOffset != -1 || q.ErrorCode != 0 || q.Lag != -1 {
				t.Fatalf("uninitialized partition %+v", q)
			}
		} else if len(d.Topics[0].Partitions) != 1 {
			t.Fatalf("all topics lists only initialized partitions: %+v", d.Topics[0].Partitions)
		}
	}
	dr := e.deleteOffsets("g", "foo", "bar", "nope")
	if dr.ErrorCode != 0 || len(dr.Topics) != 3 || dr.Topics[0].ErrorCode != 0 ||
		dr.Topics[1].ErrorCode != kerr.UnknownTopicOrPartition.Code || dr.Topics[2].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("delete %+v", dr)
	}
	if d := e.describeOffsets("g", nil); d.ErrorCode != 0 || len(d.Topics) != 0 {
		t.Fatalf("after delete %+v", d)
	}
	// The share coordinator's state is gone too.
	sum := e.state.ReadShareGroupStateSummary(context.Background(), &kmsg.ReadShareGroupStateSummaryRequest{GroupID: "g",
		Topics: []kmsg.ReadShareGroupStateSummaryRequestTopic{{TopicID: idFoo, Partitions: []kmsg.ReadShareGroupStateSummaryRequestTopicPartition{{Partition: 0}}}}})
	if p := sum.Topics[0].Partitions[0]; p.StartOffset != -1 {
		t.Fatalf("share state kept %+v", p)
	}
}

// Alter bumps the group epoch: the state is initialized at the new epoch,
// which fences share-partition leaders holding the older one.
func TestAlterBumpsStateEpoch(t *testing.T) {
	e := newEnv(t)
	e.heartbeat("g", "m", 0, "foo")
	e.waitInitialized("g", idFoo, 3)
	e.heartbeat("g", "m", -1)
	r := e.alter("g", "foo", 1, 5)
	if r.ErrorCode != 0 || r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("alter %+v", r)
	}
	sum := e.state.ReadShareGroupStateSummary(context.Background(), &kmsg.ReadShareGroupStateSummaryRequest{GroupID: "g",
		Topics: []kmsg.ReadShareGroupStateSummaryRequestTopic{{TopicID: idFoo, Partitions: []kmsg.ReadShareGroupStateSummaryRequestTopicPartition{{Partition: 1}}}}})
	p := sum.Topics[0].Partitions[0]
	if p.StartOffset != 5 || p.StateEpoch <= 1 || p.DeliveryCompleteCount != 0 {
		t.Fatalf("state %+v", p)
	}
}

func TestOffsetsAdminErrors(t *testing.T) {
	e := newEnv(t)
	e.heartbeat("g", "m", 0, "foo")
	if r := e.alter("g", "foo", 0, 1); r.ErrorCode != kerr.NonEmptyGroup.Code || r.Topics[0].Partitions[0].ErrorCode != kerr.NonEmptyGroup.Code {
		t.Fatalf("alter of a group with members: %+v", r)
	}
	if r := e.deleteOffsets("g", "foo"); r.ErrorCode != kerr.NonEmptyGroup.Code {
		t.Fatalf("delete of a group with members: %+v", r)
	}
	if r := e.alter("h", "nope", 0, 1); r.ErrorCode != 0 || r.Topics[0].Partitions[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("unknown topic %+v", r)
	}
	if r := e.alter("h", "foo", 7, 1); r.Topics[0].Partitions[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("unknown partition %+v", r)
	}
	if d := e.describeOffsets("nobody", nil); d.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("describe unknown group %+v", d)
	}
	if r := e.deleteOffsets("nobody", "foo"); r.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("delete unknown group %+v", r)
	}
	d := e.describeOffsets("g", []kmsg.DescribeShareGroupOffsetsRequestGroupTopic{{Topic: "nope", Partitions: []int32{0}}})
	if d.Topics[0].Partitions[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("describe unknown topic %+v", d)
	}
	e.other["cg"] = "classic"
	if r := e.alter("cg", "foo", 0, 1); r.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("alter of a classic group %+v", r)
	}
}

func TestDeleteGroup(t *testing.T) {
	e := newEnv(t)
	if _, ok := e.c.DeleteGroup(context.Background(), "g"); ok {
		t.Fatal("an unknown group is claimed")
	}
	e.heartbeat("g", "m", 0, "foo")
	e.waitInitialized("g", idFoo, 3)
	if code, ok := e.c.DeleteGroup(context.Background(), "g"); !ok || code != kerr.NonEmptyGroup.Code {
		t.Fatalf("delete with members: %d %v", code, ok)
	}
	e.heartbeat("g", "m", -1)
	if code, ok := e.c.DeleteGroup(context.Background(), "g"); !ok || code != 0 {
		t.Fatalf("delete: %d %v", code, ok)
	}
	if e.c.GroupType("g") != "" {
		t.Fatal("group kept")
	}
	e.failover()
	if e.c.GroupType("g") != "" {
		t.Fatal("group back after reload")
	}
	if r := e.heartbeat("g", "m", 0, "foo"); r.ErrorCode != 0 || r.MemberEpoch != 1 {
		t.Fatalf("a new group of the same id: %+v", r)
	}
}

func TestDescribeAndList(t *testing.T) {
	e := newEnv(t)
	e.heartbeat("g", "m", 0, "foo")
	e.alter("empty", "bar", 0, 0)
	e.other["cg"] = "consumer"
	req := kmsg.NewPtrShareGroupDescribeRequest()
	req.GroupIDs, req.IncludeAuthorizedOperations = []string{"g", "nobody", "cg"}, true
	resp := e.c.ShareGroupDescribe(context.Background(), req)
	g := resp.Groups[0]
	if g.ErrorCode != 0 || g.GroupState != "Stable" || g.Assignor != "simple" || g.GroupEpoch != 1 || len(g.Members) != 1 ||
		g.Members[0].ClientID != "cid" || g.Members[0].ClientHost != "/127.0.0.1" || g.AuthorizedOperations != allGroupOperations {
		t.Fatalf("described %+v", g)
	}
	if resp.Groups[1].ErrorCode != kerr.GroupIDNotFound.Code || resp.Groups[2].ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("errors %+v", resp.Groups[1:])
	}
	all, _ := e.c.ListGroups(nil, nil)
	if len(all) != 2 || all[0].Group != "empty" || all[0].GroupState != "Empty" || all[1].GroupState != "Stable" || all[1].GroupType != "share" || all[1].ProtocolType != "share" {
		t.Fatalf("list %+v", all)
	}
	if got, _ := e.c.ListGroups([]string{"STABLE"}, nil); len(got) != 1 || got[0].Group != "g" {
		t.Fatalf("states filter %+v", got)
	}
	if got, _ := e.c.ListGroups(nil, []string{"consumer"}); len(got) != 0 {
		t.Fatalf("types filter %+v", got)
	}
	if dg, ok := e.c.DescribeGroup("g"); !ok || dg.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("DescribeGroups %+v", dg)
	}
	if _, ok := e.c.DescribeGroup("cg"); ok {
		t.Fatal("a consumer group claimed")
	}
}

// Many members heartbeat concurrently (race detector); every member ends
// at the group's epoch and every partition is assigned.
func TestConcurrentHeartbeats(t *testing.T) {
	e := newEnv(t)
	var wg sync.WaitGroup
	epochs := make([]int32, 8)
	for i := range epochs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprintf("m%d", i)
			r := e.heartbeat("g", id, 0, "foo", "bar")
			for range 20 {
				if r.ErrorCode != 0 {
					t.Errorf("%s: %d", id, r.ErrorCode)
					return
				}
				epochs[i] = r.MemberEpoch
				r = e.heartbeat("g", id, r.MemberEpoch)
			}
		}()
	}
	wg.Wait()
	e.waitInitialized("g", idFoo, 3)
	e.waitInitialized("g", idBar, 2)
	owned := map[tp]bool{}
	var epoch int32
	for i := range epochs {
		r := e.heartbeat("g", fmt.Sprintf("m%d", i), 0, "foo", "bar")
		epoch = max(epoch, r.MemberEpoch)
		for id, ps := range assigned(r) {
			for _, p := range ps {
				owned[tp{id, p}] = true
			}
		}
	}
	if len(owned) != 5 {
		t.Fatalf("assigned %v", owned)
	}
	if d := e.describe("g"); d.GroupEpoch != epoch || d.AssignmentEpoch != epoch {
		t.Fatalf("described %+v, members at %d", d, epoch)
	}
}

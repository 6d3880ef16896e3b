package controller

import (
	"slices"
	"testing"
)

func live(ids ...int32) func(int32) bool {
	return func(id int32) bool { return slices.Contains(ids, id) }
}

func TestElectLeader(t *testing.T) {
	p := &Partition{Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, Leader: 1}
	cases := []struct {
		name      string
		leader    int32
		isr       []int32
		election  electionType
		live      []int32
		want      int32
		wantUncln bool
	}{
		{"current leader valid stays", 2, []int32{1, 2, 3}, electionOnline, []int32{1, 2, 3}, 2, false},
		{"first ISR member in replica order", 1, []int32{3, 2}, electionOnline, []int32{2, 3}, 2, false},
		{"skips dead ISR members", 1, []int32{1, 2, 3}, electionOnline, []int32{3}, 3, false},
		{"offline when no ISR member lives", 1, []int32{1}, electionOnline, []int32{2, 3}, NoLeader, false},
		{"unclean picks first live replica", 1, []int32{1}, electionUnclean, []int32{3, 2}, 2, true},
		{"unclean prefers the ISR", 1, []int32{1, 3}, electionUnclean, []int32{2, 3}, 3, false},
		{"unclean with nobody live", 1, []int32{1}, electionUnclean, nil, NoLeader, false},
		{"preferred moves back", 2, []int32{1, 2, 3}, electionPreferred, []int32{1, 2, 3}, 1, false},
		{"preferred not in ISR keeps leader", 2, []int32{2, 3}, electionPreferred, []int32{1, 2, 3}, 2, false},
		{"preferred dead keeps leader", 2, []int32{1, 2, 3}, electionPreferred, []int32{2, 3}, 2, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			q := *p
			q.Leader = c.leader
			got, by := electLeader(&q, q.Replicas, c.isr, nil, changeRequest{election: c.election, acceptable: live(c.live...)})
			if unclean := by == electedUnclean; got != c.want || unclean != c.wantUncln {
				t.Fatalf("got %d unclean=%v, want %d unclean=%v", got, unclean, c.want, c.wantUncln)
			}
		})
	}
}

func TestBuildChangeUncleanShrinksISR(t *testing.T) {
	tp := &Topic{Name: "t", ID: [16]byte{1}}
	p := &Partition{Topic: "t", Replicas: []int32{1, 2, 3}, ISR: []int32{1}, Leader: NoLeader}
	c := buildChange(tp, p, changeRequest{election: electionUnclean, acceptable: live(3)})
	if c == nil || c.Leader != 3 || !slices.Equal(c.ISR, []int32{3}) {
		t.Fatalf("got %+v", c)
	}
	if c := buildChange(tp, p, changeRequest{election: electionOnline, acceptable: live(3)}); c != nil {
		t.Fatalf("clean election of an offline partition with a dead ISR changed it: %+v", c)
	}
}

// Fencing (KIP-631): a fenced broker leaves every ISR, except where it is the
// last member: that ISR is kept and the partition goes offline (leader -1).
func TestFencingRules(t *testing.T) {
	tf := newTestFSM(t)
	tf.registerLive(1, 2, 3)
	tf.createTopic("a", 1, []int32{1, 2, 3}, []int32{2, 3, 1}, []int32{1})
	before := tf.img().Partition("a", 0)
	tf.fence(1)
	img := tf.img()

	p0 := img.Partition("a", 0)
	if p0.Leader != 2 || !slices.Equal(p0.ISR, []int32{2, 3}) {
		t.Fatalf("a-0: leader %d isr %v, want 2 [2 3]", p0.Leader, p0.ISR)
	}
	if p0.LeaderEpoch != before.LeaderEpoch+1 || p0.PartitionEpoch != before.PartitionEpoch+1 {
		t.Fatalf("a-0 epochs %d/%d, want %d/%d", p0.LeaderEpoch, p0.PartitionEpoch, before.LeaderEpoch+1, before.PartitionEpoch+1)
	}
	p1 := img.Partition("a", 1)
	if p1.Leader != 2 || !slices.Equal(p1.ISR, []int32{2, 3}) || p1.LeaderEpoch != 0 || p1.PartitionEpoch != 1 {
		t.Fatalf("a-1 (follower removed): %+v", p1)
	}
	p2 := img.Partition("a", 2)
	if p2.Leader != NoLeader || !slices.Equal(p2.ISR, []int32{1}) || p2.LeaderEpoch != 1 {
		t.Fatalf("a-2 (last ISR member fenced): %+v, want offline with ISR [1]", p2)
	}
	if !img.Brokers[1].Fenced {
		t.Fatal("broker 1 not fenced")
	}
	// The previous image is untouched (copy on write).
	if before.Leader != 1 || len(before.ISR) != 3 {
		t.Fatalf("old image modified: %+v", before)
	}

	// Fencing 2 too leaves a-0 and a-1 with ISR [3]; fencing 3 takes them offline.
	tf.fence(2)
	tf.fence(3)
	img = tf.img()
	for i := int32(0); i < 2; i++ {
		if p := img.Partition("a", i); p.Leader != NoLeader || !slices.Equal(p.ISR, []int32{3}) {
			t.Fatalf("a-%d: %+v, want offline with ISR [3]", i, p)
		}
	}

	// Unfencing 3 brings back the partitions whose ISR it is in; a-2 stays offline.
	recs := append([]record{&unfenceBrokerRecord{ID: 3, Epoch: img.Brokers[3].Epoch}}, offlineChanges(img, 3, policy{})...)
	tf.apply(recs...)
	img = tf.img()
	for i := int32(0); i < 2; i++ {
		if p := img.Partition("a", i); p.Leader != 3 {
			t.Fatalf("a-%d after unfence: %+v", i, p)
		}
	}
	if p := img.Partition("a", 2); p.Leader != NoLeader {
		t.Fatalf("a-2 elected an unclean leader: %+v", p)
	}
}

func TestUncleanByTopicAndBrokerConfig(t *testing.T) {
	tf := newTestFSM(t)
	tf.registerLive(1, 2)
	tf.createTopic("clean", 1, []int32{1, 2})
	tf.createTopic("dirty", 2, []int32{1, 2})
	tf.apply(&setConfigRecord{ResourceType: resourceTopic, Resource: "dirty", Key: uncleanConfig, Value: ptrTo("true")})
	// Shrink both ISRs to [1] first, as a leader would, then lose broker 1.
	for _, name := range []string{"clean", "dirty"} {
		t0 := tf.img().Topics[name]
		tf.apply(&partitionChangeRecord{Topic: name, TopicID: t0.ID, Partition: 0, Leader: 1, ISR: []int32{1}})
	}
	tf.fence(1)
	img := tf.img()
	if p := img.Partition("clean", 0); p.Leader != NoLeader || !slices.Equal(p.ISR, []int32{1}) {
		t.Fatalf("clean: %+v", p)
	}
	if p := img.Partition("dirty", 0); p.Leader != 2 || !slices.Equal(p.ISR, []int32{2}) || p.LeaderEpoch != 1 {
		t.Fatalf("dirty (topic unclean): %+v", p)
	}

	// The broker default applies to topics without an override; a topic
	// override of false wins over it.
	if got := electionFor(img, img.Topics["clean"], true); got != electionUnclean {
		t.Fatalf("broker default true: %v", got)
	}
	tf.apply(&setConfigRecord{ResourceType: resourceTopic, Resource: "clean", Key: uncleanConfig, Value: ptrTo("false")})
	img = tf.img()
	if got := electionFor(img, img.Topics["clean"], true); got != electionOnline {
		t.Fatalf("topic false over broker true: %v", got)
	}
	// The periodic offline check with the broker default on elects it.
	tf.apply(&setConfigRecord{ResourceType: resourceTopic, Resource: "clean", Key: uncleanConfig, Value: nil})
	recs := offlineChanges(tf.img(), -1, policy{uncleanDefault: true})
	if len(recs) != 1 {
		t.Fatalf("offline changes %v", recs)
	}
	tf.apply(recs...)
	if p := tf.img().Partition("clean", 0); p.Leader != 2 || !slices.Equal(p.ISR, []int32{2}) {
		t.Fatalf("clean after unclean election: %+v", p)
	}
}

func TestPreferredChanges(t *testing.T) {
	tf := newTestFSM(t)
	tf.registerLive(1, 2, 3)
	tf.createTopic("t", 1, []int32{1, 2}, []int32{2, 3})
	tf.fence(1)
	if len(preferredChanges(tf.img(), policy{})) != 0 {
		t.Fatal("preferred replica is fenced, yet a change")
	}
	img := tf.img()
	tf.apply(&unfenceBrokerRecord{ID: 1, Epoch: img.Brokers[1].Epoch})
	if len(preferredChanges(tf.img(), policy{})) != 0 {
		t.Fatal("preferred replica not in ISR, yet a change")
	}
	tp := tf.img().Topics["t"]
	tf.apply(&partitionChangeRecord{Topic: "t", TopicID: tp.ID, Partition: 0, Leader: 2, ISR: []int32{2, 1}})
	recs := preferredChanges(tf.img(), policy{})
	if len(recs) != 1 {
		t.Fatalf("changes %v", recs)
	}
	tf.apply(recs...)
	if p := tf.img().Partition("t", 0); p.Leader != 1 || p.LeaderEpoch != 2 {
		t.Fatalf("after rebalance %+v", p)
	}
}

package controller

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestCreateTopicsDefaultsAndResponse(t *testing.T) {
	h := newCtlHarness(t, func(o *Options) { o.DefaultNumPartitions, o.DefaultReplicationFactor = 4, 2 })
	h.live(1, 2, 3)
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version = 7
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "orders", -1, -1
	rt.Configs = append(rt.Configs, kmsg.CreateTopicsRequestTopicConfig{Name: "retention.ms", Value: ptrTo("1000")})
	req.Topics = append(req.Topics, rt)
	resp := h.do(req).(*kmsg.CreateTopicsResponse)
	st := resp.Topics[0]
	if st.ErrorCode != 0 || st.NumPartitions != 4 || st.ReplicationFactor != 2 || st.TopicID == [16]byte{} {
		t.Fatalf("response %+v", st)
	}
	if len(st.Configs) != 1 || st.Configs[0].Name != "retention.ms" || *st.Configs[0].Value != "1000" {
		t.Fatalf("configs %+v", st.Configs)
	}
	tp := h.img().Topics["orders"]
	if tp == nil || tp.ID != st.TopicID || tp.Configs["retention.ms"] != "1000" || len(tp.Partitions) != 4 {
		t.Fatalf("topic %+v", tp)
	}
	for _, p := range tp.Partitions {
		if len(p.Replicas) != 2 || !slices.Equal(p.ISR, p.Replicas) || p.Leader != p.Replicas[0] || p.LeaderEpoch != 0 {
			t.Fatalf("partition %+v", p)
		}
	}
}

func TestCreateTopicsValidateOnly(t *testing.T) {
	h := newCtlHarness(t)
	h.live(1)
	req := kmsg.NewPtrCreateTopicsRequest()
	req.ValidateOnly = true
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "x", 3, 1
	req.Topics = append(req.Topics, rt)
	resp := h.do(req).(*kmsg.CreateTopicsResponse)
	if resp.Topics[0].ErrorCode != 0 || resp.Topics[0].NumPartitions != 3 {
		t.Fatalf("%+v", resp.Topics[0])
	}
	if h.img().Topics["x"] != nil {
		t.Fatal("validateOnly created the topic")
	}
}

func TestCreateTopicsErrors(t *testing.T) {
	h := newCtlHarness(t, func(o *Options) {
		o.ValidateTopicConfig = func(name, value string) error {
			if name == "cleanup.policy" && value != "delete" && value != "compact" {
				return errors.New("Invalid value " + value + " for configuration cleanup.policy")
			}
			return nil
		}
	})
	h.live(1, 2)
	h.createTopic("exists", 1, 1)
	h.createTopic("a.b", 1, 1)
	type topic struct {
		name   string
		n      int32
		rf     int16
		assign [][]int32
		cfg    map[string]*string
	}
	cases := []struct {
		topic topic
		want  error
		msg   string
	}{
		{topic{name: "", n: 1, rf: 1}, kerr.InvalidTopicException, "empty"},
		{topic{name: "..", n: 1, rf: 1}, kerr.InvalidTopicException, `"." or ".."`},
		{topic{name: strings.Repeat("x", 250), n: 1, rf: 1}, kerr.InvalidTopicException, "249"},
		{topic{name: "bad/name", n: 1, rf: 1}, kerr.InvalidTopicException, "ASCII alphanumerics"},
		{topic{name: strings.Repeat("x", 249), n: 1, rf: 1}, nil, ""},
		{topic{name: "exists", n: 1, rf: 1}, kerr.TopicAlreadyExists, "already exists"},
		{topic{name: "__cluster_metadata", n: 1, rf: 1}, kerr.InvalidRequest, "prohibited"},
		{topic{name: "a_b", n: 1, rf: 1}, kerr.InvalidTopicException, "collides"},
		{topic{name: "rf3", n: 1, rf: 3}, kerr.InvalidReplicationFactor, "only 2 broker(s)"},
		{topic{name: "rf0", n: 1, rf: 0}, kerr.InvalidReplicationFactor, "larger than 0"},
		{topic{name: "p0", n: 0, rf: 1}, kerr.InvalidPartitions, "non-positive"},
		{topic{name: "pneg", n: -2, rf: 1}, kerr.InvalidPartitions, "non-positive"},
		{topic{name: "huge", n: 1 << 30, rf: 1}, kerr.InvalidPartitions, "limit"},
		{topic{name: "cfg", n: 1, rf: 1, cfg: map[string]*string{"cleanup.policy": ptrTo("bogus")}}, kerr.InvalidConfig, "Invalid value bogus"},
		{topic{name: "cfgnull", n: 1, rf: 1, cfg: map[string]*string{"retention.ms": nil}}, kerr.InvalidConfig, "Null value"},
		{topic{name: "asg-rf", n: -1, rf: 2, assign: [][]int32{{1}}}, kerr.InvalidRequest, "replication factor was not set to -1"},
		{topic{name: "asg-n", n: 1, rf: -1, assign: [][]int32{{1}}}, kerr.InvalidRequest, "numPartitions was not set to -1"},
		{topic{name: "asg-unknown", n: -1, rf: -1, assign: [][]int32{{7}}}, kerr.InvalidReplicaAssignment, "no such broker"},
		{topic{name: "asg-dup", n: -1, rf: -1, assign: [][]int32{{1, 1}}}, kerr.InvalidReplicaAssignment, "more than once"},
		{topic{name: "asg-mixed", n: -1, rf: -1, assign: [][]int32{{1, 2}, {1}}}, kerr.InvalidReplicaAssignment, "not consistent"},
		{topic{name: "asg-empty", n: -1, rf: -1, assign: [][]int32{{}}}, kerr.InvalidReplicaAssignment, "empty replica list"},
		{topic{name: "asg-ok", n: -1, rf: -1, assign: [][]int32{{2, 1}, {1, 2}}}, nil, ""},
	}
	for _, c := range cases {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.Version = 7
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = c.topic.name, c.topic.n, c.topic.rf
		for i, a := range c.topic.assign {
			rt.ReplicaAssignment = append(rt.ReplicaAssignment, kmsg.CreateTopicsRequestTopicReplicaAssignment{Partition: int32(i), Replicas: a})
		}
		for k, v := range c.topic.cfg {
			rt.Configs = append(rt.Configs, kmsg.CreateTopicsRequestTopicConfig{Name: k, Value: v})
		}
		req.Topics = append(req.Topics, rt)
		st := h.do(req).(*kmsg.CreateTopicsResponse).Topics[0]
		if err := kerr.ErrorForCode(st.ErrorCode); err != c.want || !strings.Contains(deref(st.ErrorMessage), c.msg) {
			t.Errorf("%.20s: got %v %q, want %v %q", c.topic.name, err, deref(st.ErrorMessage), c.want, c.msg)
		}
		if c.want != nil && (st.NumPartitions != -1 || st.ReplicationFactor != -1) {
			t.Errorf("%.20s: error response with partitions %d rf %d", c.topic.name, st.NumPartitions, st.ReplicationFactor)
		}
	}
	if p := h.img().Partition("asg-ok", 0); p == nil || !slices.Equal(p.Replicas, []int32{2, 1}) || p.Leader != 2 {
		t.Fatalf("manual assignment %+v", p)
	}
}

func TestCreateTopicsDuplicatesInRequest(t *testing.T) {
	h := newCtlHarness(t)
	h.live(1)
	req := kmsg.NewPtrCreateTopicsRequest()
	for _, name := range []string{"d", "d", "ok"} {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, 1, 1
		req.Topics = append(req.Topics, rt)
	}
	resp := h.do(req).(*kmsg.CreateTopicsResponse)
	if resp.Topics[0].ErrorCode != kerr.InvalidRequest.Code || resp.Topics[1].ErrorCode != kerr.InvalidRequest.Code || resp.Topics[2].ErrorCode != 0 {
		t.Fatalf("%+v", resp.Topics)
	}
	if h.img().Topics["d"] != nil || h.img().Topics["ok"] == nil {
		t.Fatal("wrong topics created")
	}
}

func TestCreateTopicsSkipsUnavailableBrokers(t *testing.T) {
	h := newCtlHarness(t)
	h.live(1, 2)
	h.register(3) // fenced
	st := h.createTopic("t", 6, 2)
	if st.ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(st.ErrorCode))
	}
	for _, p := range h.img().Topics["t"].Partitions {
		if slices.Contains(p.Replicas, 3) {
			t.Fatalf("fenced broker placed: %+v", p)
		}
	}
	if st := h.createTopic("t3", 1, 3); st.ErrorCode != kerr.InvalidReplicationFactor.Code {
		t.Fatalf("RF 3 with 2 live brokers: %v", kerr.ErrorForCode(st.ErrorCode))
	}
}

func TestDeleteTopics(t *testing.T) {
	h := newCtlHarness(t)
	h.live(1)
	h.createTopic("a", 1, 1)
	h.createTopic("b", 1, 1)
	idB := h.img().Topics["b"].ID

	v5 := kmsg.NewPtrDeleteTopicsRequest()
	v5.Version = 5
	v5.TopicNames = []string{"a", "nope"}
	resp := h.do(v5).(*kmsg.DeleteTopicsResponse)
	if resp.Topics[0].ErrorCode != 0 || resp.Topics[1].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("by name %+v", resp.Topics)
	}
	v6 := kmsg.NewPtrDeleteTopicsRequest()
	v6.Version = 6
	v6.Topics = []kmsg.DeleteTopicsRequestTopic{{TopicID: idB}, {TopicID: [16]byte{9}}, {Topic: ptrTo("x"), TopicID: [16]byte{9}}}
	resp = h.do(v6).(*kmsg.DeleteTopicsResponse)
	if resp.Topics[0].ErrorCode != 0 || deref(resp.Topics[0].Topic) != "b" ||
		resp.Topics[1].ErrorCode != kerr.UnknownTopicID.Code || resp.Topics[2].ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("by id %+v", resp.Topics)
	}
	if len(h.img().Topics) != 0 {
		t.Fatal("topics left")
	}
	// The same name can be created again, with a new id.
	if st := h.createTopic("b", 1, 1); st.ErrorCode != 0 || h.img().Topics["b"].ID == idB {
		t.Fatalf("recreate %+v", st)
	}
}

func TestCreatePartitions(t *testing.T) {
	h := newCtlHarness(t)
	h.live(1, 2, 3)
	h.createTopic("t", 2, 2)
	req := kmsg.NewPtrCreatePartitionsRequest()
	add := func(name string, count int32, assign ...[]int32) {
		rt := kmsg.NewCreatePartitionsRequestTopic()
		rt.Topic, rt.Count = name, count
		for _, a := range assign {
			rt.Assignment = append(rt.Assignment, kmsg.CreatePartitionsRequestTopicAssignment{Replicas: a})
		}
		req.Topics = append(req.Topics, rt)
	}
	add("t", 5)
	add("nope", 3)
	resp := h.do(req).(*kmsg.CreatePartitionsResponse)
	if len(resp.Topics) != 2 || resp.Topics[0].ErrorCode != 0 || resp.Topics[1].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("%+v", resp.Topics)
	}
	tp := h.img().Topics["t"]
	if len(tp.Partitions) != 5 || len(tp.Partitions[4].Replicas) != 2 || tp.Partitions[4].Index != 4 {
		t.Fatalf("partitions %+v", tp.Partitions)
	}
	cases := []struct {
		count  int32
		assign [][]int32
		want   error
	}{
		{5, nil, kerr.InvalidPartitions},
		{4, nil, kerr.InvalidPartitions},
		{7, [][]int32{{1, 2}}, kerr.InvalidReplicaAssignment},
		{6, [][]int32{{1}}, kerr.InvalidReplicaAssignment},
		{6, [][]int32{{3, 1}}, nil},
	}
	for i, c := range cases {
		req = kmsg.NewPtrCreatePartitionsRequest()
		add("t", c.count, c.assign...)
		st := h.do(req).(*kmsg.CreatePartitionsResponse).Topics[0]
		if err := kerr.ErrorForCode(st.ErrorCode); err != c.want {
			t.Errorf("case %d: got %v %s, want %v", i, err, deref(st.ErrorMessage), c.want)
		}
	}
	if p := h.img().Partition("t", 5); p == nil || !slices.Equal(p.Replicas, []int32{3, 1}) {
		t.Fatalf("manual partition %+v", p)
	}
}

package share

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
)

var (
	t1 = [16]byte{1}
	t2 = [16]byte{2}
)

func members(topics [][16]byte, ids ...string) []assignMember {
	var out []assignMember
	for _, id := range ids {
		out = append(out, assignMember{id: id, topics: topics})
	}
	return out
}

// Cases in the manner of Kafka's SimpleAssignorTest.
func TestSimpleAssign(t *testing.T) {
	both := [][16]byte{t1, t2}
	cases := []struct {
		name       string
		members    []assignMember
		assignable map[[16]byte][]int32
		want       map[string]assignment
	}{
		{"one member gets everything", members(both, "a"), map[[16]byte][]int32{t1: {0, 1, 2}, t2: {0}},
			map[string]assignment{"a": {t1: {0, 1, 2}, t2: {0}}}},
		{"more members than partitions share them", members([][16]byte{t1}, "a", "b", "c"), map[[16]byte][]int32{t1: {0}},
			map[string]assignment{"a": {t1: {0}}, "b": {t1: {0}}, "c": {t1: {0}}}},
		{"three members on two partitions", members([][16]byte{t1}, "a", "b", "c"), map[[16]byte][]int32{t1: {0, 1}},
			map[string]assignment{"a": {t1: {0, 1}}, "b": {t1: {0}}, "c": {t1: {1}}}}, // 4 slots: 2, 1, 1
		{"fewer members than partitions split them", members([][16]byte{t1}, "a", "b"), map[[16]byte][]int32{t1: {0, 1, 2, 3}},
			map[string]assignment{"a": {t1: {0, 2}}, "b": {t1: {1, 3}}}}, // round robin over the partitions
		{"homogeneous balances over all topics", members(both, "a", "b"), map[[16]byte][]int32{t1: {0}, t2: {0}},
			map[string]assignment{"a": {t1: {0}}, "b": {t2: {0}}}},
		{"heterogeneous balances topic by topic",
			[]assignMember{{id: "a", topics: [][16]byte{t1}}, {id: "b", topics: [][16]byte{t2}}, {id: "c", topics: both}},
			map[[16]byte][]int32{t1: {0, 1}, t2: {0, 1}},
			map[string]assignment{"a": {t1: {0}}, "b": {t2: {0}}, "c": {t1: {1}, t2: {1}}}},
		{"nothing assignable", members(both, "a"), nil, map[string]assignment{"a": {}}},
		{"no members", nil, map[[16]byte][]int32{t1: {0}}, map[string]assignment{}},
	}
	for _, c := range cases {
		if got := simpleAssign(c.members, c.assignable); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// Stickiness: a new member takes partitions from the others without
// moving the ones they keep.
func TestSimpleAssignSticky(t *testing.T) {
	ms := members([][16]byte{t1}, "a", "b")
	ms[0].prev = assignment{t1: {0, 1, 2, 3, 4, 5}}
	got := simpleAssign(ms, map[[16]byte][]int32{t1: {0, 1, 2, 3, 4, 5}})
	if !reflect.DeepEqual(got["a"], assignment{t1: {0, 1, 2}}) || !reflect.DeepEqual(got["b"], assignment{t1: {3, 4, 5}}) {
		t.Fatalf("%v", got)
	}
	ms = members([][16]byte{t1}, "a", "b", "c")
	ms[0].prev, ms[1].prev = got["a"], got["b"]
	got = simpleAssign(ms, map[[16]byte][]int32{t1: {0, 1, 2, 3, 4, 5}})
	if !reflect.DeepEqual(got["a"], assignment{t1: {0, 1}}) || !reflect.DeepEqual(got["b"], assignment{t1: {3, 4}}) || !reflect.DeepEqual(got["c"], assignment{t1: {2, 5}}) {
		t.Fatalf("%v", got)
	}
}

// Random groups: every assignable partition goes to at least one member
// (of its subscribers), no member gets a topic it does not subscribe to,
// and with one topic the sizes differ by at most one.
func TestSimpleAssignProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 500 {
		np := 1 + r.IntN(8)
		var ms []assignMember
		for i := range 1 + r.IntN(10) {
			ms = append(ms, assignMember{id: fmt.Sprintf("m%02d", i), topics: [][16]byte{t1}})
		}
		ps := make([]int32, np)
		for i := range ps {
			ps[i] = int32(i)
		}
		got := simpleAssign(ms, map[[16]byte][]int32{t1: ps})
		owned := map[int32]int{}
		lo, hi := 1<<30, 0
		for _, a := range got {
			for _, p := range a[t1] {
				owned[p]++
			}
			lo, hi = min(lo, len(a[t1])), max(hi, len(a[t1]))
		}
		if len(owned) != np || hi-lo > 1 {
			t.Fatalf("%d members %d partitions: %v", len(ms), np, got)
		}
	}
}

package group

import (
	"fmt"
	"math/rand"
	"slices"
	"testing"
)

func assignTopics(parts map[string]int32) map[string]topicMeta {
	out := map[string]topicMeta{}
	for name, n := range parts {
		out[name] = topicMeta{name: name, id: testTopicID(name), partitions: n}
	}
	return out
}

func members(subs map[string][]string, prev map[string]assignment) []assignMember {
	var out []assignMember
	for _, id := range sortedKeys(subs) {
		topics := slices.Clone(subs[id])
		slices.Sort(topics)
		out = append(out, assignMember{id: id, topics: topics, prev: prev[id]})
	}
	return out
}

// checkAssignment: every partition of a subscribed topic is assigned
// exactly once, to a subscriber.
func checkAssignment(t *testing.T, ms []assignMember, topics map[string]topicMeta, got map[string]assignment) {
	t.Helper()
	owner := map[topicPartition]string{}
	for _, m := range ms {
		for id, ps := range got[m.id] {
			name := ""
			for n, tm := range topics {
				if tm.id == id {
					name = n
				}
			}
			if !slices.Contains(m.topics, name) {
				t.Fatalf("%s got %s it does not subscribe to", m.id, name)
			}
			for _, p := range ps {
				tp := topicPartition{name, p}
				if o, ok := owner[tp]; ok {
					t.Fatalf("%v assigned to %s and %s", tp, o, m.id)
				}
				owner[tp] = m.id
			}
		}
	}
	for name, tm := range topics {
		subscribed := false
		for _, m := range ms {
			subscribed = subscribed || slices.Contains(m.topics, name)
		}
		for p := int32(0); p < tm.partitions && subscribed; p++ {
			if _, ok := owner[topicPartition{name, p}]; !ok {
				t.Fatalf("%s/%d not assigned", name, p)
			}
		}
	}
}

func spread(got map[string]assignment) (lo, hi int) {
	lo = 1 << 30
	for _, a := range got {
		lo, hi = min(lo, a.count()), max(hi, a.count())
	}
	return lo, hi
}

// moved counts partitions whose owner changed.
func moved(before, after map[string]assignment) int {
	n := 0
	for id, a := range after {
		for tid, ps := range a {
			for _, p := range ps {
				if !before[id].has(tid, p) {
					n++
				}
			}
		}
	}
	return n
}

// TestUniformAssignorBalancedSticky: identical subscriptions are balanced to
// within one partition; adding or removing a member moves only what the
// balance requires.
func TestUniformAssignorBalancedSticky(t *testing.T) {
	topics := assignTopics(map[string]int32{"a": 7, "b": 5})
	subs := map[string][]string{"m1": {"a", "b"}, "m2": {"a", "b"}, "m3": {"a", "b"}}
	first := uniformAssign(members(subs, nil), topics)
	checkAssignment(t, members(subs, nil), topics, first)
	if lo, hi := spread(first); lo != 4 || hi != 4 {
		t.Fatalf("spread %d-%d", lo, hi)
	}
	if again := uniformAssign(members(subs, first), topics); moved(first, again) != 0 {
		t.Fatal("same members, different assignment")
	}
	subs["m4"] = []string{"a", "b"}
	second := uniformAssign(members(subs, first), topics)
	checkAssignment(t, members(subs, first), topics, second)
	if lo, hi := spread(second); lo != 3 || hi != 3 {
		t.Fatalf("spread %d-%d", lo, hi)
	}
	if n := moved(first, second); n != 3 {
		t.Fatalf("%d partitions moved, want 3 (only the new member's)", n)
	}
	delete(subs, "m2")
	third := uniformAssign(members(subs, second), topics)
	checkAssignment(t, members(subs, second), topics, third)
	if lo, hi := spread(third); lo != 4 || hi != 4 {
		t.Fatalf("spread %d-%d", lo, hi)
	}
	if n := moved(second, third); n != 3 {
		t.Fatalf("%d partitions moved, want 3 (only m2's)", n)
	}
}

// TestUniformAssignorHeterogeneous: members with different subscriptions
// only get their topics and the load is as even as they allow.
func TestUniformAssignorHeterogeneous(t *testing.T) {
	topics := assignTopics(map[string]int32{"a": 4, "b": 3, "c": 6})
	subs := map[string][]string{"m1": {"a"}, "m2": {"a", "b", "c"}, "m3": {"b", "c"}, "m4": {"c"}}
	got := uniformAssign(members(subs, nil), topics)
	checkAssignment(t, members(subs, nil), topics, got)
	if lo, hi := spread(got); hi-lo > 1 {
		t.Fatalf("spread %d-%d: %v", lo, hi, got)
	}
	// Random subscriptions: always complete, exclusive, and stable.
	rng := rand.New(rand.NewSource(7))
	names := []string{"a", "b", "c"}
	var prev map[string]assignment
	for round := 0; round < 30; round++ {
		subs := map[string][]string{}
		for i := range 1 + rng.Intn(5) {
			var ts []string
			for _, n := range names {
				if rng.Intn(2) == 0 {
					ts = append(ts, n)
				}
			}
			subs[fmt.Sprint("m", i)] = ts
		}
		ms := members(subs, prev)
		got := uniformAssign(ms, topics)
		checkAssignment(t, ms, topics, got)
		if again := uniformAssign(members(subs, got), topics); moved(got, again) != 0 {
			t.Fatalf("round %d: not stable", round)
		}
		prev = got
	}
}

// TestRangeAssignor: contiguous ranges per topic, members sorted by id,
// co-partitioned topics line up, and members keep what they had.
func TestRangeAssignor(t *testing.T) {
	topics := assignTopics(map[string]int32{"a": 5, "b": 5})
	subs := map[string][]string{"m1": {"a", "b"}, "m2": {"a", "b"}}
	got := rangeAssign(members(subs, nil), topics)
	checkAssignment(t, members(subs, nil), topics, got)
	ida, idb := testTopicID("a"), testTopicID("b")
	if !slices.Equal(got["m1"][ida], []int32{0, 1, 2}) || !slices.Equal(got["m2"][ida], []int32{3, 4}) ||
		!slices.Equal(got["m1"][idb], []int32{0, 1, 2}) {
		t.Fatalf("ranges: %v", got)
	}
	subs["m0"] = []string{"a"}
	next := rangeAssign(members(subs, got), topics)
	checkAssignment(t, members(subs, got), topics, next)
	for _, id := range []string{"m1", "m2"} {
		for _, p := range next[id][ida] {
			if !got[id].has(ida, p) {
				t.Fatalf("%s was given %d it did not have before: %v", id, p, next)
			}
		}
	}
	if next["m0"].count() != 2 || next["m1"][ida] == nil || len(next["m2"][ida]) != 1 {
		t.Fatalf("quotas: %v", next)
	}
	if !slices.Equal(next["m1"][idb], got["m1"][idb]) {
		t.Fatalf("topic b moved: %v", next)
	}
}

package group

import (
	"cmp"
	"slices"
)

// Server-side assignors of KIP-848 consumer groups. Both are pure functions
// of the members' subscriptions, the topics and the previous target
// assignment, which they keep as much as balance allows (sticky).

const (
	assignorUniform = "uniform"
	assignorRange   = "range"
)

type assignorFunc func(members []assignMember, topics map[string]topicMeta) map[string]assignment

var assignorsByName = map[string]assignorFunc{
	assignorUniform: uniformAssign,
	assignorRange:   rangeAssign,
}

// assignMember is one member as an assignor sees it.
type assignMember struct {
	id     string
	topics []string   // subscribed topic names, sorted, existing or not
	prev   assignment // previous target assignment
}

// topicMeta is an existing subscribed topic.
type topicMeta struct {
	name       string
	id         [16]byte
	partitions int32
}

type topicPartition struct {
	topic     string
	partition int32
}

// uniformAssign spreads all subscribed partitions evenly over the members
// that subscribe to them (Kafka's UniformAssignor): with identical
// subscriptions no two members differ by more than one partition.
func uniformAssign(members []assignMember, topics map[string]topicMeta) map[string]assignment {
	if len(members) == 0 {
		return map[string]assignment{}
	}
	homogeneous := true
	for _, m := range members[1:] {
		if !slices.Equal(m.topics, members[0].topics) {
			homogeneous = false
			break
		}
	}
	if homogeneous {
		return uniformHomogeneous(members, topics)
	}
	return uniformHeterogeneous(members, topics)
}

// allPartitions lists the partitions of the given existing topics in order.
func allPartitions(names []string, topics map[string]topicMeta) []topicPartition {
	var out []topicPartition
	for _, name := range names {
		t, ok := topics[name]
		if !ok {
			continue
		}
		for p := int32(0); p < t.partitions; p++ {
			out = append(out, topicPartition{name, p})
		}
	}
	return out
}

// prevPartitions lists a member's previous partitions that still exist and
// that it still subscribes to, in order.
func prevPartitions(m assignMember, topics map[string]topicMeta) []topicPartition {
	var out []topicPartition
	for _, name := range m.topics {
		t, ok := topics[name]
		if !ok {
			continue
		}
		for _, p := range m.prev[t.id] {
			if p < t.partitions {
				out = append(out, topicPartition{name, p})
			}
		}
	}
	return out
}

// uniformHomogeneous: every member subscribes to the same topics. Each keeps
// up to its quota (total/members, one more for the first total%members) of
// its previous partitions; the rest go to members under quota.
func uniformHomogeneous(members []assignMember, topics map[string]topicMeta) map[string]assignment {
	all := allPartitions(members[0].topics, topics)
	base, extra := len(all)/len(members), len(all)%len(members)
	owner := make(map[topicPartition]int, len(all))
	counts := make([]int, len(members))
	prev := make([][]topicPartition, len(members))
	for i, m := range members {
		for _, tp := range prevPartitions(m, topics) {
			if _, taken := owner[tp]; !taken && counts[i] < base {
				owner[tp] = i
				counts[i]++
			} else if !taken {
				prev[i] = append(prev[i], tp)
			}
		}
	}
	// Members with more previous partitions keep one extra while extra
	// slots remain.
	for i := range members {
		if extra == 0 {
			break
		}
		for _, tp := range prev[i] {
			if _, taken := owner[tp]; !taken && counts[i] == base {
				owner[tp] = i
				counts[i]++
				extra--
				break
			}
		}
	}
	next := 0
	for _, tp := range all {
		if _, taken := owner[tp]; taken {
			continue
		}
		// First fill members below base, then hand out the extra slots.
		i := -1
		for k := range members {
			j := (next + k) % len(members)
			if counts[j] < base {
				i = j
				break
			}
		}
		if i < 0 {
			for k := range members {
				j := (next + k) % len(members)
				if counts[j] == base && extra > 0 {
					i = j
					extra--
					break
				}
			}
		}
		if i < 0 { // cannot happen: the quotas cover every partition
			i = slices.Index(counts, slices.Min(counts))
		}
		owner[tp] = i
		counts[i]++
		next = (i + 1) % len(members)
	}
	return buildAssignment(members, topics, owner)
}

// uniformHeterogeneous: subscriptions differ. Previous partitions are kept,
// the rest go to the least loaded eligible member (most constrained
// partitions first), then partitions move from members that have two more
// than an eligible member until no such move is left.
func uniformHeterogeneous(members []assignMember, topics map[string]topicMeta) map[string]assignment {
	subscribers := make(map[string][]int)
	var names []string
	for i, m := range members {
		for _, t := range m.topics {
			if _, ok := topics[t]; !ok {
				continue
			}
			if subscribers[t] == nil {
				names = append(names, t)
			}
			subscribers[t] = append(subscribers[t], i)
		}
	}
	slices.Sort(names)
	owner := make(map[topicPartition]int)
	counts := make([]int, len(members))
	for i, m := range members {
		for _, tp := range prevPartitions(m, topics) {
			if _, taken := owner[tp]; !taken {
				owner[tp] = i
				counts[i]++
			}
		}
	}
	all := allPartitions(names, topics)
	slices.SortStableFunc(all, func(a, b topicPartition) int {
		return cmp.Compare(len(subscribers[a.topic]), len(subscribers[b.topic]))
	})
	leastLoaded := func(candidates []int) int {
		best := candidates[0]
		for _, i := range candidates[1:] {
			if counts[i] < counts[best] {
				best = i
			}
		}
		return best
	}
	for _, tp := range all {
		if _, taken := owner[tp]; !taken {
			i := leastLoaded(subscribers[tp.topic])
			owner[tp] = i
			counts[i]++
		}
	}
	// Balance: move partitions (highest first) to an eligible member with
	// at least two fewer. Each move lowers the sum of squared counts, so
	// this ends.
	slices.SortFunc(all, func(a, b topicPartition) int {
		return cmp.Or(-cmp.Compare(a.partition, b.partition), cmp.Compare(a.topic, b.topic))
	})
	for moved := true; moved; {
		moved = false
		for _, tp := range all {
			from := owner[tp]
			to := leastLoaded(subscribers[tp.topic])
			if counts[to] < counts[from]-1 {
				owner[tp] = to
				counts[from]--
				counts[to]++
				moved = true
			}
		}
	}
	return buildAssignment(members, topics, owner)
}

// rangeAssign gives each member a contiguous range of every topic it
// subscribes to (Kafka's server-side RangeAssignor): members sorted by id,
// the first partitions%members get one more. Partitions a member had keep
// their owner while its quota allows.
func rangeAssign(members []assignMember, topics map[string]topicMeta) map[string]assignment {
	owner := make(map[topicPartition]int)
	names := make(map[string]bool)
	for _, m := range members {
		for _, t := range m.topics {
			names[t] = true
		}
	}
	for name := range names {
		t, ok := topics[name]
		if !ok {
			continue
		}
		var subs []int
		for i, m := range members {
			if _, ok := slices.BinarySearch(m.topics, name); ok {
				subs = append(subs, i)
			}
		}
		base, extra := int(t.partitions)/len(subs), int(t.partitions)%len(subs)
		quota := make(map[int]int, len(subs))
		counts := make(map[int]int, len(subs))
		for k, i := range subs {
			quota[i] = base
			if k < extra {
				quota[i]++
			}
		}
		for _, i := range subs {
			for _, p := range members[i].prev[t.id] {
				tp := topicPartition{name, p}
				if _, taken := owner[tp]; !taken && p < t.partitions && counts[i] < quota[i] {
					owner[tp] = i
					counts[i]++
				}
			}
		}
		k := 0
		for p := int32(0); p < t.partitions; p++ {
			tp := topicPartition{name, p}
			if _, taken := owner[tp]; taken {
				continue
			}
			for counts[subs[k]] >= quota[subs[k]] {
				k++
			}
			owner[tp] = subs[k]
			counts[subs[k]]++
		}
	}
	return buildAssignment(members, topics, owner)
}

func buildAssignment(members []assignMember, topics map[string]topicMeta, owner map[topicPartition]int) map[string]assignment {
	out := make(map[string]assignment, len(members))
	for _, m := range members {
		out[m.id] = assignment{}
	}
	for tp, i := range owner {
		out[members[i].id].add(topics[tp.topic].id, tp.partition)
	}
	return out
}

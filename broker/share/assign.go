package share

import (
	"slices"
)

// The share group assignor, Kafka's SimpleAssignor ("simple"), a pure
// function. Share groups may give a partition to several members, so the
// assignment balances *slots*:
//
//	desiredSharing = ceil(members / partitions)    members per partition
//	slots          = desiredSharing * partitions   at least one per member
//	desired[i]     = ceil(slots*(i+1)/members) - ceil(slots*i/members)
//
// With more members than partitions every partition goes to several
// members; with fewer, each member gets about partitions/members of them.
// It is sticky: a member keeps what it had as long as that stays within
// its desired count and the partition's desired sharing. When every member
// subscribes to the same topics the balance is over all their partitions
// together (SimpleHomogeneousAssignmentBuilder), else topic by topic over
// each topic's subscribers (SimpleHeterogeneousAssignmentBuilder). Only
// assignable partitions - those whose share state is initialized - are
// given out.

// tp is a topic-partition of the assignor.
type tp struct {
	id        [16]byte
	partition int32
}

func compareTP(a, b tp) int {
	if c := slices.Compare(a.id[:], b.id[:]); c != 0 {
		return c
	}
	return int(a.partition - b.partition)
}

// assignMember is a member as the assignor sees it.
type assignMember struct {
	id     string
	topics [][16]byte // subscribed topic ids, sorted
	prev   assignment // its current target
}

// simpleAssign returns the target assignment of every member (sorted by
// id). assignable holds, per topic id, the partitions that may be given.
func simpleAssign(members []assignMember, assignable map[[16]byte][]int32) map[string]assignment {
	out := make(map[string]assignment, len(members))
	for _, m := range members {
		out[m.id] = assignment{}
	}
	if len(members) == 0 {
		return out
	}
	homogeneous := true
	for _, m := range members[1:] {
		if !slices.Equal(m.topics, members[0].topics) {
			homogeneous = false
			break
		}
	}
	if homogeneous {
		balance(members, indices(len(members)), targets(members[0].topics, assignable), out)
		return out
	}
	for _, id := range subscribedTopics(members) {
		var subs []int
		for i, m := range members {
			if _, ok := slices.BinarySearchFunc(m.topics, id, func(a, b [16]byte) int { return slices.Compare(a[:], b[:]) }); ok {
				subs = append(subs, i)
			}
		}
		balance(members, subs, targets([][16]byte{id}, assignable), out)
	}
	return out
}

func indices(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

func subscribedTopics(members []assignMember) [][16]byte {
	seen := map[[16]byte]bool{}
	var ids [][16]byte
	for _, m := range members {
		for _, id := range m.topics {
			if !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
	}
	slices.SortFunc(ids, func(a, b [16]byte) int { return slices.Compare(a[:], b[:]) })
	return ids
}

// targets lists the assignable partitions of topics, in order.
func targets(topics [][16]byte, assignable map[[16]byte][]int32) []tp {
	var out []tp
	for _, id := range topics {
		for _, p := range assignable[id] {
			out = append(out, tp{id, p})
		}
	}
	return out
}

// balance assigns parts to the members at subs (indices into members),
// keeping their previous partitions where the balance allows, and adds the
// result to out.
func balance(members []assignMember, subs []int, parts []tp, out map[string]assignment) {
	if len(parts) == 0 || len(subs) == 0 {
		return
	}
	m, p := len(subs), len(parts)
	sharing := (m + p - 1) / p
	slots := sharing * p
	desired := make([]int, m)
	for i := range desired {
		desired[i] = ceilDiv(slots*(i+1), m) - ceilDiv(slots*i, m)
	}
	isTarget := make(map[tp]bool, p)
	for _, t := range parts {
		isTarget[t] = true
	}
	owners := make(map[tp][]int, p) // partition -> positions in subs
	held := make([][]tp, m)
	for i, mi := range subs { // 1. keep what is still assignable, up to the desired count
		for _, t := range sortedTPs(members[mi].prev) {
			if isTarget[t] && len(held[i]) < desired[i] {
				held[i] = append(held[i], t)
				owners[t] = append(owners[t], i)
			}
		}
	}
	for _, t := range parts { // 2. no partition shared more than desired
		for len(owners[t]) > sharing {
			i := owners[t][len(owners[t])-1]
			owners[t] = owners[t][:len(owners[t])-1]
			held[i] = slices.DeleteFunc(held[i], func(x tp) bool { return x == t })
		}
	}
	fill(parts, sharing, desired, owners, held)
	for i, mi := range subs {
		a := out[members[mi].id]
		for _, t := range held[i] {
			a[t.id] = append(a[t.id], t.partition)
		}
		for id := range a {
			slices.Sort(a[id])
		}
	}
}

// fill gives partitions that want more members to members that want more
// partitions: one pass over the partitions, round robin over the members
// (Kafka's assignRemainingPartitions). A partition no unfilled member can
// take (they all have it) stays short.
func fill(parts []tp, sharing int, desired []int, owners map[tp][]int, held [][]tp) {
	next := 0
	for _, t := range parts {
		for len(owners[t]) < sharing {
			taken := false
			for k := range len(held) {
				i := (next + k) % len(held)
				if len(held[i]) >= desired[i] || slices.Contains(owners[t], i) {
					continue
				}
				held[i] = append(held[i], t)
				owners[t] = append(owners[t], i)
				next = (i + 1) % len(held)
				taken = true
				break
			}
			if !taken {
				break
			}
		}
	}
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

func sortedTPs(a assignment) []tp {
	var out []tp
	for id, ps := range a {
		for _, p := range ps {
			out = append(out, tp{id, p})
		}
	}
	slices.SortFunc(out, compareTP)
	return out
}

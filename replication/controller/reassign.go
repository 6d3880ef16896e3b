package controller

import "slices"

// Partition reassignment (KIP-455), after Kafka's KRaft
// PartitionReassignmentReplicas and PartitionReassignmentRevert:
//
//  1. Start: the replicas become the target T followed by the current
//     replicas R that T lacks (removing = R-T, adding = T-R, both sorted).
//     The ISR and leader stay; the adding replicas start as followers.
//  2. Catch up: the leader adds them to the ISR through AlterPartition.
//  3. Complete, within whatever change first finds every replica of T in the
//     target ISR: replicas = T, ISR = ISR minus removing, adding and removing
//     cleared, a new leader elected if the current one was removed, and the
//     leader epoch bumped in any case since replicas left.
//
// A target that only reorders or drops replicas completes at once if the ISR
// already holds T. A new target given while a reassignment is in progress
// replaces it, computed against the current (merged) replicas. Cancelling
// removes the adding replicas from the replicas and the ISR; the replicas
// keep their current order (T's survivors first), as in Kafka, not R's.

// assignment is a partition's replicas and the reassignment in progress.
type assignment struct {
	replicas, adding, removing []int32
}

func assignmentOf(p *Partition) assignment {
	return assignment{replicas: p.Replicas, adding: p.AddingReplicas, removing: p.RemovingReplicas}
}

func (a assignment) reassigning() bool { return len(a.adding) > 0 || len(a.removing) > 0 }

func (a assignment) equal(b assignment) bool {
	return slices.Equal(a.replicas, b.replicas) && slices.Equal(a.adding, b.adding) && slices.Equal(a.removing, b.removing)
}

// reassignTo is the assignment that starts moving the replicas cur to target.
func reassignTo(cur, target []int32) assignment {
	removing := sortedMinus(cur, target)
	return assignment{
		replicas: append(slices.Clone(target), removing...),
		adding:   sortedMinus(target, cur),
		removing: removing,
	}
}

// maybeComplete returns the completed assignment and ISR when every target
// replica is in isr (and the ISR keeps a member), else ok = false.
func (a assignment) maybeComplete(isr []int32) (done assignment, newISR []int32, ok bool) {
	if !a.reassigning() {
		return a, isr, false
	}
	newISR = minus(isr, a.removing)
	replicas := minus(a.replicas, a.removing)
	if len(newISR) == 0 || len(replicas) == 0 || !containsAll(newISR, replicas) {
		return a, isr, false
	}
	return assignment{replicas: replicas}, newISR, true
}

// revert is the assignment and ISR that cancel the reassignment in progress,
// and whether that needs an unclean election: when every ISR member was
// being added, the ISR becomes the first original replica.
func (a assignment) revert(isr []int32) (reverted assignment, newISR []int32, unclean bool) {
	replicas := minus(a.replicas, a.adding)
	newISR = minus(isr, a.adding)
	if len(newISR) == 0 && len(replicas) > 0 {
		newISR, unclean = []int32{replicas[0]}, true
	}
	return assignment{replicas: replicas}, newISR, unclean
}

// minus returns s without the members of drop, in s's order, as a new slice.
func minus(s, drop []int32) []int32 {
	out := make([]int32, 0, len(s))
	for _, id := range s {
		if !slices.Contains(drop, id) {
			out = append(out, id)
		}
	}
	return out
}

// sortedMinus returns the members of s not in drop, sorted; nil when none.
func sortedMinus(s, drop []int32) []int32 {
	out := minus(s, drop)
	if len(out) == 0 {
		return nil
	}
	slices.Sort(out)
	return out
}

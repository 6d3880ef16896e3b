package replication

import "fmt"

// Role is a replica's role for one partition. Transitions (roles.go):
//
//	none     -> leader | follower | offline
//	leader   -> leader (newer epoch) | follower | offline
//	follower -> leader | follower (new leader or epoch) | offline
//	offline  -> (none: terminal)
//
// "No leader known" is not a role of its own: the controller says the
// partition has no leader (every ISR member is down), and this replica stays
// a follower with leader -1. It keeps its log and its epoch, so that it
// fences stale requests, fetches nothing, and leads or follows at the next
// election (Kafka's makeFollower with NO_LEADER). "Offline" is this broker
// having stopped replicating the partition: it was removed (topic deleted,
// replica moved away, log deleted); it answers NOT_LEADER_OR_FOLLOWER and
// never takes a role again (a new assignment gets a new Partition).
type Role int8

const (
	// RoleNone: a new Partition before its first transition; it serves
	// nothing.
	RoleNone Role = iota
	// RoleLeader: this broker takes appends and serves fetches.
	RoleLeader
	// RoleFollower: this broker replicates from the leader (or waits for
	// one, when the leader is -1).
	RoleFollower
	// RoleOffline: this broker no longer replicates the partition.
	RoleOffline
)

func (r Role) String() string {
	switch r {
	case RoleNone:
		return "none"
	case RoleLeader:
		return "leader"
	case RoleFollower:
		return "follower"
	case RoleOffline:
		return "offline"
	}
	return fmt.Sprintf("Role(%d)", int8(r))
}

// validPrevious lists the roles a replica may move to r from. Whether the
// leader epoch allows it is checked by the transition itself.
func (r Role) validPrevious(prev Role) bool {
	switch r {
	case RoleLeader, RoleFollower, RoleOffline:
		return prev == RoleNone || prev == RoleLeader || prev == RoleFollower
	}
	return false // nothing becomes RoleNone again
}

// isrChangeKind names an ISR change in flight (Kafka's PendingExpandIsr /
// PendingShrinkIsr).
type isrChangeKind int8

const (
	isrCommitted isrChangeKind = iota // no change in flight
	isrPendingExpand
	isrPendingShrink
)

func (k isrChangeKind) String() string {
	switch k {
	case isrCommitted:
		return "committed"
	case isrPendingExpand:
		return "pending-expand"
	case isrPendingShrink:
		return "pending-shrink"
	}
	return fmt.Sprintf("isrChangeKind(%d)", int8(k))
}

// isrState is the committed ISR plus at most one change sent to the
// controller and not yet answered.
type isrState struct {
	committed []int32
	kind      isrChangeKind
	proposed  []int32 // the ISR sent in AlterPartition, when kind != isrCommitted
}

// maximal is the ISR used for the HW: committed plus an expansion in flight
// (KIP-497: a new member counts at once; a removed one counts until committed).
func (s isrState) maximal() []int32 {
	if s.kind == isrPendingExpand {
		return s.proposed
	}
	return s.committed
}

// PartitionState is a partition's assignment and leadership as the controller
// decided it: the input to MakeLeader and MakeFollower.
type PartitionState struct {
	Topic          string
	Partition      int32
	TopicID        [16]byte
	Replicas       []int32
	ISR            []int32
	Leader         int32
	LeaderEpoch    int32
	PartitionEpoch int32
}

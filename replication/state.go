package replication

import "fmt"

// Role is a replica's role for one partition.
type Role int8

const (
	// RoleNone: this broker holds the log but neither leads nor follows (the
	// partition is offline, or it is no longer a replica and awaits deletion).
	RoleNone Role = iota
	// RoleLeader: this broker takes appends and serves fetches.
	RoleLeader
	// RoleFollower: this broker replicates from the leader.
	RoleFollower
)

func (r Role) String() string {
	switch r {
	case RoleNone:
		return "none"
	case RoleLeader:
		return "leader"
	case RoleFollower:
		return "follower"
	}
	return fmt.Sprintf("Role(%d)", int8(r))
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

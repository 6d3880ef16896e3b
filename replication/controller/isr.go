package controller

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// isrMember is one proposed ISR member of an AlterPartition request; epoch is
// -1 when the request version carries no broker epochs (v0-v2).
type isrMember struct {
	id    int32
	epoch int64
}

// proposedISR returns the new ISR of an AlterPartition partition entry.
func proposedISR(version int16, rp *kmsg.AlterPartitionRequestTopicPartition) []isrMember {
	if version >= 3 {
		out := make([]isrMember, len(rp.NewEpochISR))
		for i, m := range rp.NewEpochISR {
			out[i] = isrMember{m.BrokerID, m.BrokerEpoch}
		}
		return out
	}
	out := make([]isrMember, len(rp.NewISR))
	for i, id := range rp.NewISR {
		out[i] = isrMember{id, -1}
	}
	return out
}

func memberIDs(ms []isrMember) []int32 {
	out := make([]int32, len(ms))
	for i, m := range ms {
		out[i] = m.id
	}
	return out
}

// leaderRecovering is LeaderRecoveryState RECOVERING (KIP-704). kbroker
// partitions are always RECOVERED.
const leaderRecovering int8 = 1

// CheckAlterPartition validates one partition entry of an AlterPartition
// request at version, sent by brokerID, against p (nil: no such partition)
// and the brokers of img, and returns the error code (0: valid) and the
// proposed ISR. From v3 each member comes with the broker epoch its leader
// saw; a member that is fenced, shutting down, unregistered or registered
// at another epoch (it restarted since) is INELIGIBLE_REPLICA; -1 is not
// checked (KIP-903, ReplicationControlManager.ineligibleReplicasForIsr).
func CheckAlterPartition(img *Image, brokerID int32, version int16, p *Partition,
	rp *kmsg.AlterPartitionRequestTopicPartition) (code int16, isr []int32) {
	newISR := proposedISR(version, rp)
	return checkAlterPartition(img, brokerID, version, p, rp.LeaderEpoch, rp.PartitionEpoch, newISR, rp.LeaderRecoveryState), memberIDs(newISR)
}

// checkAlterPartition validates one partition of an AlterPartition request
// (KIP-497, KIP-841) sent by brokerID, in Kafka's order
// (ReplicationControlManager.validateAlterPartitionData), and returns the
// error code for it (0: valid).
func checkAlterPartition(img *Image, brokerID int32, version int16, p *Partition,
	leaderEpoch, partitionEpoch int32, newISR []isrMember, recoveryState int8) int16 {
	switch {
	case p == nil:
		return kerr.UnknownTopicOrPartition.Code
	case leaderEpoch > p.LeaderEpoch, partitionEpoch > p.PartitionEpoch:
		// The leader knows a newer state than ours: we are likely no longer
		// the active controller.
		return kerr.NotController.Code
	case leaderEpoch < p.LeaderEpoch:
		return kerr.FencedLeaderEpoch.Code
	case brokerID != p.Leader:
		return kerr.InvalidRequest.Code
	case partitionEpoch < p.PartitionEpoch:
		return kerr.InvalidUpdateVersion.Code
	}
	ids := memberIDs(newISR)
	if !validISR(p.Replicas, ids) || !slices.Contains(ids, p.Leader) || recoveryState == leaderRecovering {
		return kerr.InvalidRequest.Code
	}
	for _, m := range newISR {
		if !eligibleForISR(img, m) {
			if version > 1 {
				return kerr.IneligibleReplica.Code
			}
			return kerr.OperationNotAttempted.Code
		}
	}
	return 0
}

// validISR reports whether isr is a non-empty set of distinct replicas.
func validISR(replicas, isr []int32) bool {
	if len(isr) == 0 {
		return false
	}
	for i, id := range isr {
		if !slices.Contains(replicas, id) || slices.Contains(isr[:i], id) {
			return false
		}
	}
	return true
}

// eligibleForISR: registered, unfenced, not shutting down, and (when given)
// at the broker epoch the leader saw (KIP-903).
func eligibleForISR(img *Image, m isrMember) bool {
	b := img.Brokers[m.id]
	return b.Live() && (m.epoch == -1 || m.epoch == b.Epoch)
}

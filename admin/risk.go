package admin

import (
	"context"
	"fmt"
)

// Risk is a partition that would lose data, or refuse writes, right now.
type Risk struct {
	PartitionRef
	Reason string `json:"reason"`
	// Unreplicated is how many records the leader holds above the high
	// watermark: acknowledged to acks=1 producers but not yet on every
	// in-sync follower. -1 if the leader's log end is unknown.
	Unreplicated int64 `json:"unreplicated_records"`
}

// Risks is the lesson of acks and min.insync.replicas applied to the
// cluster as it is now.
type Risks struct {
	// LoseOnAcks1 are partitions where losing the leader now loses records
	// acknowledged to acks=1 producers: only the leader holds the log (an
	// ISR of one), or followers have not fetched its latest records.
	LoseOnAcks1 []Risk `json:"lose_on_acks1"`
	// RefuseAcksAll are partitions that cannot take acks=all writes: the
	// ISR is below min.insync.replicas (NOT_ENOUGH_REPLICAS) or there is
	// no leader.
	RefuseAcksAll []Risk `json:"refuse_acks_all"`
	Partitions    int    `json:"partitions_checked"`
}

// AssessRisks applies the lesson to every partition of st, with stats
// (log ends and high watermarks) where the leaders answered.
func AssessRisks(st *State, stats map[tp]PartitionInfo) *Risks {
	out := &Risks{LoseOnAcks1: []Risk{}, RefuseAcksAll: []Risk{}}
	for _, td := range st.Metadata.Topics.Sorted() {
		for _, p := range td.Partitions.Sorted() {
			out.Partitions++
			ref := PartitionRef{Topic: p.Topic, Partition: p.Partition, Leader: p.Leader,
				Replicas: nonNil(p.Replicas), ISR: nonNil(sortedIDs(p.ISR)), MinISR: st.MinISR[p.Topic]}
			s, ok := stats[tp{p.Topic, p.Partition}]
			unrep := int64(-1)
			if ok && s.LogEnd >= 0 && s.HighWatermark >= 0 {
				unrep = max(s.LogEnd-s.HighWatermark, 0)
			}
			if reason := acks1Reason(ref, unrep); reason != "" {
				out.LoseOnAcks1 = append(out.LoseOnAcks1, Risk{PartitionRef: ref, Reason: reason, Unreplicated: unrep})
			}
			if reason := acksAllReason(ref); reason != "" {
				out.RefuseAcksAll = append(out.RefuseAcksAll, Risk{PartitionRef: ref, Reason: reason, Unreplicated: unrep})
			}
		}
	}
	return out
}

// acks1Reason says why losing the leader now loses acks=1 writes, or "".
func acks1Reason(p PartitionRef, unreplicated int64) string {
	switch {
	case p.Leader < 0:
		return "" // offline: nothing is being acknowledged
	case len(p.Replicas) == 1:
		return fmt.Sprintf("replication factor 1: broker %d holds the only copy", p.Leader)
	case len(p.ISR) <= 1:
		return fmt.Sprintf("ISR is only the leader (broker %d): no follower is in sync, every write lives on one broker", p.Leader)
	case unreplicated > 0:
		return fmt.Sprintf("%d %s on leader %d not yet on every in-sync follower", unreplicated,
			plural(int(unreplicated), "record", "records"), p.Leader)
	}
	return ""
}

// acksAllReason says why acks=all writes are refused now, or "".
func acksAllReason(p PartitionRef) string {
	switch {
	case p.Leader < 0:
		return "offline: no leader, every write fails"
	case len(p.ISR) < p.MinISR:
		return fmt.Sprintf("ISR %v is %d of min.insync.replicas=%d: acks=all gets NOT_ENOUGH_REPLICAS",
			p.ISR, len(p.ISR), p.MinISR)
	}
	return ""
}

// Risks reads the cluster and assesses it.
func (c *Client) Risks(ctx context.Context) (*Risks, error) {
	st, err := c.State(ctx)
	if err != nil {
		return nil, err
	}
	return AssessRisks(st, c.partitionStats(ctx, st.Metadata, st.Metadata.Topics.Names())), nil
}

package controller

import (
	"log/slog"
	"slices"
)

// Eligible leader replicas (KIP-966, Kafka 4.1's default for new clusters).
//
// The HW does not advance while a partition's ISR is smaller than
// min.insync.replicas (replication/hwm.go). So a replica that leaves an ISR
// that is (then) below min.insync.replicas holds every offset below the
// HW: the controller keeps it in the partition's ELR instead of forgetting
// it. When the ISR empties (its last member was fenced), the ELR, not a
// possibly stale last ISR member, supplies the next leader; a replica that
// comes back from an unclean shutdown (it registers without the broker
// epoch of a clean shutdown, so it may have lost what it had not flushed)
// leaves the ISR and the ELR first. That closes the hole of the old model,
// in which the last ISR member losing its page cache came back, was elected
// again, and every other replica truncated to it.
//
// The ELR is cleared once the ISR reaches min.insync.replicas again, and
// whenever min.insync.replicas changes (Kafka's ClearElrRecord: the
// guarantee it rests on no longer holds).

// ELRFeature is the cluster feature that turns eligible leader replicas on
// (level 1). Kafka 4.1 finalizes it at 1 for new clusters (Features).
const ELRFeature = "eligible.leader.replicas.version"

// ELREnabled reports whether the cluster tracks eligible leader replicas:
// the feature is finalized at level 1 or above (features.go; a new cluster
// finalizes it at 1, UpdateFeatures may turn it off, which clears every
// ELR at the next change of each partition).
func (img *Image) ELREnabled() bool { return img.Features[ELRFeature] >= 1 }

// policy returns the election policy of the latest image.
func (c *controller) policy() policy {
	return policy{
		uncleanDefault: c.uncleanDefault(),
		minISRDefault:  max(c.opts.MinInsyncReplicas, 1),
		elr:            c.fsm.image().ELREnabled(),
	}
}

// clearELRChanges are the records that clear the ELR of the partitions
// whose min.insync.replicas a config change alters (Kafka's ClearElrRecord):
// a topic's own min.insync.replicas, or the cluster-wide default (every
// topic). Other keys change nothing.
func clearELRChanges(img *Image, recs []record) []record {
	all, topics := false, map[string]bool{}
	for _, r := range recs {
		sc, ok := r.(*setConfigRecord)
		if !ok || sc.Key != minISRConfig {
			continue
		}
		switch {
		case sc.ResourceType == resourceTopic:
			topics[sc.Resource] = true
		case sc.ResourceType == resourceBroker && sc.Resource == "":
			all = true
		}
	}
	if !all && len(topics) == 0 {
		return nil
	}
	var out []record
	img.eachPartition(func(t *Topic, p *Partition) {
		if (!all && !topics[t.Name]) || (len(p.ELR) == 0 && len(p.LastKnownELR) == 0) {
			return
		}
		out = append(out, &partitionChangeRecord{
			Topic: t.Name, TopicID: t.ID, Partition: p.Index, Leader: p.Leader, ISR: nonNil(p.ISR),
			ELR: ptrTo([]int32{}), LastKnownELR: ptrTo([]int32{}),
		})
	})
	return out
}

// logELRChanges says, for each partition change in recs, when a partition
// is led from its ELR or its last known leader, or is left without a
// leader and what it waits for. img is the image the changes were decided
// on.
func logELRChanges(log *slog.Logger, img *Image, recs []record) {
	for _, r := range recs {
		pc, ok := r.(*partitionChangeRecord)
		if !ok {
			continue
		}
		p := img.Partition(pc.Topic, pc.Partition)
		if p == nil {
			continue
		}
		elr, lastKnown := p.ELR, p.LastKnownELR
		if pc.ELR != nil {
			elr = *pc.ELR
		}
		if pc.LastKnownELR != nil {
			lastKnown = *pc.LastKnownELR
		}
		// Leaderless before and after: log only if what it waits for changed.
		waitChanged := !slices.Equal(elr, p.ELR) || !slices.Equal(lastKnown, p.LastKnownELR)
		if pc.Leader == p.Leader && (pc.Leader != NoLeader || !waitChanged) {
			continue
		}
		attrs := []any{"topic", pc.Topic, "partition", pc.Partition, "previous_leader", p.Leader,
			"isr", pc.ISR, "elr", elr, "last_known_leader", lastKnown}
		switch {
		case pc.Leader == NoLeader && len(elr) > 0:
			log.Warn("partition has no leader: waiting for an eligible leader replica to come back", attrs...)
		case pc.Leader == NoLeader && len(lastKnown) > 0:
			log.Warn("partition has no leader: ISR and eligible leader replicas are empty; waiting for the last known leader", attrs...)
		case pc.Leader == NoLeader:
			log.Warn("partition has no leader: waiting for an ISR member to come back", attrs...)
		case slices.Contains(p.ELR, pc.Leader) && !slices.Contains(p.ISR, pc.Leader):
			log.Info("partition led by an eligible leader replica (KIP-966)", append(attrs, "leader", pc.Leader)...)
		case slices.Equal(p.LastKnownELR, []int32{pc.Leader}) && len(p.ISR) == 0:
			log.Warn("partition led by its last known leader: ISR and eligible leader replicas were empty; "+
				"records it had not flushed before an unclean shutdown are lost", append(attrs, "leader", pc.Leader)...)
		}
	}
}

package group

import (
	"errors"
	"iter"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// replay rebuilds the groups of partition p from its records. Records are
// folded into a last-value-per-key map (tombstones delete), exactly what
// compaction keeps, and the groups are assembled from it at the end, so the
// result does not depend on compaction having run. Offset commits of a
// transactional batch wait for their producer's marker: a COMMIT folds them
// in (unless the key was written later), an ABORT drops them, and those
// still open at the end stay pending in their group (txn_offsets.go).
func (c *Coordinator) replay(p int32, records iter.Seq2[Record, error]) ([]*group, error) {
	latest := make(map[recordKey]any)
	pending := make(map[int64]map[recordKey]*offsetValue)
	var skipped, corrupt int
	for r, err := range records {
		if err != nil {
			return nil, err
		}
		if r.Marker != NoMarker {
			replayMarker(latest, pending, r)
			continue
		}
		if r.Key == nil {
			skipped++
			continue
		}
		k, v, err := decodeRecord(r.Key, r.Value)
		switch {
		case errors.Is(err, errUnknownRecordType):
			skipped++ // share or streams group records, a newer Kafka's types
			continue
		case err != nil:
			corrupt++
			c.log.Error("group: skipping corrupt __consumer_offsets record", "partition", p, "err", err)
			continue
		}
		ov, isOffset := v.(*offsetValue)
		if isOffset {
			ov.seq = r.Offset
		}
		switch {
		case r.Transactional && isOffset:
			if pending[r.ProducerID] == nil {
				pending[r.ProducerID] = make(map[recordKey]*offsetValue)
			}
			pending[r.ProducerID][k] = ov
		case v == nil:
			delete(latest, k)
		default:
			latest[k] = v
		}
	}
	if skipped > 0 || corrupt > 0 {
		c.log.Warn("group: records not loaded", "partition", p, "unknown", skipped, "corrupt", corrupt)
	}
	return c.assemble(latest, pending), nil
}

// replayMarker ends a producer's transaction in a replay.
func replayMarker(latest map[recordKey]any, pending map[int64]map[recordKey]*offsetValue, r Record) {
	ps := pending[r.ProducerID]
	delete(pending, r.ProducerID)
	if r.Marker != CommitMarker {
		return
	}
	for k, v := range ps {
		if cur, ok := latest[k].(*offsetValue); !ok || cur.seq < v.seq {
			latest[k] = v
		}
	}
}

// assemble builds groups from the latest record values and the pending
// offsets of open transactions.
func (c *Coordinator) assemble(latest map[recordKey]any, pending map[int64]map[recordKey]*offsetValue) []*group {
	groups := make(map[string]*group)
	get := func(id string) *group {
		g := groups[id]
		if g == nil {
			g = newGroup(c, nil, id)
			groups[id] = g
		}
		return g
	}
	consumer := func(id string) *consumerGroup {
		g := get(id)
		if g.consumer == nil {
			g.consumer = newConsumerGroup()
		}
		return g.consumer
	}
	member := func(id, memberID string) *consumerMember {
		cg := consumer(id)
		m := cg.members[memberID]
		if m == nil {
			m = newConsumerMember(memberID)
			cg.members[memberID] = m
		}
		return m
	}
	var assignments []func()
	for k, v := range latest {
		switch v := v.(type) {
		case *offsetValue:
			get(k.group).setOffset(k.topic, k.partition, *v)
		case *kmsg.GroupMetadataValue:
			get(k.group).classic = classicGroupFromValue(k.group, v)
		case *consumerGroupMetadata:
			cg := consumer(k.group)
			cg.epoch, cg.metadataHash = v.epoch, v.metadataHash
		case targetEpoch:
			consumer(k.group).assignmentEpoch = int32(v)
		case assignment:
			consumer(k.group).target[k.member] = v
		case *memberSubscription:
			member(k.group, k.member).memberSubscription = *v
		case *memberAssignment:
			// Applied after every member exists (partition epochs).
			k, v := k, v
			assignments = append(assignments, func() {
				m := member(k.group, k.member)
				m.memberAssignment = *v
			})
		}
	}
	for _, f := range assignments {
		f()
	}
	for pid, ps := range pending {
		for k, v := range ps {
			g := get(k.group)
			if g.pendingTxn == nil {
				g.pendingTxn = make(map[int64]map[topicPartition]offsetValue)
			}
			if g.pendingTxn[pid] == nil {
				g.pendingTxn[pid] = make(map[topicPartition]offsetValue)
			}
			g.pendingTxn[pid][topicPartition{k.topic, k.partition}] = *v
			g.seq = max(g.seq, v.seq)
		}
	}
	out := make([]*group, 0, len(groups))
	for id, g := range groups {
		if cg := g.consumer; cg != nil {
			if g.classic != nil {
				// Both kinds under one id cannot come from this coordinator
				// (conversions write tombstones); keep the one with members.
				if len(cg.members) == 0 {
					g.consumer = nil
				} else {
					g.classic = nil
				}
			}
		}
		if cg := g.consumer; cg != nil {
			members := cg.members
			cg.members = make(map[string]*consumerMember, len(members))
			for _, m := range members {
				if m.assigned == nil {
					m.assigned = assignment{}
				}
				if m.pendingRevocation == nil {
					m.pendingRevocation = assignment{}
				}
				cg.updateMember(m)
			}
		}
		if g.classic == nil && g.consumer == nil {
			// Offsets only: a simple consumer group (Kafka creates an empty
			// classic group for them).
			g.classic = newClassicGroup(id, -1)
		}
		out = append(out, g)
	}
	return out
}

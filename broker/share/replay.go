package share

import (
	"errors"
	"iter"
)

// replay rebuilds the share groups of partition p: the last value of every
// key wins and tombstones delete, which is what compaction keeps, so the
// result does not depend on compaction having run. Records of other group
// types are not this coordinator's; corrupt ones are skipped with a log
// line.
func (c *Coordinator) replay(p int32, records iter.Seq2[Record, error]) (map[string]*shareGroup, error) {
	last := make(map[recordKey]any)
	corrupt := 0
	for r, err := range records {
		if err != nil {
			return nil, err
		}
		k, err := decodeKey(r.Key)
		switch {
		case errors.Is(err, errNotShare):
			continue
		case err != nil:
			corrupt++
			continue
		case r.Value == nil:
			delete(last, k)
			continue
		}
		v, err := decodeValue(k.typ, r.Value)
		if err != nil {
			corrupt++
			c.log.Error("share: skipping corrupt record", "partition", p, "group", k.group, "type", k.typ, "err", err)
			continue
		}
		last[k] = v
	}
	if corrupt > 0 {
		c.log.Warn("share: records not loaded", "partition", p, "corrupt", corrupt)
	}
	return assemble(c, last), nil
}

// assemble builds the groups from the last value of every key.
func assemble(c *Coordinator, last map[recordKey]any) map[string]*shareGroup {
	groups := make(map[string]*shareGroup)
	get := func(id string) *shareGroup {
		g := groups[id]
		if g == nil {
			g = newShareGroup(c, nil, id)
			g.persisted = true
			groups[id] = g
		}
		return g
	}
	memberOf := func(g *shareGroup, id string) *member {
		m := g.members[id]
		if m == nil {
			m = &member{id: id, cur: currentAssignment{assigned: assignment{}}}
			g.members[id] = m
		}
		return m
	}
	for k, v := range last {
		g := get(k.group)
		switch v := v.(type) {
		case memberMetadata:
			memberOf(g, k.member).meta = v
		case currentAssignment:
			memberOf(g, k.member).cur = v
		case groupMetadata:
			g.epoch, g.metadataHash = v.epoch, v.metadataHash
		case int32:
			g.assignmentEpoch = v
		case assignment:
			g.target[k.member] = v
		case stateMetadata:
			g.state = v
		}
	}
	return groups
}

package share

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// deletion is share state to delete: per topic id its name and partitions.
type deletion map[[16]byte]topicInit

// deleteRequest is the DeleteShareGroupState of a deletion.
func (d deletion) request(groupID string) *kmsg.DeleteShareGroupStateRequest {
	req := kmsg.NewPtrDeleteShareGroupStateRequest()
	req.GroupID = groupID
	for _, id := range sortedIDs(d) {
		rt := kmsg.NewDeleteShareGroupStateRequestTopic()
		rt.TopicID = id
		for _, p := range d[id].partitions {
			rt.Partitions = append(rt.Partitions, kmsg.DeleteShareGroupStateRequestTopicPartition{Partition: p})
		}
		req.Topics = append(req.Topics, rt)
	}
	return req
}

// deleteState calls the share coordinator and returns a code per topic
// (the first error among its partitions).
func (c *Coordinator) deleteState(ctx context.Context, groupID string, d deletion) map[[16]byte]int16 {
	codes := make(map[[16]byte]int16, len(d))
	for id := range d {
		codes[id] = codeCoordinatorNotAvailable
	}
	if len(d) == 0 || c.opts.State == nil {
		if c.opts.State == nil {
			clear(codes)
		}
		return codes
	}
	ctx, cancel := context.WithTimeout(ctx, c.opts.StateTimeout)
	defer cancel()
	resp, err := c.opts.State.DeleteShareGroupState(ctx, d.request(groupID))
	if err != nil || resp == nil {
		return codes
	}
	for _, rt := range resp.Topics {
		if _, asked := codes[rt.TopicID]; !asked {
			continue
		}
		codes[rt.TopicID] = 0
		for _, p := range rt.Partitions {
			if p.ErrorCode != 0 {
				codes[rt.TopicID] = stateCode(p.ErrorCode)
				break
			}
		}
	}
	return codes
}

// allState is every partition of the group with share state (initialized,
// initializing or being deleted), for DeleteGroups.
func (g *shareGroup) allState() deletion {
	d := deletion{}
	add := func(id [16]byte, name string, ps []int32) {
		t := d[id]
		t.name = name
		t.partitions = append(t.partitions, ps...)
		d[id] = t
	}
	for id, t := range g.state.initialized {
		add(id, t.name, t.partitions)
	}
	for id, t := range g.state.initializing {
		add(id, t.name, t.partitions)
	}
	for id, name := range g.state.deleting {
		if _, n, ok := g.c.opts.TopicByID(id); ok {
			ps := make([]int32, n)
			for i := range ps {
				ps[i] = int32(i)
			}
			add(id, name, ps)
		}
	}
	for id, t := range d {
		t.partitions = sortedUnique(t.partitions)
		d[id] = t
	}
	return d
}

// markDeleting records topics as being deleted (no longer initialized).
func (g *shareGroup) markDeleting(d deletion) int16 {
	s := g.state.clone()
	for id, t := range d {
		delete(s.initialized, id)
		delete(s.initializing, id)
		s.deleting[id] = t.name
	}
	if code := g.append([]Record{stateRecord(g.id, s)}); code != 0 {
		return code
	}
	g.state = s
	return 0
}

// finishDeleting drops the topics whose state is gone from deleting.
func (g *shareGroup) finishDeleting(codes map[[16]byte]int16) {
	s := g.state.clone()
	for id, code := range codes {
		if code == 0 {
			delete(s.deleting, id)
		}
	}
	if g.append([]Record{stateRecord(g.id, s)}) == 0 {
		g.state = s
	}
}

// DeleteShareGroupOffsets handles DeleteShareGroupOffsets v0: the share
// state of whole topics of an empty share group is deleted.
func (c *Coordinator) DeleteShareGroupOffsets(ctx context.Context, req *kmsg.DeleteShareGroupOffsetsRequest) *kmsg.DeleteShareGroupOffsetsResponse {
	resp := req.ResponseKind().(*kmsg.DeleteShareGroupOffsetsResponse)
	topicCodes := map[string]int16{}
	topicMsgs := map[string]string{}
	d := deletion{}
	var g *shareGroup
	code := c.withGroup(ctx, req.GroupID, false, func(sg *shareGroup) {
		g = sg
		switch {
		case sg == nil:
			setError(&resp.ErrorCode, &resp.ErrorMessage, codeGroupIDNotFound, fmt.Sprintf("Group %s not found.", req.GroupID))
			return
		case len(sg.members) > 0:
			setError(&resp.ErrorCode, &resp.ErrorMessage, codeNonEmptyGroup, fmt.Sprintf("Share group %s is not empty.", req.GroupID))
			return
		}
		for _, rt := range req.Topics {
			id, _, ok := c.opts.TopicByName(rt.Topic)
			t, initialized := sg.state.initialized[id]
			ti, initializing := sg.state.initializing[id]
			switch {
			case !ok:
				topicCodes[rt.Topic], topicMsgs[rt.Topic] = codeUnknownTopicOrPartition, "The provided topic is not present."
			case !initialized && !initializing:
				topicCodes[rt.Topic], topicMsgs[rt.Topic] = codeUnknownTopicOrPartition, "The provided topic is not a part of the share group."
			default:
				d[id] = topicInit{name: rt.Topic, partitions: sortedUnique(append(t.partitions, ti.partitions...))}
			}
		}
		if len(d) > 0 {
			resp.ErrorCode = sg.markDeleting(d)
		}
	})
	if code != 0 {
		resp.ErrorCode = code
	}
	if resp.ErrorCode == 0 && len(d) > 0 {
		codes := c.deleteState(ctx, req.GroupID, d)
		g.run(ctx, func() { g.finishDeleting(codes) })
		for id, t := range d {
			topicCodes[t.name] = codes[id]
		}
	}
	if resp.ErrorCode != 0 {
		return resp
	}
	for _, rt := range req.Topics {
		out := kmsg.NewDeleteShareGroupOffsetsResponseTopic()
		out.Topic = rt.Topic
		out.TopicID, _, _ = c.opts.TopicByName(rt.Topic)
		out.ErrorCode = topicCodes[rt.Topic]
		if msg := topicMsgs[rt.Topic]; msg != "" {
			out.ErrorMessage = &msg
		}
		resp.Topics = append(resp.Topics, out)
	}
	return resp
}

// DeleteGroup deletes an empty share group for DeleteGroups: its share
// state first, then its records. ok is false when id is not a share group
// here (broker/group answers it); the code is 0, NON_EMPTY_GROUP, or the
// share coordinator's or the log's error.
func (c *Coordinator) DeleteGroup(ctx context.Context, id string) (code int16, ok bool) {
	if c.GroupType(id) == "" {
		return 0, false
	}
	var g *shareGroup
	d := deletion{}
	code = c.withGroup(ctx, id, false, func(sg *shareGroup) {
		if g = sg; sg == nil {
			code = codeGroupIDNotFound
			return
		}
		if len(sg.members) > 0 {
			code = codeNonEmptyGroup
			return
		}
		d = sg.allState()
		if len(d) > 0 {
			code = sg.markDeleting(d)
		}
	})
	if code != 0 {
		return code, true
	}
	codes := c.deleteState(ctx, id, d)
	for _, cd := range codes {
		if cd != 0 {
			g.run(ctx, func() { g.finishDeleting(codes) })
			return cd, true
		}
	}
	g.run(ctx, func() {
		if len(g.members) > 0 { // a member joined meanwhile
			code = codeNonEmptyGroup
			return
		}
		records := []Record{tombstone(typeGroupMetadata, id, ""), tombstone(typeTargetAssignmentMeta, id, ""), tombstone(typeStatePartitionMetadata, id, "")}
		if code = g.append(records); code == 0 {
			g.markDead()
		}
	})
	return code, true
}

func sortedUnique[T cmp.Ordered](ps []T) []T {
	out := slices.Clone(ps)
	slices.Sort(out)
	return slices.Compact(out)
}

package share

import (
	"context"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The admin APIs on a share group's offsets (KIP-932): each decides and
// records on the group goroutine, calls the share coordinator from the
// request's goroutine (so a slow share coordinator never holds the group),
// then records the outcome on the group goroutine again.

// ---- DescribeShareGroupOffsets ----

// readTarget is a partition DescribeShareGroupOffsets answers.
type readTarget struct {
	topic string
	id    [16]byte
	part  int32
	code  int16 // set: answered without the share coordinator
	read  bool  // initialized: ask the share coordinator
}

// DescribeShareGroupOffsets handles DescribeShareGroupOffsets v0-v1 (v1:
// the lag).
func (c *Coordinator) DescribeShareGroupOffsets(ctx context.Context, req *kmsg.DescribeShareGroupOffsetsRequest) *kmsg.DescribeShareGroupOffsetsResponse {
	resp := req.ResponseKind().(*kmsg.DescribeShareGroupOffsetsResponse)
	for _, rg := range req.Groups {
		resp.Groups = append(resp.Groups, c.describeOffsets(ctx, rg, req.Version))
	}
	return resp
}

func (c *Coordinator) describeOffsets(ctx context.Context, rg kmsg.DescribeShareGroupOffsetsRequestGroup, version int16) kmsg.DescribeShareGroupOffsetsResponseGroup {
	out := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
	out.GroupID = rg.GroupID
	var targets []readTarget
	code := c.withGroup(ctx, rg.GroupID, false, func(g *shareGroup) {
		if g == nil {
			setError(&out.ErrorCode, &out.ErrorMessage, codeGroupIDNotFound, fmt.Sprintf("Group %s not found.", rg.GroupID))
			return
		}
		targets = g.describeTargets(rg.Topics)
	})
	if code != 0 {
		out.ErrorCode = code
	}
	if out.ErrorCode != 0 {
		return out
	}
	summaries := c.readSummaries(ctx, rg.GroupID, targets)
	for _, t := range targets {
		rp := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
		rp.Partition, rp.ErrorCode, rp.StartOffset, rp.LeaderEpoch, rp.Lag = t.part, t.code, -1, -1, -1
		if s, ok := summaries[tp{t.id, t.part}]; ok && t.read {
			rp.ErrorCode, rp.StartOffset, rp.LeaderEpoch = s.ErrorCode, s.StartOffset, s.LeaderEpoch
			if version >= 1 && s.ErrorCode == 0 {
				rp.Lag = c.lag(ctx, t.topic, t.part, s)
			}
		}
		if rp.ErrorCode != 0 {
			rp.StartOffset = -1
		}
		appendDescribed(&out, t, rp)
	}
	return out
}

func appendDescribed(out *kmsg.DescribeShareGroupOffsetsResponseGroup, t readTarget, rp kmsg.DescribeShareGroupOffsetsResponseGroupTopicPartition) {
	if n := len(out.Topics); n > 0 && out.Topics[n-1].Topic == t.topic {
		out.Topics[n-1].Partitions = append(out.Topics[n-1].Partitions, rp)
		return
	}
	rt := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopic()
	rt.Topic, rt.TopicID, rt.Partitions = t.topic, t.id, []kmsg.DescribeShareGroupOffsetsResponseGroupTopicPartition{rp}
	out.Topics = append(out.Topics, rt)
}

// describeTargets lists what to answer: the requested partitions, or
// (topics nil) every initialized partition. On the group goroutine.
func (g *shareGroup) describeTargets(topics []kmsg.DescribeShareGroupOffsetsRequestGroupTopic) []readTarget {
	var out []readTarget
	if topics == nil {
		for _, id := range sortedIDs(g.state.initialized) {
			t := g.state.initialized[id]
			name, _, ok := g.c.opts.TopicByID(id)
			if !ok {
				name = t.name
			}
			for _, p := range t.partitions {
				out = append(out, readTarget{topic: name, id: id, part: p, read: true})
			}
		}
		return out
	}
	for _, rt := range topics {
		id, _, ok := g.c.opts.TopicByName(rt.Topic)
		for _, p := range rt.Partitions {
			t := readTarget{topic: rt.Topic, id: id, part: p}
			switch {
			case !ok:
				t.code = codeUnknownTopicOrPartition
			case slices.Contains(g.state.initialized[id].partitions, p):
				t.read = true
			}
			out = append(out, t)
		}
	}
	return out
}

// readSummaries asks the share coordinator for the initialized targets.
func (c *Coordinator) readSummaries(ctx context.Context, groupID string, targets []readTarget) map[tp]kmsg.ReadShareGroupStateSummaryResponseTopicPartition {
	req := kmsg.NewPtrReadShareGroupStateSummaryRequest()
	req.Version, req.GroupID = 1, groupID
	for _, t := range targets {
		if !t.read {
			continue
		}
		if n := len(req.Topics); n == 0 || req.Topics[n-1].TopicID != t.id {
			req.Topics = append(req.Topics, kmsg.ReadShareGroupStateSummaryRequestTopic{TopicID: t.id})
		}
		last := &req.Topics[len(req.Topics)-1]
		last.Partitions = append(last.Partitions, kmsg.ReadShareGroupStateSummaryRequestTopicPartition{Partition: t.part, LeaderEpoch: -1})
	}
	out := map[tp]kmsg.ReadShareGroupStateSummaryResponseTopicPartition{}
	for _, rt := range req.Topics {
		for _, p := range rt.Partitions { // unanswered: the share coordinator is not available
			out[tp{rt.TopicID, p.Partition}] = kmsg.ReadShareGroupStateSummaryResponseTopicPartition{Partition: p.Partition, ErrorCode: codeCoordinatorNotAvailable}
		}
	}
	if len(req.Topics) == 0 || c.opts.State == nil {
		return out
	}
	ctx, cancel := context.WithTimeout(ctx, c.opts.StateTimeout)
	defer cancel()
	resp, err := c.opts.State.ReadShareGroupStateSummary(ctx, req)
	if err != nil || resp == nil {
		return out
	}
	for _, rt := range resp.Topics {
		for _, p := range rt.Partitions {
			if _, asked := out[tp{rt.TopicID, p.Partition}]; asked {
				p.ErrorCode = stateCode(p.ErrorCode)
				out[tp{rt.TopicID, p.Partition}] = p
			}
		}
	}
	return out
}

// lag is KIP-1226's: the records from the start offset to the high
// watermark that are not yet delivered to completion; -1 when unknown.
func (c *Coordinator) lag(ctx context.Context, topic string, partition int32, s kmsg.ReadShareGroupStateSummaryResponseTopicPartition) int64 {
	if s.StartOffset < 0 || s.DeliveryCompleteCount < 0 {
		return -1
	}
	hw, ok := c.opts.LatestOffset(ctx, topic, partition)
	if !ok {
		return -1
	}
	return max(hw-s.StartOffset-int64(s.DeliveryCompleteCount), 0)
}

// stateCode maps a share coordinator error for an admin client, as
// Kafka's GroupCoordinatorService does: a coordinator being looked up or
// loading is COORDINATOR_NOT_AVAILABLE.
func stateCode(code int16) int16 {
	switch code {
	case kerr.NotCoordinator.Code, kerr.CoordinatorLoadInProgress.Code, kerr.RequestTimedOut.Code:
		return codeCoordinatorNotAvailable
	}
	return code
}

// ---- AlterShareGroupOffsets ----

// AlterShareGroupOffsets handles AlterShareGroupOffsets v0: it sets the
// start offset of share-partitions of an empty (or new) share group. The
// group epoch is bumped and the state initialized at the new epoch, which
// fences the share-partition leaders' older state (FENCED_STATE_EPOCH):
// they read it again and start from the new offsets.
func (c *Coordinator) AlterShareGroupOffsets(ctx context.Context, req *kmsg.AlterShareGroupOffsetsRequest) *kmsg.AlterShareGroupOffsetsResponse {
	resp := req.ResponseKind().(*kmsg.AlterShareGroupOffsetsResponse)
	if req.GroupID == "" {
		resp.ErrorCode = codeInvalidGroupID
		return resp
	}
	if c.opts.OtherGroupType(req.GroupID) != "" {
		setError(&resp.ErrorCode, &resp.ErrorMessage, codeGroupIDNotFound, fmt.Sprintf("Group %s is not a share group.", req.GroupID))
		return resp
	}
	codes := map[tp]int16{}
	var init map[[16]byte]topicInit
	var starts map[tp]int64
	var epoch int32
	var g *shareGroup
	code := c.withGroup(ctx, req.GroupID, true, func(sg *shareGroup) {
		g = sg
		init, starts, epoch, resp.ErrorCode, resp.ErrorMessage = sg.planAlter(req.Topics, codes)
	})
	if code != 0 {
		resp.ErrorCode = code
	}
	if resp.ErrorCode == 0 && len(init) > 0 {
		ir := initRequest(req.GroupID, init, epoch, starts)
		ictx, cancel := context.WithTimeout(ctx, c.opts.StateTimeout)
		initCodes := initializeCodes(ir, callInitialize(ictx, c.opts.State, ir))
		cancel()
		g.run(ctx, func() { g.completeInitialize(init, initCodes) })
		for k, v := range initCodes {
			codes[k] = stateCode(v)
		}
	}
	for _, rt := range req.Topics {
		id, _, _ := c.opts.TopicByName(rt.Topic)
		out := kmsg.NewAlterShareGroupOffsetsResponseTopic()
		out.Topic, out.TopicID = rt.Topic, id
		for _, p := range rt.Partitions {
			rp := kmsg.NewAlterShareGroupOffsetsResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, codes[tp{id, p.Partition}]
			if resp.ErrorCode != 0 {
				rp.ErrorCode = resp.ErrorCode
			}
			out.Partitions = append(out.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, out)
	}
	return resp
}

// planAlter validates and records an AlterShareGroupOffsets on the group
// goroutine: the group must be empty; unknown topics and partitions get
// UNKNOWN_TOPIC_OR_PARTITION in codes; the others are recorded as
// initializing at a bumped group epoch.
func (g *shareGroup) planAlter(topics []kmsg.AlterShareGroupOffsetsRequestTopic, codes map[tp]int16) (map[[16]byte]topicInit, map[tp]int64, int32, int16, *string) {
	if len(g.members) > 0 {
		msg := fmt.Sprintf("Share group %s is not empty.", g.id)
		return nil, nil, 0, codeNonEmptyGroup, &msg
	}
	now := g.c.opts.NowMs()
	init, starts := map[[16]byte]topicInit{}, map[tp]int64{}
	for _, rt := range topics {
		id, n, ok := g.c.opts.TopicByName(rt.Topic)
		for _, p := range rt.Partitions {
			if !ok || p.Partition < 0 || p.Partition >= n || p.StartOffset < 0 {
				codes[tp{id, p.Partition}] = codeUnknownTopicOrPartition
				continue
			}
			t := init[id]
			t.name, t.createdMs = rt.Topic, now
			t.partitions = append(t.partitions, p.Partition)
			init[id], starts[tp{id, p.Partition}] = t, p.StartOffset
		}
	}
	if len(init) == 0 {
		g.discardIfUnused()
		return nil, nil, 0, 0, nil
	}
	s := g.state.clone()
	for id, t := range init {
		t.partitions = sortedUnique(t.partitions)
		init[id] = t
		cur := s.initializing[id]
		t.partitions = sortedUnique(append(cur.partitions, t.partitions...))
		s.initializing[id] = t
		delete(s.deleting, id)
	}
	epoch := g.epoch + 1
	records := []Record{groupRecord(g.id, groupMetadata{epoch: epoch, metadataHash: g.metadataHash}), stateRecord(g.id, s)}
	if code := g.append(records); code != 0 {
		g.discardIfUnused()
		return nil, nil, 0, code, nil
	}
	g.epoch, g.state = epoch, s
	return init, starts, epoch, 0, nil
}

func initRequest(groupID string, topics map[[16]byte]topicInit, stateEpoch int32, starts map[tp]int64) *kmsg.InitializeShareGroupStateRequest {
	req := kmsg.NewPtrInitializeShareGroupStateRequest()
	req.GroupID = groupID
	for _, id := range sortedIDs(topics) {
		rt := kmsg.NewInitializeShareGroupStateRequestTopic()
		rt.TopicID = id
		for _, p := range topics[id].partitions {
			rp := kmsg.NewInitializeShareGroupStateRequestTopicPartition()
			rp.Partition, rp.StateEpoch, rp.StartOffset = p, stateEpoch, -1
			if off, ok := starts[tp{id, p}]; ok {
				rp.StartOffset = off
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	return req
}

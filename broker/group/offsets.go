package group

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// This file is Kafka's OffsetMetadataManager: committed offsets of a group,
// their expiration, OffsetDelete. Everything runs on the group goroutine.

// validateOffsetCommit checks who may commit: a member of the current
// generation (classic) or with the current member epoch (KIP-848), or
// anybody with generation -1 while the group has no members.
func (g *group) validateOffsetCommit(req *kmsg.OffsetCommitRequest) int16 {
	switch {
	case g.classic != nil:
		return g.classic.validateOffsetCommit(req.MemberID, req.InstanceID, req.Generation)
	case g.consumer != nil:
		code := g.consumer.validateOffsetCommit(req.MemberID, req.Generation, req.Version)
		if code == codeStaleMemberEpoch && req.Version < 9 {
			return codeUnsupportedVersion
		}
		return code
	}
	return 0
}

// validateOffsetCommit is ClassicGroup.validateOffsetCommit.
func (cg *classicGroup) validateOffsetCommit(memberID string, instanceID *string, generation int32) int16 {
	switch {
	case cg.is(classicDead):
		return codeCoordinatorNotAvailable
	case generation < 0 && cg.is(classicEmpty):
		return 0 // a simple consumer or an admin client
	}
	if generation >= 0 || memberID != "" || instanceID != nil {
		if code := cg.validateMember(memberID, instanceID); code != 0 {
			return code
		}
		if generation != cg.generation {
			return codeIllegalGeneration
		}
	} else if !cg.is(classicEmpty) {
		return codeUnknownMemberID
	}
	if cg.is(classicCompletingRebalance) {
		// The member has its new generation but no assignment yet.
		return codeRebalanceInProgress
	}
	return 0
}

// commitOffsets handles an OffsetCommit for this group.
func (g *group) commitOffsets(req *kmsg.OffsetCommitRequest) *kmsg.OffsetCommitResponse {
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	setAll := func(code int16) { fillCommitResponse(resp, req, func(string, int32) int16 { return code }) }
	if code := g.validateOffsetCommit(req); code != 0 {
		setAll(code)
		g.discardIfUnused()
		return resp
	}
	now := g.c.nowMs()
	expire := int64(-1)
	if req.Version <= 4 && req.RetentionTimeMillis >= 0 {
		expire = now + req.RetentionTimeMillis
	}
	type tp struct {
		topic     string
		partition int32
	}
	codes := make(map[tp]int16)
	pending := make(map[tp]offsetValue)
	var records []Record
	for _, t := range req.Topics {
		nparts, known := g.topicExists(t.Topic)
		for _, p := range t.Partitions {
			key := tp{t.Topic, p.Partition}
			switch {
			case !known || nparts >= 0 && p.Partition >= nparts:
				codes[key] = codeUnknownTopicOrPartition
			case p.Metadata != nil && len(*p.Metadata) > int(g.c.opts.OffsetMetadataMaxBytes):
				codes[key] = codeOffsetMetadataTooLarge
			default:
				o := offsetValue{offset: p.Offset, leaderEpoch: -1, commitTs: now, expireTs: expire}
				if p.Metadata != nil {
					o.metadata = *p.Metadata
				}
				if req.Version >= 6 && p.LeaderEpoch >= 0 {
					o.leaderEpoch = p.LeaderEpoch
				}
				pending[key] = o
				records = append(records, offsetRecord(g.id, t.Topic, p.Partition, o))
			}
		}
	}
	code := g.append(records)
	if code == 0 {
		g.seq++
		for key, o := range pending {
			o.seq = g.seq
			g.setOffset(key.topic, key.partition, o)
		}
	} else {
		for key := range pending {
			codes[key] = commitErrorCode(code)
		}
	}
	fillCommitResponse(resp, req, func(topic string, p int32) int16 { return codes[tp{topic, p}] })
	g.discardIfUnused()
	return resp
}

// commitErrorCode: a batch the log refused as too large is Kafka's
// INVALID_COMMIT_OFFSET_SIZE for an offset commit.
func commitErrorCode(code int16) int16 {
	if code == codeUnknownServerError {
		return codeInvalidCommitOffsetSize
	}
	return code
}

// topicExists reports whether a committed topic exists and its partition
// count (-1 when unknown).
func (g *group) topicExists(topic string) (int32, bool) {
	if g.c.opts.TopicPartitions == nil {
		return -1, true
	}
	_, ok := g.c.opts.TopicPartitions(topic)
	return -1, ok // like Kafka, only the topic is checked
}

// fillCommitResponse answers every partition of the request.
func fillCommitResponse(resp *kmsg.OffsetCommitResponse, req *kmsg.OffsetCommitRequest, code func(string, int32) int16) {
	resp.Topics = resp.Topics[:0]
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, code(t.Topic, p.Partition)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
}

func (g *group) setOffset(topic string, partition int32, o offsetValue) {
	g.seq = max(g.seq, o.seq)
	ps := g.offsets[topic]
	if ps == nil {
		ps = make(map[int32]offsetValue)
		g.offsets[topic] = ps
	}
	ps[partition] = o
}

func (g *group) deleteOffset(topic string, partition int32) {
	if ps := g.offsets[topic]; ps != nil {
		delete(ps, partition)
		if len(ps) == 0 {
			delete(g.offsets, topic)
		}
	}
}

// validateOffsetFetch: a KIP-848 member fetching must be known and current.
func (g *group) validateOffsetFetch(memberID *string, memberEpoch int32) int16 {
	if g.consumer == nil || memberID == nil && memberEpoch < 0 {
		return 0
	}
	m := g.consumer.members[deref(memberID)]
	if m == nil {
		return codeUnknownMemberID
	}
	if memberEpoch != m.memberEpoch {
		return codeStaleMemberEpoch
	}
	return 0
}

// fetchOffsets answers an OffsetFetch for this group (nil: an unknown
// group). Partitions never committed get offset -1 and no error; nil topics
// ask for every committed offset. With requireStable a partition that an
// open transaction committed gets UNSTABLE_OFFSET_COMMIT (KIP-447).
func fetchOffsets(g *group, rg *kmsg.OffsetFetchRequestGroup, requireStable bool) kmsg.OffsetFetchResponseGroup {
	out := kmsg.NewOffsetFetchResponseGroup()
	out.Group = rg.Group
	var offsets map[string]map[int32]offsetValue
	if g != nil {
		if code := g.validateOffsetFetch(rg.MemberID, rg.MemberEpoch); code != 0 {
			out.ErrorCode = code
			return out
		}
		offsets = g.offsets
	}
	partition := func(topic string, p int32, o offsetValue, ok bool) kmsg.OffsetFetchResponseGroupTopicPartition {
		rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata = p, -1, -1, kmsg.StringPtr("")
		switch {
		case requireStable && g != nil && g.hasPendingTxnOffset(topic, p):
			rp.ErrorCode = codeUnstableOffsetCommit
		case ok:
			rp.Offset, rp.LeaderEpoch, rp.Metadata = o.offset, o.leaderEpoch, kmsg.StringPtr(o.metadata)
		}
		return rp
	}
	if rg.Topics == nil {
		topics := make([]string, 0, len(offsets))
		for t := range offsets {
			topics = append(topics, t)
		}
		slices.Sort(topics)
		for _, t := range topics {
			rt := kmsg.NewOffsetFetchResponseGroupTopic()
			rt.Topic = t
			ps := make([]int32, 0, len(offsets[t]))
			for p := range offsets[t] {
				ps = append(ps, p)
			}
			slices.Sort(ps)
			for _, p := range ps {
				rt.Partitions = append(rt.Partitions, partition(t, p, offsets[t][p], true))
			}
			out.Topics = append(out.Topics, rt)
		}
		return out
	}
	for _, t := range rg.Topics {
		rt := kmsg.NewOffsetFetchResponseGroupTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		for _, p := range t.Partitions {
			o, ok := offsets[t.Topic][p]
			rt.Partitions = append(rt.Partitions, partition(t.Topic, p, o, ok))
		}
		out.Topics = append(out.Topics, rt)
	}
	return out
}

// isSubscribedToTopic: offsets of a topic the group consumes cannot be
// deleted or expired.
func (g *group) isSubscribedToTopic(topic string) bool {
	switch {
	case g.classic != nil:
		return g.classic.isSubscribedToTopic(topic)
	case g.consumer != nil:
		return g.consumerSubscribed(topic)
	}
	return false
}

// deleteOffsets handles OffsetDelete: offsets of topics the group is
// subscribed to stay (GROUP_SUBSCRIBED_TO_TOPIC); a classic group that does
// not use the consumer protocol must be empty.
func (g *group) deleteOffsets(req *kmsg.OffsetDeleteRequest) *kmsg.OffsetDeleteResponse {
	resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
	if cg := g.classic; cg != nil {
		switch {
		case cg.is(classicDead):
			resp.ErrorCode = codeGroupIDNotFound
			return resp
		case !cg.is(classicEmpty) && !cg.usesConsumerProtocol():
			resp.ErrorCode = codeNonEmptyGroup
			return resp
		}
	}
	type tp struct {
		topic     string
		partition int32
	}
	var records []Record
	var deleted []tp
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetDeleteResponseTopic()
		rt.Topic = t.Topic
		subscribed := g.isSubscribedToTopic(t.Topic)
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetDeleteResponseTopicPartition()
			rp.Partition = p.Partition
			if subscribed {
				rp.ErrorCode = codeGroupSubscribedToTopic
			} else if _, ok := g.offsets[t.Topic][p.Partition]; ok {
				records = append(records, offsetTombstone(g.id, t.Topic, p.Partition))
				deleted = append(deleted, tp{t.Topic, p.Partition})
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if code := g.append(records); code != 0 {
		resp.ErrorCode, resp.Topics = code, nil
		return resp
	}
	for _, d := range deleted {
		g.deleteOffset(d.topic, d.partition)
	}
	return resp
}

// offsetExpiryBase returns, per offset, the time its retention counts from,
// or ok=false when this group's offsets do not expire now (Kafka's
// offsetExpirationCondition).
func (g *group) offsetExpiryBase() (base func(offsetValue) int64, ok bool) {
	commitTs := func(o offsetValue) int64 { return o.commitTs }
	switch cg := g.classic; {
	case cg != nil && cg.protocolType == "":
		return commitTs, true // a simple consumer group
	case cg != nil && cg.is(classicEmpty):
		return func(o offsetValue) int64 {
			if cg.stateTimestamp >= 0 {
				return cg.stateTimestamp
			}
			return o.commitTs
		}, true
	case cg != nil && cg.usesConsumerProtocol() && cg.subscribed != nil && cg.is(classicStable):
		return commitTs, true
	case cg != nil:
		return nil, false
	}
	return commitTs, true
}

// cleanupExpiredOffsets writes tombstones for offsets past
// offsets.retention.minutes; an empty group left without offsets is
// deleted as well.
func (g *group) cleanupExpiredOffsets() {
	if g.dead {
		return
	}
	allExpired := true
	var records []Record
	type tp struct {
		topic     string
		partition int32
	}
	var expired []tp
	if len(g.offsets) > 0 {
		base, ok := g.offsetExpiryBase()
		if !ok {
			return
		}
		now, retention := g.c.nowMs(), g.c.opts.OffsetsRetention.Milliseconds()
		for topic, ps := range g.offsets {
			if g.isSubscribedToTopic(topic) {
				allExpired = false
				continue
			}
			for p, o := range ps {
				isExpired := now-base(o) >= retention
				if o.expireTs >= 0 {
					isExpired = now >= o.expireTs
				}
				if !isExpired {
					allExpired = false
					continue
				}
				records = append(records, offsetTombstone(g.id, topic, p))
				expired = append(expired, tp{topic, p})
			}
		}
	}
	deleteGroup := allExpired && g.isEmpty()
	if deleteGroup {
		records = append(records, g.groupTombstones()...)
	}
	if len(records) == 0 {
		return
	}
	if code := g.append(records); code != 0 {
		return // retried at the next check
	}
	for _, e := range expired {
		g.deleteOffset(e.topic, e.partition)
	}
	g.c.log.Info("group: expired offsets", "group", g.id, "offsets", len(expired), "deleted", deleteGroup)
	if deleteGroup {
		g.markDead()
	}
}

// groupTombstones are the records that delete the group itself.
func (g *group) groupTombstones() []Record {
	if g.consumer != nil {
		return g.consumerGroupTombstones()
	}
	return []Record{groupMetadataTombstone(g.id)}
}

// deleteGroup handles one group of DeleteGroups: only an empty group can be
// deleted; its offsets go with it.
func (g *group) deleteGroup() int16 {
	if cg := g.classic; cg != nil {
		switch {
		case cg.is(classicDead):
			return codeGroupIDNotFound
		case !cg.is(classicEmpty):
			return codeNonEmptyGroup
		}
	}
	if g.consumer != nil && len(g.consumer.members) > 0 {
		return codeNonEmptyGroup
	}
	var records []Record
	for topic, ps := range g.offsets {
		for p := range ps {
			records = append(records, offsetTombstone(g.id, topic, p))
		}
	}
	records = append(records, g.groupTombstones()...)
	if code := g.append(records); code != 0 {
		return code
	}
	clear(g.offsets)
	g.markDead()
	return 0
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

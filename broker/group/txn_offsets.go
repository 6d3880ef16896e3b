package group

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Transactional offset commits (KIP-98), as Kafka's OffsetMetadataManager
// serves TxnOffsetCommit:
//
//   - The offsets are written, like any commit, to the group's
//     __consumer_offsets partition, but in a transactional batch of the
//     producer (TxnStore.AppendTxn); they stay pending, invisible to
//     OffsetFetch, until the producer's transaction ends.
//   - The broker writes the transaction's marker to the partition and then
//     calls CompleteTransaction: a COMMIT applies the pending offsets (an
//     offset committed later outside the transaction wins), an ABORT drops
//     them. A replay does the same with the markers it reads.
//   - OffsetFetch with RequireStable answers UNSTABLE_OFFSET_COMMIT for a
//     partition with a pending transactional offset (KIP-447).
//
// Ordering: every committed offset remembers when it was written (seq, the
// record's offset in a replay, a counter after it), so a pending offset
// replaces a committed one only if it was written later.

// pendingOffset is an offset of an open transaction.
type pendingOffset struct {
	tp topicPartition
	v  offsetValue
}

// TxnOffsetCommit handles TxnOffsetCommit v0-v5 for a producer whose write
// the broker verified with the transaction coordinator (p). A group that
// does not exist is created as a simple group when the generation is -1
// (an admin client or a consumer without group management), else the
// answer is ILLEGAL_GENERATION, as Kafka.
func (c *Coordinator) TxnOffsetCommit(ctx context.Context, req *kmsg.TxnOffsetCommitRequest, p TxnProducer) *kmsg.TxnOffsetCommitResponse {
	resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	setAll := func(code int16) *kmsg.TxnOffsetCommitResponse {
		FillTxnCommitResponse(resp, req, func(string, int32) int16 { return code })
		return resp
	}
	if req.Group == "" {
		return setAll(codeInvalidGroupID)
	}
	create := kindNone
	if req.Generation < 0 {
		create = kindClassic
	}
	code := c.withGroup(ctx, req.Group, create, func(g *group) {
		if g == nil {
			setAll(codeIllegalGeneration)
			return
		}
		resp = g.commitTxnOffsets(req, p)
	})
	if code != 0 {
		return setAll(code)
	}
	return resp
}

// validateTxnOffsetCommit is Kafka's validateTransactionalOffsetCommit: a
// member of the current generation (or member epoch), or anybody without
// member id and generation; unlike OffsetCommit a classic group may be
// rebalancing, and a stale member epoch is ILLEGAL_GENERATION.
func (g *group) validateTxnOffsetCommit(req *kmsg.TxnOffsetCommitRequest) int16 {
	switch {
	case g.classic != nil:
		cg := g.classic
		switch {
		case cg.is(classicDead):
			return codeCoordinatorNotAvailable
		case req.Generation < 0 && cg.is(classicEmpty):
			return 0
		case req.Generation >= 0 || req.MemberID != "" || req.InstanceID != nil:
			if code := cg.validateMember(req.MemberID, req.InstanceID); code != 0 {
				return code
			}
			if req.Generation != cg.generation {
				return codeIllegalGeneration
			}
		}
	case g.consumer != nil:
		if req.Generation < 0 && req.MemberID == "" {
			return 0
		}
		code := g.consumer.validateOffsetCommit(req.MemberID, req.Generation, 9)
		if code == codeStaleMemberEpoch {
			return codeIllegalGeneration
		}
		return code
	}
	return 0
}

// commitTxnOffsets writes a TxnOffsetCommit's offsets as pending offsets
// of the producer.
func (g *group) commitTxnOffsets(req *kmsg.TxnOffsetCommitRequest, p TxnProducer) *kmsg.TxnOffsetCommitResponse {
	resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	if code := g.validateTxnOffsetCommit(req); code != 0 {
		FillTxnCommitResponse(resp, req, func(string, int32) int16 { return code })
		g.discardIfUnused()
		return resp
	}
	now := g.c.nowMs()
	codes := make(map[topicPartition]int16)
	var pending []pendingOffset
	var records []Record
	for _, t := range req.Topics {
		_, known := g.topicExists(t.Topic)
		for _, rp := range t.Partitions {
			tp := topicPartition{t.Topic, rp.Partition}
			switch {
			case !known:
				codes[tp] = codeUnknownTopicOrPartition
			case rp.Metadata != nil && len(*rp.Metadata) > int(g.c.opts.OffsetMetadataMaxBytes):
				codes[tp] = codeOffsetMetadataTooLarge
			default:
				o := offsetValue{offset: rp.Offset, leaderEpoch: -1, commitTs: now, expireTs: -1}
				if rp.Metadata != nil {
					o.metadata = *rp.Metadata
				}
				if req.Version >= 2 && rp.LeaderEpoch >= 0 {
					o.leaderEpoch = rp.LeaderEpoch
				}
				pending = append(pending, pendingOffset{tp, o})
				records = append(records, offsetRecord(g.id, t.Topic, rp.Partition, o))
			}
		}
	}
	if code := g.appendTxn(p, records); code != 0 {
		for _, po := range pending {
			codes[po.tp] = commitErrorCode(code)
		}
	} else {
		for _, po := range pending {
			g.addPending(p.ID, po)
		}
	}
	FillTxnCommitResponse(resp, req, func(topic string, partition int32) int16 { return codes[topicPartition{topic, partition}] })
	g.discardIfUnused()
	return resp
}

// appendTxn writes records in a transactional batch of p; the code is 0 or
// what the client gets.
func (g *group) appendTxn(p TxnProducer, records []Record) int16 {
	if len(records) == 0 {
		return 0
	}
	ts, ok := g.s.store.(TxnStore)
	if !ok {
		return codeUnsupportedVersion
	}
	if err := ts.AppendTxn(g.s.ctx, p, records); err != nil {
		code := appendErrorCode(err, g.s.ctx.Err() != nil)
		g.c.log.Warn("group: writing transactional offsets failed", "group", g.id, "partition", g.s.p,
			"producerId", p.ID, "err", err, "code", code)
		return code
	}
	g.fresh = false
	return 0
}

// addPending records a pending offset of producer pid, written now.
func (g *group) addPending(pid int64, po pendingOffset) {
	if g.pendingTxn == nil {
		g.pendingTxn = make(map[int64]map[topicPartition]offsetValue)
	}
	ps := g.pendingTxn[pid]
	if ps == nil {
		ps = make(map[topicPartition]offsetValue)
		g.pendingTxn[pid] = ps
		g.c.indexTxnGroup(g, pid, true)
	}
	g.seq++
	po.v.seq = g.seq
	ps[po.tp] = po.v
}

// completeTxn applies (commit) or drops the pending offsets of producer
// pid. A committed offset written after the pending one stays.
func (g *group) completeTxn(pid int64, commit bool) {
	ps, ok := g.pendingTxn[pid]
	if !ok {
		return
	}
	delete(g.pendingTxn, pid)
	g.c.indexTxnGroup(g, pid, false)
	if !commit {
		return
	}
	for tp, v := range ps {
		if cur, ok := g.offsets[tp.topic][tp.partition]; !ok || cur.seq < v.seq {
			g.setOffset(tp.topic, tp.partition, v)
		}
	}
}

// hasPendingTxnOffset reports whether an open transaction committed an
// offset of the partition (OffsetFetch RequireStable).
func (g *group) hasPendingTxnOffset(topic string, partition int32) bool {
	for _, ps := range g.pendingTxn {
		if _, ok := ps[topicPartition{topic, partition}]; ok {
			return true
		}
	}
	return false
}

// CompleteTransaction is called once a transaction marker of producer pid
// is committed on the given __consumer_offsets partitions: the groups
// there with pending offsets of pid apply (commit) or drop them. A
// partition still loading takes the completion when its load ends; one
// not led here is left to its leader, which replays the marker.
func (c *Coordinator) CompleteTransaction(ctx context.Context, partitions []int32, pid int64, commit bool) {
	for _, p := range partitions {
		c.mu.Lock()
		s := c.shards[p]
		var groups []*group
		switch {
		case s == nil || s.stopped:
		case s.state == shardLoading:
			s.completions = append(s.completions, txnCompletion{pid, commit})
		default:
			for id := range s.txnGroups[pid] {
				if g := s.groups[id]; g != nil {
					groups = append(groups, g)
				}
			}
		}
		c.mu.Unlock()
		for _, g := range groups {
			g.run(ctx, func() { g.completeTxn(pid, commit) })
		}
	}
}

// txnCompletion is a marker that arrived while its partition was loading.
type txnCompletion struct {
	pid    int64
	commit bool
}

// indexTxnGroup adds (or removes) g to the groups of its shard with
// pending offsets of pid.
func (c *Coordinator) indexTxnGroup(g *group, pid int64, add bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := g.s
	if add {
		if s.txnGroups == nil {
			s.txnGroups = make(map[int64]map[string]bool)
		}
		if s.txnGroups[pid] == nil {
			s.txnGroups[pid] = make(map[string]bool)
		}
		s.txnGroups[pid][g.id] = true
		return
	}
	delete(s.txnGroups[pid], g.id)
	if len(s.txnGroups[pid]) == 0 {
		delete(s.txnGroups, pid)
	}
}

// FillTxnCommitResponse answers every partition of the request with
// code(topic, partition) (the broker answers refused requests with it).
func FillTxnCommitResponse(resp *kmsg.TxnOffsetCommitResponse, req *kmsg.TxnOffsetCommitRequest, code func(string, int32) int16) {
	resp.Topics = resp.Topics[:0]
	for _, t := range req.Topics {
		rt := kmsg.NewTxnOffsetCommitResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, code(t.Topic, p.Partition)
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
}

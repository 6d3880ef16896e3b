package group

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// This file is the KIP-848 ConsumerGroupHeartbeat as Kafka 4's
// GroupMetadataManager serves it. A heartbeat (1) creates or updates the
// member, bumping the group epoch when subscriptions or the subscribed
// topics changed, (2) recomputes the target assignment when the group epoch
// is ahead of it, (3) moves the member towards its target. The records of
// all three go to the log in one batch before anything changes in memory.

func sessionKey(memberID string) string   { return "session-" + memberID }
func rebalanceKey(memberID string) string { return "rebalance-" + memberID }

// newUUID is a random Kafka Uuid in its string form (URL-safe base64).
func newUUID() string {
	var u [16]byte
	_, _ = rand.Read(u[:])
	return base64.RawURLEncoding.EncodeToString(u[:])
}

// validateConsumerHeartbeat is GroupCoordinatorService's request check.
func (c *Coordinator) validateConsumerHeartbeat(req *kmsg.ConsumerGroupHeartbeatRequest) (int16, string) {
	invalid := func(msg string) (int16, string) { return codeInvalidRequest, msg }
	if req.Version >= 1 || req.MemberEpoch > 0 || req.MemberEpoch == leaveGroupMemberEpoch {
		if req.MemberID == "" {
			return invalid("MemberId can't be empty.")
		}
	}
	switch {
	case req.Group == "":
		return invalid("GroupId can't be empty.")
	case req.InstanceID != nil && *req.InstanceID == "":
		return invalid("InstanceId can't be empty.")
	case req.RackID != nil && *req.RackID == "":
		return invalid("RackId can't be empty.")
	}
	switch {
	case req.MemberEpoch == 0:
		if req.RebalanceTimeoutMillis == -1 {
			return invalid("RebalanceTimeoutMs must be provided in first request.")
		}
		if req.Topics == nil || len(req.Topics) > 0 {
			return invalid("TopicPartitions must be empty when (re-)joining.")
		}
		if req.SubscribedTopicNames == nil && req.SubscribedTopicRegex == nil {
			return invalid("Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining.")
		}
	case req.MemberEpoch == leaveGroupStaticMemberEpoch:
		if req.InstanceID == nil {
			return invalid("InstanceId can't be null.")
		}
	case req.MemberEpoch < leaveGroupStaticMemberEpoch:
		return invalid("MemberEpoch is invalid.")
	}
	if a := req.ServerAssignor; a != nil && !slices.Contains(c.opts.ConsumerAssignors, *a) {
		return codeUnsupportedAssignor, fmt.Sprintf("ServerAssignor %s is not supported. Supported assignors: %v.", *a, c.opts.ConsumerAssignors)
	}
	return 0, ""
}

// heartbeatPlan is a heartbeat's outcome before it is committed: the
// records to write and the state to install once they are.
type heartbeatPlan struct {
	cg         *consumerGroup // the group (a new one when converting)
	converting bool           // an empty classic group becomes this group
	memberID   string
	member     *consumerMember // as the group knows it (new for a join)
	replaced   *consumerMember // the static member this one takes over
	isNew      bool
	updated    *consumerMember // with the request's subscription
	reconciled *consumerMember // moved towards its target
	records    []Record

	groupEpoch   int32
	metadataHash int64
	metas        map[string]topicMeta
	targetEpoch  int32
	targets      map[string]assignment
	newTarget    bool
}

// consumerHeartbeat handles a ConsumerGroupHeartbeat on the group goroutine.
func (g *group) consumerHeartbeat(client Client, req *kmsg.ConsumerGroupHeartbeatRequest) *kmsg.ConsumerGroupHeartbeatResponse {
	resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
	fail := func(code int16, msg string) *kmsg.ConsumerGroupHeartbeatResponse {
		resp.ErrorCode = code
		if msg != "" {
			resp.ErrorMessage = &msg
		}
		g.discardIfUnused()
		return resp
	}
	if req.MemberEpoch == leaveGroupMemberEpoch || req.MemberEpoch == leaveGroupStaticMemberEpoch {
		return g.consumerLeave(req, resp)
	}
	p := &heartbeatPlan{cg: g.consumer}
	if g.classic != nil {
		if !g.classic.is(classicEmpty) || req.MemberEpoch != 0 {
			return fail(codeGroupIDNotFound, fmt.Sprintf("Group %s is not a consumer group.", g.id))
		}
		// An empty classic group becomes a consumer group; offsets stay.
		p.records = append(p.records, groupMetadataTombstone(g.id))
		p.cg, p.converting = newConsumerGroup(), true
	}
	if int32(len(p.cg.members)) >= g.c.opts.ConsumerMaxGroupSize && (req.MemberID == "" || p.cg.members[req.MemberID] == nil) {
		return fail(codeGroupMaxSizeReached, fmt.Sprintf("The consumer group has reached its maximum capacity of %d members.", g.c.opts.ConsumerMaxGroupSize))
	}
	p.memberID = req.MemberID
	if p.memberID == "" {
		p.memberID = newUUID()
	}
	var code int16
	var msg string
	p.member, p.replaced, p.isNew, code, msg = g.heartbeatMember(p.cg, p.memberID, req)
	if code != 0 {
		return fail(code, msg)
	}
	if p.replaced != nil {
		p.records = append(p.records, memberRemovalRecords(g.id, p.replaced.id)...)
	}
	if code, msg := g.planSubscription(p, client, req); code != 0 {
		return fail(code, msg)
	}
	g.planTarget(p)
	p.reconciled = reconcile(p.updated, p.targetEpoch, p.targets[p.memberID], req.Topics, p.cg.currentPartitionEpoch)
	if p.isNew || p.replaced != nil || !p.reconciled.sameAssignment(p.updated) {
		p.records = append(p.records, memberAssignmentRecord(g.id, p.memberID, &p.reconciled.memberAssignment))
	}
	if code := g.append(p.records); code != 0 {
		return fail(code, "")
	}
	g.applyHeartbeat(p)

	resp.MemberID = &p.memberID
	resp.MemberEpoch = p.reconciled.memberEpoch
	resp.HeartbeatIntervalMillis = int32(g.c.opts.ConsumerHeartbeatInterval.Milliseconds())
	// The assignment goes out on a full request (a join, or a client
	// resending everything after an error) or when it changed.
	full := req.MemberEpoch == 0 || req.RebalanceTimeoutMillis != -1 && (req.SubscribedTopicNames != nil || req.SubscribedTopicRegex != nil) && req.Topics != nil
	if full || !p.member.assigned.equal(p.reconciled.assigned) {
		resp.Assignment = responseAssignment(p.reconciled.assigned)
	}
	return resp
}

// planSubscription is step 1: the member with the request's fields; a new
// subscription, or a change of the subscribed topics' metadata, bumps the
// group epoch.
func (g *group) planSubscription(p *heartbeatPlan, client Client, req *kmsg.ConsumerGroupHeartbeatRequest) (int16, string) {
	u := p.member.clone()
	if req.InstanceID != nil {
		u.instanceID = req.InstanceID
	}
	if req.RackID != nil {
		u.rackID = req.RackID
	}
	if req.RebalanceTimeoutMillis != -1 {
		u.rebalanceTimeoutMs = req.RebalanceTimeoutMillis
	}
	if req.ServerAssignor != nil {
		u.serverAssignor = req.ServerAssignor
	}
	if req.SubscribedTopicNames != nil {
		names := slices.Clone(req.SubscribedTopicNames)
		slices.Sort(names)
		u.topicNames = slices.Compact(names)
	}
	if req.SubscribedTopicRegex != nil {
		u.topicRegex = req.SubscribedTopicRegex
		if *req.SubscribedTopicRegex == "" {
			u.topicRegex = nil
		}
	}
	u.clientID, u.clientHost = client.ID, client.Host
	if r := u.topicRegex; r != nil && !ptrEq(r, p.member.topicRegex) {
		if re := g.regex(*r); re.err != nil {
			return codeInvalidRegularExpression, fmt.Sprintf("SubscribedTopicRegex `%s` is not a valid regular expression: %v.", *r, re.err)
		}
	}
	p.updated = u
	bump := p.cg.epoch == 0
	if p.isNew || p.replaced != nil || !u.sameSubscription(p.member) {
		p.records = append(p.records, memberSubscriptionRecord(g.id, p.memberID, &u.memberSubscription))
		if !slices.Equal(u.topicNames, p.member.topicNames) || !ptrEq(u.topicRegex, p.member.topicRegex) {
			bump = true
		}
	}
	sub := p.cg.subscription.clone()
	switch {
	case p.replaced != nil:
		sub.count(p.replaced, -1)
	case !p.isNew:
		sub.count(p.member, -1)
	}
	sub.count(u, 1)
	p.metas = g.subscribedMetas(sub)
	p.metadataHash = metadataHash(p.metas)
	p.groupEpoch = p.cg.epoch
	if bump || p.metadataHash != p.cg.metadataHash {
		p.groupEpoch++
		p.records = append(p.records, consumerGroupMetadataRecord(g.id, consumerGroupMetadata{epoch: p.groupEpoch, metadataHash: p.metadataHash}))
	}
	return 0, ""
}

// planTarget is step 2: a new target assignment when the group epoch moved
// past the current one.
func (g *group) planTarget(p *heartbeatPlan) {
	cg := p.cg
	p.targetEpoch, p.targets = cg.assignmentEpoch, cg.target
	if p.replaced != nil {
		p.targets = cloneTargets(p.targets)
		p.targets[p.memberID] = p.targets[p.replaced.id]
		delete(p.targets, p.replaced.id)
	}
	if p.groupEpoch <= cg.assignmentEpoch {
		if p.replaced != nil {
			p.records = append(p.records, targetMemberRecord(g.id, p.memberID, p.targets[p.memberID]))
		}
		return
	}
	members := make(map[string]*consumerMember, len(cg.members)+1)
	for id, m := range cg.members {
		members[id] = m
	}
	if p.replaced != nil {
		delete(members, p.replaced.id)
	}
	members[p.memberID] = p.updated
	computed := g.computeTarget(members, p.metas, p.targets)
	for _, id := range sortedKeys(computed) {
		if !computed[id].equal(p.targets[id]) || id == p.memberID && (p.isNew || p.replaced != nil) {
			p.records = append(p.records, targetMemberRecord(g.id, id, computed[id]))
		}
	}
	p.records = append(p.records, targetMetaRecord(g.id, p.groupEpoch))
	p.targetEpoch, p.targets, p.newTarget = p.groupEpoch, computed, true
}

// applyHeartbeat installs a committed plan and re-arms the member's timers.
func (g *group) applyHeartbeat(p *heartbeatPlan) {
	cg := p.cg
	if p.converting {
		g.stopTimers()
		g.classic, g.consumer = nil, cg
	}
	if p.replaced != nil {
		cg.removeMember(p.replaced.id)
		g.cancelTimer(sessionKey(p.replaced.id))
		g.cancelTimer(rebalanceKey(p.replaced.id))
	}
	cg.epoch, cg.metadataHash = p.groupEpoch, p.metadataHash
	if p.newTarget || p.replaced != nil {
		cg.target, cg.assignmentEpoch = p.targets, p.targetEpoch
	}
	cg.updateMember(p.reconciled)
	g.scheduleConsumerSessionTimeout(p.memberID)
	if p.isNew || !p.reconciled.sameAssignment(p.updated) {
		if p.reconciled.state == memberUnrevokedPartitions {
			g.scheduleConsumerRebalanceTimeout(p.reconciled)
		} else {
			g.cancelTimer(rebalanceKey(p.memberID))
		}
	}
}

// heartbeatMember finds (or creates, for epoch 0) the member a heartbeat
// is for and checks its epoch and static identity.
func (g *group) heartbeatMember(cg *consumerGroup, memberID string, req *kmsg.ConsumerGroupHeartbeatRequest) (member, replaced *consumerMember, isNew bool, code int16, msg string) {
	epoch := req.MemberEpoch
	if req.InstanceID == nil {
		existing := cg.members[memberID]
		if existing == nil {
			if epoch != 0 {
				return nil, nil, false, codeUnknownMemberID, fmt.Sprintf("Member %s is not a member of group %s.", memberID, g.id)
			}
			return newConsumerMember(memberID), nil, true, 0, ""
		}
		if code := validateMemberEpoch(existing, epoch, req.Topics); code != 0 {
			return nil, nil, false, code, fencedMessage(existing, epoch)
		}
		return existing, nil, false, 0, ""
	}
	instanceID := *req.InstanceID
	existing := cg.members[cg.static[instanceID]]
	if epoch != 0 {
		switch {
		case existing == nil:
			return nil, nil, false, codeUnknownMemberID, fmt.Sprintf("Instance id %s is unknown.", instanceID)
		case existing.id != memberID:
			return nil, nil, false, codeFencedInstanceID, fmt.Sprintf("Static member %s with instance id %s was fenced by member %s.", memberID, instanceID, existing.id)
		}
		if code := validateMemberEpoch(existing, epoch, req.Topics); code != 0 {
			return nil, nil, false, code, fencedMessage(existing, epoch)
		}
		return existing, nil, false, 0, ""
	}
	switch {
	case existing == nil:
		if m := cg.members[memberID]; m != nil {
			return m, nil, false, 0, ""
		}
		return newConsumerMember(memberID), nil, true, 0, ""
	case existing.id == memberID:
		if existing.memberEpoch != leaveGroupStaticMemberEpoch {
			return existing, nil, false, 0, "" // it gets its current state back
		}
		m := existing.clone()
		m.memberEpoch, m.previousMemberEpoch = 0, 0
		return m, nil, false, 0, ""
	case existing.memberEpoch != leaveGroupStaticMemberEpoch:
		return nil, nil, false, codeUnreleasedInstanceID, fmt.Sprintf("Static member %s with instance id %s cannot join the group because the instance id is owned by %s member.", memberID, instanceID, existing.id)
	}
	// The static member comes back after a temporary leave with a new
	// member id: it takes over the old member and its assignment.
	m := existing.clone()
	m.id, m.memberEpoch, m.previousMemberEpoch = memberID, 0, 0
	return m, existing, false, 0, ""
}

func fencedMessage(m *consumerMember, epoch int32) string {
	return fmt.Sprintf("The consumer group member has a different member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", epoch, m.memberEpoch)
}

// consumerLeave handles member epoch -1 (leave) and -2 (a static member
// leaving for a while; it keeps its assignment until its session expires).
func (g *group) consumerLeave(req *kmsg.ConsumerGroupHeartbeatRequest, resp *kmsg.ConsumerGroupHeartbeatResponse) *kmsg.ConsumerGroupHeartbeatResponse {
	fail := func(code int16, msg string) *kmsg.ConsumerGroupHeartbeatResponse {
		resp.ErrorCode = code
		if msg != "" {
			resp.ErrorMessage = &msg
		}
		return resp
	}
	cg := g.consumer
	if cg == nil {
		return fail(codeGroupIDNotFound, fmt.Sprintf("Group %s is not a consumer group.", g.id))
	}
	var m *consumerMember
	if req.InstanceID == nil {
		if m = cg.members[req.MemberID]; m == nil {
			return fail(codeUnknownMemberID, fmt.Sprintf("Member %s is not a member of group %s.", req.MemberID, g.id))
		}
	} else {
		if m = cg.members[cg.static[*req.InstanceID]]; m == nil {
			return fail(codeUnknownMemberID, fmt.Sprintf("Instance id %s is unknown.", *req.InstanceID))
		}
		if m.id != req.MemberID {
			return fail(codeFencedInstanceID, fmt.Sprintf("Static member %s with instance id %s was fenced by member %s.", req.MemberID, *req.InstanceID, m.id))
		}
	}
	resp.MemberID, resp.MemberEpoch = &req.MemberID, req.MemberEpoch
	if req.MemberEpoch == leaveGroupStaticMemberEpoch {
		left := m.clone()
		left.memberEpoch, left.pendingRevocation = leaveGroupStaticMemberEpoch, assignment{}
		if code := g.append([]Record{memberAssignmentRecord(g.id, m.id, &left.memberAssignment)}); code != 0 {
			return fail(code, "")
		}
		cg.updateMember(left)
		g.cancelTimer(rebalanceKey(m.id))
		return resp
	}
	if code := g.fenceConsumerMembers([]*consumerMember{m}); code != 0 {
		return fail(code, "")
	}
	return resp
}

// fenceConsumerMembers removes members and bumps the group epoch so the
// others get their partitions.
func (g *group) fenceConsumerMembers(ms []*consumerMember) int16 {
	cg := g.consumer
	var records []Record
	sub := cg.subscription.clone()
	for _, m := range ms {
		records = append(records, memberRemovalRecords(g.id, m.id)...)
		sub.count(m, -1)
	}
	hash := metadataHash(g.subscribedMetas(sub))
	records = append(records, consumerGroupMetadataRecord(g.id, consumerGroupMetadata{epoch: cg.epoch + 1, metadataHash: hash}))
	if code := g.append(records); code != 0 {
		return code
	}
	for _, m := range ms {
		cg.removeMember(m.id)
		g.cancelTimer(sessionKey(m.id))
		g.cancelTimer(rebalanceKey(m.id))
		g.c.log.Info("group: member removed", "group", g.id, "member", m.id)
	}
	cg.epoch, cg.metadataHash = cg.epoch+1, hash
	return 0
}

func (g *group) scheduleConsumerSessionTimeout(memberID string) {
	g.schedule(sessionKey(memberID), g.c.opts.ConsumerSessionTimeout, func() {
		cg := g.consumer
		if cg == nil || cg.members[memberID] == nil {
			return
		}
		g.c.log.Info("group: member session expired", "group", g.id, "member", memberID)
		if g.fenceConsumerMembers([]*consumerMember{cg.members[memberID]}) != 0 {
			g.scheduleConsumerSessionTimeout(memberID) // try again later
		}
	})
}

// scheduleConsumerRebalanceTimeout fences a member that does not revoke its
// partitions within its rebalance timeout.
func (g *group) scheduleConsumerRebalanceTimeout(m *consumerMember) {
	id, epoch := m.id, m.memberEpoch
	g.schedule(rebalanceKey(id), msDuration(m.rebalanceTimeoutMs), func() {
		cg := g.consumer
		if cg == nil {
			return
		}
		cur := cg.members[id]
		if cur == nil || cur.memberEpoch != epoch || cur.state != memberUnrevokedPartitions {
			return
		}
		g.c.log.Info("group: member did not revoke partitions in time", "group", g.id, "member", id)
		if g.fenceConsumerMembers([]*consumerMember{cur}) != 0 {
			g.scheduleConsumerRebalanceTimeout(cur)
		}
	})
}

// consumerLeaveGroup is the classic LeaveGroup API on a consumer group (an
// administrative removal of members).
func (g *group) consumerLeaveGroup(members []kmsg.LeaveGroupRequestMember) (int16, []kmsg.LeaveGroupResponseMember) {
	cg := g.consumer
	out := make([]kmsg.LeaveGroupResponseMember, 0, len(members))
	var leaving []*consumerMember
	for _, lm := range members {
		rm := kmsg.NewLeaveGroupResponseMember()
		rm.MemberID, rm.InstanceID = lm.MemberID, lm.InstanceID
		var m *consumerMember
		if lm.InstanceID == nil {
			m = cg.members[lm.MemberID]
		} else {
			m = cg.members[cg.static[*lm.InstanceID]]
		}
		switch {
		case m == nil:
			rm.ErrorCode = codeUnknownMemberID
		case lm.InstanceID != nil && lm.MemberID != "" && m.id != lm.MemberID:
			rm.ErrorCode = codeFencedInstanceID
		case !slices.Contains(leaving, m):
			leaving = append(leaving, m)
		}
		out = append(out, rm)
	}
	if len(leaving) > 0 {
		if code := g.fenceConsumerMembers(leaving); code != 0 {
			return code, nil
		}
	}
	return 0, out
}

func responseAssignment(a assignment) *kmsg.ConsumerGroupHeartbeatResponseAssignment {
	out := kmsg.NewConsumerGroupHeartbeatResponseAssignment()
	out.Topics = []kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic{}
	for _, id := range a.topicIDs() {
		t := kmsg.NewConsumerGroupHeartbeatResponseAssignmentTopic()
		t.TopicID, t.Partitions = id, slices.Clone(a[id])
		out.Topics = append(out.Topics, t)
	}
	return &out
}

func cloneTargets(t map[string]assignment) map[string]assignment {
	c := make(map[string]assignment, len(t))
	for id, a := range t {
		c[id] = a
	}
	return c
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

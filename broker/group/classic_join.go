package group

import (
	"crypto/rand"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// This file is the classic rebalance protocol as Kafka 4's
// GroupMetadataManager serves it (JoinGroup, SyncGroup, Heartbeat,
// LeaveGroup and the timers between them). Everything runs on the group
// goroutine.

const (
	timerJoin = "join" // join phase: initial delay or rebalance timeout
	timerSync = "sync" // members that got their JoinGroup must sync in time
)

func heartbeatKey(memberID string) string { return "heartbeat-" + memberID }

// generateMemberID is Kafka's clientId (or group.instance.id) + "-" + UUID.
func generateMemberID(prefix string) string {
	var u [16]byte
	_, _ = rand.Read(u[:])
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return fmt.Sprintf("%s-%x-%x-%x-%x-%x", prefix, u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}

// joinGroup handles a JoinGroup; reply gets exactly one response, now or
// when the join phase completes.
func (g *group) joinGroup(client Client, req *kmsg.JoinGroupRequest, reply chan<- *kmsg.JoinGroupResponse) {
	respondErr := func(code int16, memberID string) {
		r := newJoinResponse()
		r.ErrorCode, r.MemberID = code, memberID
		reply <- r
	}
	var records []Record
	if g.consumer != nil {
		if len(g.consumer.members) > 0 {
			respondErr(codeInconsistentGroupProtocol, "")
			return
		}
		// An empty consumer group becomes a classic group.
		records = g.consumerGroupTombstones()
	} else if g.fresh && (req.ProtocolType == "" || len(req.Protocols) == 0) {
		respondErr(codeInconsistentGroupProtocol, req.MemberID)
		g.discardIfUnused()
		return
	}
	if g.fresh || records != nil {
		// A new group is written at once (Kafka's empty GroupMetadata record)
		// so that it survives a coordinator change.
		cg := newClassicGroup(g.id, g.c.nowMs())
		records = append(records, groupMetadataRecord(g.id, cg.metadataValue(nil)))
		if code := g.append(records); code != 0 {
			respondErr(code, req.MemberID)
			g.discardIfUnused()
			return
		}
		if g.consumer != nil {
			g.stopTimers()
			g.consumer = nil
			g.classic = cg
		}
	}
	cg := g.classic

	if !g.acceptJoiningMember(req.MemberID) {
		if cg.member(req.MemberID) != nil {
			// A member that had not rejoined yet is dropped (the group may
			// have shrunk its maximum): the join phase may be complete now.
			g.removeCurrentMember(req.MemberID)
			g.maybeCompleteJoinPhase()
		} else {
			cg.remove(req.MemberID)
			g.cancelTimer(heartbeatKey(req.MemberID))
		}
		respondErr(codeGroupMaxSizeReached, "")
		return
	}
	if req.MemberID == "" {
		g.joinNewMember(client, req, reply)
	} else {
		g.joinExistingMember(client, req, reply)
	}
}

// acceptJoiningMember enforces group.max.size.
func (g *group) acceptJoiningMember(memberID string) bool {
	cg, limit := g.classic, int(g.c.opts.MaxGroupSize)
	switch cg.state {
	case classicPreparingRebalance:
		m := cg.members[memberID]
		return m != nil && m.awaitingJoin() || cg.awaitingJoin < limit
	case classicCompletingRebalance, classicStable:
		return cg.members[memberID] != nil || len(cg.members) < limit
	}
	return true
}

func (g *group) joinNewMember(client Client, req *kmsg.JoinGroupRequest, reply chan<- *kmsg.JoinGroupResponse) {
	cg := g.classic
	if cg.is(classicDead) {
		reply <- joinError(codeCoordinatorNotAvailable, "")
		return
	}
	if !cg.supportsProtocols(req.ProtocolType, req.Protocols) {
		reply <- joinError(codeInconsistentGroupProtocol, "")
		return
	}
	if req.InstanceID != nil {
		newID := generateMemberID(*req.InstanceID)
		if existing, ok := cg.staticMembers[*req.InstanceID]; ok {
			g.updateStaticMemberAndRebalance(req, existing, newID, reply)
			return
		}
		g.addMemberAndRebalance(client, req, newID, reply)
		return
	}
	newID := generateMemberID(client.ID)
	if req.Version >= 4 {
		// KIP-394: hand out the member id; the member joins again with it.
		cg.addPendingMember(newID)
		g.schedule(heartbeatKey(newID), msDuration(req.SessionTimeoutMillis), func() { g.expireClassicHeartbeat(newID) })
		reply <- joinError(codeMemberIDRequired, newID)
		return
	}
	g.addMemberAndRebalance(client, req, newID, reply)
}

func (g *group) joinExistingMember(client Client, req *kmsg.JoinGroupRequest, reply chan<- *kmsg.JoinGroupResponse) {
	cg, id := g.classic, req.MemberID
	switch {
	case cg.is(classicDead):
		reply <- joinError(codeCoordinatorNotAvailable, id)
		return
	case !cg.supportsProtocols(req.ProtocolType, req.Protocols):
		reply <- joinError(codeInconsistentGroupProtocol, id)
		return
	case cg.isPending(id):
		if req.InstanceID != nil { // a static member never gets MEMBER_ID_REQUIRED
			reply <- joinError(codeInvalidRequest, id)
			return
		}
		g.addMemberAndRebalance(client, req, id, reply)
		return
	}
	if code := cg.validateMember(id, req.InstanceID); code != 0 {
		reply <- joinError(code, id)
		return
	}
	m := cg.member(id)
	switch cg.state {
	case classicPreparingRebalance:
		g.updateMemberAndRebalance(req, m, reply)
	case classicCompletingRebalance:
		if m.matches(req.Protocols) {
			// The member lost its JoinGroup response: answer it again.
			reply <- cg.joinResponse(id)
			return
		}
		g.updateMemberAndRebalance(req, m, reply)
	case classicStable:
		if cg.leader == id || !m.matches(req.Protocols) {
			// A rejoining leader forces a rebalance (its view of the topics
			// may have changed); so does a follower with new metadata.
			g.updateMemberAndRebalance(req, m, reply)
			return
		}
		r := cg.joinResponse(id)
		r.Members = nil
		reply <- r
	default: // Empty: the member must start over
		reply <- joinError(codeUnknownMemberID, id)
	}
}

func (g *group) addMemberAndRebalance(client Client, req *kmsg.JoinGroupRequest, id string, reply chan<- *kmsg.JoinGroupResponse) {
	cg := g.classic
	m := &classicMember{
		id: id, instanceID: req.InstanceID, clientID: client.ID, clientHost: client.Host,
		rebalanceTimeoutMs: rebalanceTimeoutOf(req), sessionTimeoutMs: req.SessionTimeoutMillis,
		protocolType: req.ProtocolType, protocols: req.Protocols, isNew: true,
	}
	if cg.is(classicPreparingRebalance) && cg.previousState == classicEmpty {
		cg.newMemberAdded = true // the initial rebalance may wait longer
	}
	cg.add(m, reply)
	// A parked new member cannot heartbeat; it is dropped if the join phase
	// does not complete within the new member join timeout.
	g.rescheduleClassicHeartbeat(m, newMemberJoinTimeout)
	g.maybePrepareRebalanceOrCompleteJoin()
}

func (g *group) updateMemberAndRebalance(req *kmsg.JoinGroupRequest, m *classicMember, reply chan<- *kmsg.JoinGroupResponse) {
	g.classic.updateMember(m, req.Protocols, rebalanceTimeoutOf(req), req.SessionTimeoutMillis, reply)
	g.maybePrepareRebalanceOrCompleteJoin()
}

// updateStaticMemberAndRebalance handles a known group.instance.id joining
// with an unknown member id (KIP-345): it takes over the old member id. In a
// Stable group with unchanged protocols there is no rebalance: the new id
// is stored and the member gets the current generation.
func (g *group) updateStaticMemberAndRebalance(req *kmsg.JoinGroupRequest, oldID, newID string, reply chan<- *kmsg.JoinGroupResponse) {
	cg := g.classic
	instanceID := *req.InstanceID
	oldLeader := cg.leader
	m := cg.replaceStaticMember(instanceID, oldID, newID)
	g.cancelTimer(heartbeatKey(oldID))
	g.rescheduleClassicHeartbeat(m, msDuration(m.sessionTimeoutMs))
	oldProtocols, oldRebalance, oldSession := m.protocols, m.rebalanceTimeoutMs, m.sessionTimeoutMs
	cg.updateMember(m, req.Protocols, rebalanceTimeoutOf(req), req.SessionTimeoutMillis, reply)

	switch cg.state {
	case classicStable:
		if cg.selectProtocol() != cg.protocolName {
			g.maybePrepareRebalanceOrCompleteJoin()
			return
		}
		if code := g.append([]Record{groupMetadataRecord(g.id, cg.metadataValue(nil))}); code != 0 {
			// Revert to the old member id.
			cg.updateMember(m, oldProtocols, oldRebalance, oldSession, nil)
			old := cg.replaceStaticMember(instanceID, newID, oldID)
			g.cancelTimer(heartbeatKey(newID))
			g.rescheduleClassicHeartbeat(old, msDuration(old.sessionTimeoutMs))
			r := newJoinResponse()
			r.ErrorCode, r.Generation, r.LeaderID = code, cg.generation, oldLeader
			r.ProtocolType, r.Protocol = nonEmpty(cg.protocolType), nonEmpty(cg.protocolName)
			reply <- r
			return
		}
		r := cg.joinResponse(newID)
		if req.Version >= 9 {
			// KIP-814: a static leader keeps the assignment it made.
			r.SkipAssignment = cg.leader == newID
		} else {
			r.Members = nil
			r.LeaderID = oldLeader
		}
		cg.completeJoin(m, r)
	case classicCompletingRebalance:
		// The leader may be assigning for the old member id: start over.
		g.prepareRebalance()
	case classicPreparingRebalance:
		g.maybeCompleteJoinPhase()
	default:
		panic(fmt.Sprintf("group %q: static member rejoined in state %s", g.id, cg.state))
	}
}

func (g *group) maybePrepareRebalanceOrCompleteJoin() {
	if g.classic.canRebalance() {
		g.prepareRebalance()
	} else {
		g.maybeCompleteJoinPhase()
	}
}

// maybeCompleteJoinPhase ends the join phase once every member rejoined,
// except during the initial rebalance, which waits for its delay.
func (g *group) maybeCompleteJoinPhase() {
	cg := g.classic
	if cg.is(classicPreparingRebalance) && cg.previousState != classicEmpty && cg.hasAllMembersJoined() {
		g.completeJoin()
	}
}

// prepareRebalance starts a rebalance: members awaiting their assignment
// are told to rejoin; an initial rebalance waits
// group.initial.rebalance.delay.ms (extended while members keep arriving),
// any other one waits for every member up to the rebalance timeout.
func (g *group) prepareRebalance() {
	cg := g.classic
	if cg.is(classicCompletingRebalance) {
		g.resetAndPropagateAssignmentWithError(codeRebalanceInProgress)
	}
	g.removeSyncExpiration()
	initial := cg.is(classicEmpty)
	if initial {
		delay := g.c.opts.InitialRebalanceDelay
		remaining := max(msDuration(cg.rebalanceTimeoutMs())-delay, 0)
		g.schedule(timerJoin, delay, func() { g.tryCompleteInitialRebalance(delay, remaining) })
	}
	cg.becomePreparingRebalance(g.c.nowMs())
	if !initial {
		if cg.hasAllMembersJoined() {
			g.completeJoin()
			return
		}
		g.schedule(timerJoin, msDuration(cg.rebalanceTimeoutMs()), g.completeJoin)
	}
}

func (g *group) tryCompleteInitialRebalance(delay, remaining time.Duration) {
	cg := g.classic
	if cg == nil {
		return
	}
	if cg.newMemberAdded && remaining > 0 {
		cg.newMemberAdded = false
		next := min(g.c.opts.InitialRebalanceDelay, remaining)
		left := max(remaining-delay, 0)
		g.schedule(timerJoin, next, func() { g.tryCompleteInitialRebalance(next, left) })
		return
	}
	g.completeJoin()
}

// completeJoin ends the join phase: dynamic members that did not rejoin are
// removed, the generation is bumped and every member gets its JoinGroup
// response (the leader with the member list), or the group becomes Empty.
func (g *group) completeJoin() {
	cg := g.classic
	if cg == nil || !cg.is(classicPreparingRebalance) {
		return
	}
	g.cancelTimer(timerJoin)
	for _, m := range cg.notYetRejoined() {
		if m.instanceID == nil {
			cg.remove(m.id)
			g.cancelTimer(heartbeatKey(m.id))
			if m.awaitingSync() {
				cg.completeSync(m, syncError(codeUnknownMemberID))
			}
		}
	}
	if !cg.maybeElectNewJoinedLeader() && len(cg.members) > 0 {
		// Nobody rejoined: wait for the session timeouts to remove them.
		g.schedule(timerJoin, msDuration(cg.rebalanceTimeoutMs()), g.completeJoin)
		return
	}
	cg.initNextGeneration(g.c.nowMs())
	if cg.is(classicEmpty) {
		if code := g.append([]Record{groupMetadataRecord(g.id, cg.metadataValue(nil))}); code != 0 {
			// The previous generation stays in the log; it has no live
			// member, so it only times out after a failover.
			g.c.log.Warn("group: could not store empty group", "group", g.id, "code", code)
		}
		return
	}
	for _, m := range cg.allMembers() {
		cg.completeJoin(m, cg.joinResponse(m.id))
		g.rescheduleClassicHeartbeat(m, msDuration(m.sessionTimeoutMs))
		m.isNew = false
		cg.pendingSync[m.id] = true
	}
	generation := cg.generation
	g.schedule(timerSync, msDuration(cg.rebalanceTimeoutMs()), func() { g.expirePendingSync(generation) })
}

// expirePendingSync removes members that got their JoinGroup response but
// did not send SyncGroup within the rebalance timeout.
func (g *group) expirePendingSync(generation int32) {
	cg := g.classic
	if cg == nil || cg.generation != generation || len(cg.pendingSync) == 0 {
		return
	}
	if !cg.is(classicCompletingRebalance) && !cg.is(classicStable) {
		return
	}
	for _, m := range cg.allMembers() {
		if cg.pendingSync[m.id] {
			cg.remove(m.id)
			g.cancelTimer(heartbeatKey(m.id))
		}
	}
	g.prepareRebalance()
}

func (g *group) removeSyncExpiration() {
	clear(g.classic.pendingSync)
	g.cancelTimer(timerSync)
}

func (g *group) removePendingSync(memberID string) {
	cg := g.classic
	delete(cg.pendingSync, memberID)
	if len(cg.pendingSync) == 0 || !cg.is(classicCompletingRebalance) && !cg.is(classicStable) {
		g.cancelTimer(timerSync)
	}
}

func (g *group) rescheduleClassicHeartbeat(m *classicMember, d time.Duration) {
	id := m.id
	g.schedule(heartbeatKey(id), d, func() { g.expireClassicHeartbeat(id) })
}

// expireClassicHeartbeat runs when a member's session timeout passed
// without a heartbeat: the member is removed and the group rebalances.
func (g *group) expireClassicHeartbeat(memberID string) {
	cg := g.classic
	if cg == nil || cg.is(classicDead) {
		return
	}
	if cg.isPending(memberID) {
		cg.remove(memberID)
		if cg.is(classicPreparingRebalance) && cg.hasAllMembersJoined() {
			g.completeJoin()
		}
		return
	}
	m := cg.member(memberID)
	if m == nil || m.hasSatisfiedHeartbeat() {
		return
	}
	g.c.log.Info("group: member session expired", "group", g.id, "member", memberID)
	g.removeMemberAndUpdate(m)
}

// removeMemberAndUpdate drops a member and rebalances (or completes a join
// phase that was only waiting for it).
func (g *group) removeMemberAndUpdate(m *classicMember) {
	cg := g.classic
	cg.completeJoin(m, joinError(codeUnknownMemberID, ""))
	cg.completeSync(m, syncError(codeUnknownMemberID))
	cg.remove(m.id)
	g.cancelTimer(heartbeatKey(m.id))
	switch {
	case cg.is(classicStable) || cg.is(classicCompletingRebalance):
		g.maybePrepareRebalanceOrCompleteJoin()
	case cg.is(classicPreparingRebalance) && cg.hasAllMembersJoined():
		g.completeJoin()
	}
}

// resetAndPropagateAssignmentWithError fails every parked SyncGroup.
func (g *group) resetAndPropagateAssignmentWithError(code int16) {
	cg := g.classic
	if !cg.is(classicCompletingRebalance) {
		panic(fmt.Sprintf("group %q: propagating an error in state %s", g.id, cg.state))
	}
	for _, m := range cg.allMembers() {
		m.assignment = nil
	}
	g.propagateAssignment(code)
}

// propagateAssignment answers every parked SyncGroup with the member's
// assignment (or the error) and restarts its session timer.
func (g *group) propagateAssignment(code int16) {
	cg := g.classic
	for _, m := range cg.allMembers() {
		r := &kmsg.SyncGroupResponse{ErrorCode: code, MemberAssignment: m.assignment}
		if code == 0 {
			r.ProtocolType, r.Protocol = nonEmpty(cg.protocolType), nonEmpty(cg.protocolName)
		}
		if r.MemberAssignment == nil {
			r.MemberAssignment = []byte{}
		}
		if cg.completeSync(m, r) {
			g.rescheduleClassicHeartbeat(m, msDuration(m.sessionTimeoutMs))
		}
	}
}

// syncGroup handles a SyncGroup; reply gets exactly one response. The
// leader's assignment is written to the log before anyone gets it.
func (g *group) syncGroup(req *kmsg.SyncGroupRequest, reply chan<- *kmsg.SyncGroupResponse) {
	cg := g.classic
	if cg == nil || cg.is(classicEmpty) {
		reply <- syncError(codeUnknownMemberID)
		return
	}
	if code := g.validateSync(req); code != 0 {
		reply <- syncError(code)
		return
	}
	m := cg.member(req.MemberID)
	switch cg.state {
	case classicPreparingRebalance:
		reply <- syncError(codeRebalanceInProgress)
	case classicCompletingRebalance:
		m.syncCh = reply
		g.removePendingSync(m.id)
		if m.id == cg.leader {
			g.storeLeaderAssignment(req)
		}
	case classicStable:
		g.removePendingSync(m.id)
		r := &kmsg.SyncGroupResponse{MemberAssignment: m.assignment}
		r.ProtocolType, r.Protocol = nonEmpty(cg.protocolType), nonEmpty(cg.protocolName)
		if r.MemberAssignment == nil {
			r.MemberAssignment = []byte{}
		}
		reply <- r
	default:
		reply <- syncError(codeCoordinatorNotAvailable)
	}
}

func (g *group) validateSync(req *kmsg.SyncGroupRequest) int16 {
	cg := g.classic
	if cg.is(classicDead) {
		return codeCoordinatorNotAvailable
	}
	if code := cg.validateMember(req.MemberID, req.InstanceID); code != 0 {
		return code
	}
	if req.Generation != cg.generation {
		return codeIllegalGeneration
	}
	if inconsistent(req.ProtocolType, cg.protocolType) || inconsistent(req.Protocol, cg.protocolName) {
		return codeInconsistentGroupProtocol
	}
	return 0
}

func inconsistent(requested *string, current string) bool {
	return requested != nil && current != "" && *requested != current
}

// storeLeaderAssignment writes the group with the leader's assignment
// (members it left out get an empty one) and, once committed, hands every
// member its part and moves to Stable.
func (g *group) storeLeaderAssignment(req *kmsg.SyncGroupRequest) {
	cg := g.classic
	assignments := make(map[string][]byte, len(cg.members))
	for _, a := range req.GroupAssignment {
		assignments[a.MemberID] = a.MemberAssignment
	}
	for _, m := range cg.allMembers() {
		if _, ok := assignments[m.id]; !ok {
			assignments[m.id] = []byte{}
		}
	}
	if code := g.append([]Record{groupMetadataRecord(g.id, cg.metadataValue(assignments))}); code != 0 {
		g.resetAndPropagateAssignmentWithError(code)
		g.maybePrepareRebalanceOrCompleteJoin()
		return
	}
	for _, m := range cg.allMembers() {
		m.assignment = assignments[m.id]
	}
	g.propagateAssignment(0)
	cg.becomeStable(g.c.nowMs())
}

// heartbeat handles a classic Heartbeat.
func (g *group) heartbeat(req *kmsg.HeartbeatRequest) int16 {
	cg := g.classic
	if cg == nil {
		return codeUnknownMemberID
	}
	if cg.is(classicDead) {
		return codeCoordinatorNotAvailable
	}
	if code := cg.validateMember(req.MemberID, req.InstanceID); code != 0 {
		return code
	}
	if req.Generation != cg.generation {
		return codeIllegalGeneration
	}
	m := cg.member(req.MemberID)
	switch cg.state {
	case classicPreparingRebalance:
		g.rescheduleClassicHeartbeat(m, msDuration(m.sessionTimeoutMs))
		return codeRebalanceInProgress
	case classicCompletingRebalance, classicStable:
		// Members may heartbeat between their JoinGroup and SyncGroup.
		g.rescheduleClassicHeartbeat(m, msDuration(m.sessionTimeoutMs))
		return 0
	}
	return codeUnknownMemberID
}

// leaveGroup removes the given members (by member id, or by
// group.instance.id alone for an administrative removal) and rebalances.
func (g *group) leaveGroup(members []kmsg.LeaveGroupRequestMember) (int16, []kmsg.LeaveGroupResponseMember) {
	if g.consumer != nil {
		return g.consumerLeaveGroup(members)
	}
	cg := g.classic
	if cg == nil {
		return codeUnknownMemberID, nil
	}
	if cg.is(classicDead) {
		return codeCoordinatorNotAvailable, nil
	}
	out := make([]kmsg.LeaveGroupResponseMember, 0, len(members))
	removed := 0
	for _, lm := range members {
		rm := kmsg.NewLeaveGroupResponseMember()
		rm.MemberID, rm.InstanceID = lm.MemberID, lm.InstanceID
		switch {
		case lm.MemberID == "":
			if lm.InstanceID != nil && cg.staticMembers[*lm.InstanceID] != "" {
				g.removeCurrentMember(cg.staticMembers[*lm.InstanceID])
				removed++
			} else {
				rm.ErrorCode = codeUnknownMemberID
			}
		case cg.isPending(lm.MemberID):
			cg.remove(lm.MemberID)
			g.cancelTimer(heartbeatKey(lm.MemberID))
			removed++
		default:
			if rm.ErrorCode = cg.validateMember(lm.MemberID, lm.InstanceID); rm.ErrorCode == 0 {
				g.removeCurrentMember(lm.MemberID)
				removed++
			}
		}
		out = append(out, rm)
	}
	if removed > 0 {
		switch cg.state {
		case classicStable, classicCompletingRebalance:
			g.maybePrepareRebalanceOrCompleteJoin()
		case classicPreparingRebalance:
			g.maybeCompleteJoinPhase()
		}
	}
	return 0, out
}

func (g *group) removeCurrentMember(id string) {
	cg := g.classic
	m := cg.member(id)
	g.cancelTimer(heartbeatKey(id))
	cg.completeJoin(m, joinError(codeUnknownMemberID, ""))
	cg.completeSync(m, syncError(codeUnknownMemberID))
	cg.remove(id)
}

func rebalanceTimeoutOf(req *kmsg.JoinGroupRequest) int32 {
	if req.Version == 0 || req.RebalanceTimeoutMillis < 0 {
		return req.SessionTimeoutMillis // v0 has a single timeout
	}
	return req.RebalanceTimeoutMillis
}

func joinError(code int16, memberID string) *kmsg.JoinGroupResponse {
	r := newJoinResponse()
	r.ErrorCode, r.MemberID = code, memberID
	return r
}

func syncError(code int16) *kmsg.SyncGroupResponse {
	return &kmsg.SyncGroupResponse{ErrorCode: code, MemberAssignment: []byte{}}
}

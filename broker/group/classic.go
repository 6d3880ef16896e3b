package group

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// classicState is the state of a classic group (Kafka's ClassicGroupState).
//
//	Empty --join--> PreparingRebalance --all joined / timeout--> CompletingRebalance
//	CompletingRebalance --leader SyncGroup stored--> Stable
//	Stable / CompletingRebalance --member change--> PreparingRebalance
//	PreparingRebalance --no member left--> Empty
//	any --unload or delete--> Dead
type classicState int8

const (
	// classicEmpty: no members; the group may still hold offsets.
	classicEmpty classicState = iota
	// classicPreparingRebalance: members are (re)joining; JoinGroup
	// requests are parked until every member rejoined or the rebalance
	// timeout passed.
	classicPreparingRebalance
	// classicCompletingRebalance: JoinGroup answered; waiting for the
	// leader's SyncGroup with the assignment.
	classicCompletingRebalance
	// classicStable: the assignment is stored and handed out.
	classicStable
	// classicDead: the group is unloaded or deleted.
	classicDead
)

func (s classicState) String() string {
	switch s {
	case classicEmpty:
		return "Empty"
	case classicPreparingRebalance:
		return "PreparingRebalance"
	case classicCompletingRebalance:
		return "CompletingRebalance"
	case classicStable:
		return "Stable"
	case classicDead:
		return "Dead"
	}
	return fmt.Sprintf("classicState(%d)", int8(s))
}

// validPrevious lists the states a group may move to s from.
func (s classicState) validPrevious(prev classicState) bool {
	switch s {
	case classicEmpty:
		return prev == classicPreparingRebalance
	case classicPreparingRebalance:
		return prev == classicStable || prev == classicCompletingRebalance || prev == classicEmpty
	case classicCompletingRebalance:
		return prev == classicPreparingRebalance
	case classicStable:
		return prev == classicCompletingRebalance
	case classicDead:
		return true
	}
	return false
}

// classicMember is a member of a classic group (ClassicGroupMember).
type classicMember struct {
	id                 string
	instanceID         *string
	clientID           string
	clientHost         string
	rebalanceTimeoutMs int32
	sessionTimeoutMs   int32
	protocolType       string
	protocols          []kmsg.JoinGroupRequestProtocol
	assignment         []byte

	// joinCh is set while the member's JoinGroup is parked; syncCh while its
	// SyncGroup is. Both have capacity one and get exactly one response.
	joinCh chan<- *kmsg.JoinGroupResponse
	syncCh chan<- *kmsg.SyncGroupResponse
	// isNew: joined in the current rebalance and not answered yet; such a
	// member is dropped after newMemberJoinTimeout.
	isNew bool
}

func (m *classicMember) awaitingJoin() bool { return m.joinCh != nil }
func (m *classicMember) awaitingSync() bool { return m.syncCh != nil }

// hasSatisfiedHeartbeat tells whether an expired heartbeat timer must be
// ignored: members parked in a JoinGroup or SyncGroup cannot heartbeat.
func (m *classicMember) hasSatisfiedHeartbeat() bool {
	if m.isNew {
		return false
	}
	return m.awaitingJoin() || m.awaitingSync()
}

func (m *classicMember) metadata(protocol string) []byte {
	for _, p := range m.protocols {
		if p.Name == protocol {
			return p.Metadata
		}
	}
	return nil
}

// matches tells whether a rejoin carries exactly the same protocols.
func (m *classicMember) matches(protocols []kmsg.JoinGroupRequestProtocol) bool {
	return slices.EqualFunc(m.protocols, protocols, func(a, b kmsg.JoinGroupRequestProtocol) bool {
		return a.Name == b.Name && bytes.Equal(a.Metadata, b.Metadata)
	})
}

// vote picks the member's most preferred protocol among the candidates.
func (m *classicMember) vote(candidates map[string]bool) string {
	for _, p := range m.protocols {
		if candidates[p.Name] {
			return p.Name
		}
	}
	return ""
}

// classicGroup is the membership state of a classic group (ClassicGroup). It
// is owned by the group goroutine; it does no I/O.
type classicGroup struct {
	id             string
	state          classicState
	previousState  classicState
	stateTimestamp int64 // ms of the last transition; -1 unknown
	generation     int32
	protocolType   string // "" when none
	protocolName   string // "" when none
	leader         string // "" when none

	members        map[string]*classicMember
	order          []string          // member ids in join order; the leader fallback is the first
	staticMembers  map[string]string // group.instance.id -> member id
	pendingJoin    map[string]bool   // member ids handed out with MEMBER_ID_REQUIRED
	pendingSync    map[string]bool   // members that got their JoinGroup but did not sync yet
	awaitingJoin   int               // members with a parked JoinGroup
	newMemberAdded bool              // a member joined during the initial rebalance delay
	protocols      map[string]int    // protocol name -> members supporting it
	subscribed     map[string]bool   // topics of the "consumer" protocol; nil when unknown
}

func newClassicGroup(id string, nowMs int64) *classicGroup {
	return &classicGroup{
		id:             id,
		stateTimestamp: nowMs,
		members:        make(map[string]*classicMember),
		staticMembers:  make(map[string]string),
		pendingJoin:    make(map[string]bool),
		pendingSync:    make(map[string]bool),
		protocols:      make(map[string]int),
	}
}

// transitionTo is the one place the state changes; an illegal transition is
// a bug and panics.
func (g *classicGroup) transitionTo(s classicState, nowMs int64) {
	if !s.validPrevious(g.state) {
		panic(fmt.Sprintf("group %q: illegal transition %s -> %s", g.id, g.state, s))
	}
	g.previousState, g.state = g.state, s
	g.stateTimestamp = nowMs
}

func (g *classicGroup) becomePreparingRebalance(nowMs int64) {
	g.transitionTo(classicPreparingRebalance, nowMs)
}
func (g *classicGroup) becomeCompletingRebalance(nowMs int64) {
	g.transitionTo(classicCompletingRebalance, nowMs)
}
func (g *classicGroup) becomeStable(nowMs int64) { g.transitionTo(classicStable, nowMs) }
func (g *classicGroup) becomeEmpty(nowMs int64)  { g.transitionTo(classicEmpty, nowMs) }
func (g *classicGroup) becomeDead(nowMs int64)   { g.transitionTo(classicDead, nowMs) }

func (g *classicGroup) is(s classicState) bool { return g.state == s }

// canRebalance: a rebalance may start from Stable, CompletingRebalance, Empty.
func (g *classicGroup) canRebalance() bool {
	return classicPreparingRebalance.validPrevious(g.state)
}

func (g *classicGroup) usesConsumerProtocol() bool { return g.protocolType == "consumer" }

func (g *classicGroup) member(id string) *classicMember { return g.members[id] }

// add adds a member, making it the leader if there is none.
func (g *classicGroup) add(m *classicMember, joinCh chan<- *kmsg.JoinGroupResponse) {
	if m.instanceID != nil {
		if _, ok := g.staticMembers[*m.instanceID]; ok {
			panic(fmt.Sprintf("group %q: static member %q added twice", g.id, *m.instanceID))
		}
		g.staticMembers[*m.instanceID] = m.id
	}
	if len(g.members) == 0 {
		g.protocolType = m.protocolType
	}
	if g.leader == "" {
		g.leader = m.id
	}
	g.members[m.id] = m
	g.order = append(g.order, m.id)
	g.countProtocols(m, 1)
	m.joinCh = joinCh
	if joinCh != nil {
		g.awaitingJoin++
	}
	delete(g.pendingJoin, m.id)
}

// remove removes a member or a pending member; a removed leader is replaced
// by the oldest remaining member.
func (g *classicGroup) remove(id string) {
	if m := g.members[id]; m != nil {
		g.countProtocols(m, -1)
		if m.awaitingJoin() {
			g.awaitingJoin--
		}
		if m.instanceID != nil {
			delete(g.staticMembers, *m.instanceID)
		}
		delete(g.members, id)
		g.order = slices.DeleteFunc(g.order, func(s string) bool { return s == id })
	}
	if g.leader == id {
		g.leader = ""
		if len(g.order) > 0 {
			g.leader = g.order[0]
		}
	}
	delete(g.pendingJoin, id)
	delete(g.pendingSync, id)
}

func (g *classicGroup) countProtocols(m *classicMember, delta int) {
	for _, p := range m.protocols {
		g.protocols[p.Name] += delta
		if g.protocols[p.Name] == 0 {
			delete(g.protocols, p.Name)
		}
	}
}

// updateMember replaces a member's protocols and timeouts and parks (or
// unparks, joinCh nil) its JoinGroup.
func (g *classicGroup) updateMember(m *classicMember, protocols []kmsg.JoinGroupRequestProtocol, rebalanceMs, sessionMs int32, joinCh chan<- *kmsg.JoinGroupResponse) {
	g.countProtocols(m, -1)
	m.protocols = protocols
	g.countProtocols(m, 1)
	m.rebalanceTimeoutMs, m.sessionTimeoutMs = rebalanceMs, sessionMs
	switch {
	case joinCh != nil && !m.awaitingJoin():
		g.awaitingJoin++
	case joinCh == nil && m.awaitingJoin():
		g.awaitingJoin--
	}
	m.joinCh = joinCh
}

// completeJoin answers a parked JoinGroup; it reports whether one was parked.
func (g *classicGroup) completeJoin(m *classicMember, resp *kmsg.JoinGroupResponse) bool {
	if !m.awaitingJoin() {
		return false
	}
	m.joinCh <- resp
	m.joinCh = nil
	g.awaitingJoin--
	return true
}

// completeSync answers a parked SyncGroup; it reports whether one was parked.
func (g *classicGroup) completeSync(m *classicMember, resp *kmsg.SyncGroupResponse) bool {
	if !m.awaitingSync() {
		return false
	}
	m.syncCh <- resp
	m.syncCh = nil
	return true
}

// replaceStaticMember gives a static member a new member id, fencing any
// request the old id has parked (KIP-345).
func (g *classicGroup) replaceStaticMember(instanceID, oldID, newID string) *classicMember {
	old := g.members[oldID]
	if old == nil {
		panic(fmt.Sprintf("group %q: cannot replace unknown member %q", g.id, oldID))
	}
	fenced := newJoinResponse()
	fenced.MemberID, fenced.ErrorCode = oldID, codeFencedInstanceID
	g.completeJoin(old, fenced)
	g.completeSync(old, &kmsg.SyncGroupResponse{ErrorCode: codeFencedInstanceID, MemberAssignment: []byte{}})

	nm := *old
	nm.id = newID
	nm.joinCh, nm.syncCh = nil, nil
	delete(g.members, oldID)
	g.members[newID] = &nm
	if i := slices.Index(g.order, oldID); i >= 0 {
		g.order[i] = newID
	}
	if g.leader == oldID {
		g.leader = newID
	}
	if g.pendingSync[oldID] {
		delete(g.pendingSync, oldID)
		g.pendingSync[newID] = true
	}
	g.staticMembers[instanceID] = newID
	return &nm
}

func (g *classicGroup) addPendingMember(id string) {
	if g.members[id] != nil {
		panic(fmt.Sprintf("group %q: pending member %q is already a member", g.id, id))
	}
	g.pendingJoin[id] = true
}

func (g *classicGroup) isPending(id string) bool { return g.pendingJoin[id] }

// hasAllMembersJoined: every member has a parked JoinGroup and no member id
// handed out with MEMBER_ID_REQUIRED is outstanding.
func (g *classicGroup) hasAllMembersJoined() bool {
	return len(g.members) == g.awaitingJoin && len(g.pendingJoin) == 0
}

// notYetRejoined lists members without a parked JoinGroup, in join order.
func (g *classicGroup) notYetRejoined() []*classicMember {
	var out []*classicMember
	for _, id := range g.order {
		if m := g.members[id]; !m.awaitingJoin() {
			out = append(out, m)
		}
	}
	return out
}

func (g *classicGroup) allMembers() []*classicMember {
	out := make([]*classicMember, 0, len(g.order))
	for _, id := range g.order {
		out = append(out, g.members[id])
	}
	return out
}

// maybeElectNewJoinedLeader keeps the leader if it rejoined, else picks a
// member that did; false when nobody rejoined or there is no leader.
func (g *classicGroup) maybeElectNewJoinedLeader() bool {
	if g.leader == "" {
		return false
	}
	if g.members[g.leader].awaitingJoin() {
		return true
	}
	for _, m := range g.allMembers() {
		if m.awaitingJoin() {
			g.leader = m.id
			return true
		}
	}
	return false
}

// rebalanceTimeoutMs is the largest rebalance timeout of the members.
func (g *classicGroup) rebalanceTimeoutMs() int32 {
	var t int32
	for _, m := range g.members {
		t = max(t, m.rebalanceTimeoutMs)
	}
	return t
}

// supportsProtocols: an empty group takes any non-empty protocol list; else
// the protocol type must match and one protocol must be supported by all.
func (g *classicGroup) supportsProtocols(protocolType string, protocols []kmsg.JoinGroupRequestProtocol) bool {
	if g.is(classicEmpty) {
		return protocolType != "" && len(protocols) > 0
	}
	if g.protocolType != protocolType {
		return false
	}
	for _, p := range protocols {
		if g.protocols[p.Name] == len(g.members) {
			return true
		}
	}
	return false
}

// selectProtocol: each member votes for its preferred protocol among those
// all members support; the most votes win (ties: the leader's preference
// order, then the name).
func (g *classicGroup) selectProtocol() string {
	candidates := make(map[string]bool)
	for name, n := range g.protocols {
		if n == len(g.members) {
			candidates[name] = true
		}
	}
	votes := make(map[string]int)
	for _, m := range g.members {
		votes[m.vote(candidates)]++
	}
	rank := func(name string) int {
		if l := g.members[g.leader]; l != nil {
			if i := slices.IndexFunc(l.protocols, func(p kmsg.JoinGroupRequestProtocol) bool { return p.Name == name }); i >= 0 {
				return i
			}
		}
		return len(candidates)
	}
	best := ""
	for name, n := range votes {
		if name == "" {
			continue
		}
		switch b := votes[best]; {
		case best == "" || n > b:
			best = name
		case n == b && (rank(name) < rank(best) || rank(name) == rank(best) && name < best):
			best = name
		}
	}
	return best
}

// initNextGeneration bumps the generation and moves to CompletingRebalance,
// or to Empty when no member is left.
func (g *classicGroup) initNextGeneration(nowMs int64) {
	g.generation++
	if len(g.members) > 0 {
		g.protocolName = g.selectProtocol()
		g.subscribed = g.computeSubscribedTopics()
		g.becomeCompletingRebalance(nowMs)
	} else {
		g.protocolName = ""
		g.subscribed = g.computeSubscribedTopics()
		g.becomeEmpty(nowMs)
	}
	clear(g.pendingSync)
}

// computeSubscribedTopics parses the "consumer" protocol metadata of the
// members; nil when the topics cannot be known.
func (g *classicGroup) computeSubscribedTopics() map[string]bool {
	if !g.usesConsumerProtocol() {
		return nil
	}
	topics := make(map[string]bool)
	if len(g.members) == 0 {
		return topics
	}
	if g.protocolName == "" {
		return nil
	}
	for _, m := range g.members {
		var meta kmsg.ConsumerMemberMetadata
		if err := meta.ReadFrom(m.metadata(g.protocolName)); err != nil {
			return nil
		}
		for _, t := range meta.Topics {
			topics[t] = true
		}
	}
	return topics
}

// isSubscribedToTopic: when the topics are unknown, a "consumer" group is
// taken to be subscribed to everything.
func (g *classicGroup) isSubscribedToTopic(topic string) bool {
	if g.subscribed == nil {
		return g.usesConsumerProtocol()
	}
	return g.subscribed[topic]
}

// validateMember: a static member must use its current member id
// (FENCED_INSTANCE_ID otherwise); the member must exist.
func (g *classicGroup) validateMember(memberID string, instanceID *string) int16 {
	if instanceID != nil {
		existing, ok := g.staticMembers[*instanceID]
		if !ok {
			return codeUnknownMemberID
		}
		if existing != memberID {
			return codeFencedInstanceID
		}
	}
	if g.members[memberID] == nil {
		return codeUnknownMemberID
	}
	return 0
}

// joinMembers is the member list the leader gets in its JoinGroup response.
func (g *classicGroup) joinMembers() []kmsg.JoinGroupResponseMember {
	out := make([]kmsg.JoinGroupResponseMember, 0, len(g.members))
	for _, m := range g.allMembers() {
		jm := kmsg.NewJoinGroupResponseMember()
		jm.MemberID, jm.InstanceID, jm.ProtocolMetadata = m.id, m.instanceID, m.metadata(g.protocolName)
		out = append(out, jm)
	}
	return out
}

// joinResponse is the successful JoinGroup answer for a member of the current
// generation; only the leader gets the member list.
func (g *classicGroup) joinResponse(memberID string) *kmsg.JoinGroupResponse {
	r := newJoinResponse()
	r.MemberID = memberID
	r.Generation = g.generation
	r.ProtocolType = nonEmpty(g.protocolType)
	r.Protocol = nonEmpty(g.protocolName)
	r.LeaderID = g.leader
	if memberID == g.leader {
		r.Members = g.joinMembers()
	}
	return r
}

// metadataValue is the GroupMetadataValue stored for this group, with the
// given assignments (nil: the members' current ones).
func (g *classicGroup) metadataValue(assignments map[string][]byte) *kmsg.GroupMetadataValue {
	v := kmsg.NewGroupMetadataValue()
	v.ProtocolType = g.protocolType
	v.Generation = g.generation
	v.Protocol = nonEmpty(g.protocolName)
	v.Leader = nonEmpty(g.leader)
	v.CurrentStateTimestamp = g.stateTimestamp
	for _, m := range g.allMembers() {
		mm := kmsg.NewGroupMetadataValueMember()
		mm.MemberID, mm.InstanceID = m.id, m.instanceID
		mm.ClientID, mm.ClientHost = m.clientID, m.clientHost
		mm.RebalanceTimeoutMillis, mm.SessionTimeoutMillis = m.rebalanceTimeoutMs, m.sessionTimeoutMs
		mm.Subscription = m.metadata(g.protocolName)
		if mm.Subscription == nil {
			mm.Subscription = []byte{}
		}
		mm.Assignment = m.assignment
		if assignments != nil {
			mm.Assignment = assignments[m.id]
		}
		if mm.Assignment == nil {
			mm.Assignment = []byte{}
		}
		v.Members = append(v.Members, mm)
	}
	return &v
}

// classicGroupFromValue rebuilds a group from its GroupMetadataValue, as
// Kafka's replay does: Stable with members, else Empty.
func classicGroupFromValue(id string, v *kmsg.GroupMetadataValue) *classicGroup {
	g := newClassicGroup(id, v.CurrentStateTimestamp)
	g.generation = v.Generation
	if v.Protocol != nil {
		g.protocolName = *v.Protocol
	}
	for _, vm := range v.Members {
		rebalance := vm.RebalanceTimeoutMillis
		if rebalance == -1 {
			rebalance = vm.SessionTimeoutMillis
		}
		m := &classicMember{
			id: vm.MemberID, instanceID: vm.InstanceID, clientID: vm.ClientID, clientHost: vm.ClientHost,
			rebalanceTimeoutMs: rebalance, sessionTimeoutMs: vm.SessionTimeoutMillis,
			protocolType: v.ProtocolType,
			protocols:    []kmsg.JoinGroupRequestProtocol{{Name: g.protocolName, Metadata: vm.Subscription}},
			assignment:   vm.Assignment,
		}
		g.add(m, nil)
	}
	g.protocolType = v.ProtocolType
	if v.Leader != nil && g.members[*v.Leader] != nil {
		g.leader = *v.Leader
	}
	if len(g.members) > 0 {
		g.state = classicStable
	}
	g.subscribed = g.computeSubscribedTopics()
	return g
}

func newJoinResponse() *kmsg.JoinGroupResponse {
	r := kmsg.NewJoinGroupResponse()
	return &r
}

func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

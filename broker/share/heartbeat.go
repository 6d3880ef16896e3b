package share

import (
	"context"
	"fmt"
	"hash/fnv"
	"slices"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Member epoch of a leaving member.
const leaveGroupMemberEpoch int32 = -1

// validateHeartbeat is Kafka's throwIfShareGroupHeartbeatRequestIsInvalid.
func validateHeartbeat(req *kmsg.ShareGroupHeartbeatRequest) (int16, string) {
	switch {
	case req.MemberID == "":
		return kerr.InvalidRequest.Code, "MemberId can't be empty."
	case req.GroupID == "":
		return kerr.InvalidRequest.Code, "GroupId can't be empty."
	case req.RackID != nil && *req.RackID == "":
		return kerr.InvalidRequest.Code, "RackId can't be empty."
	case req.MemberEpoch == 0 && len(req.SubscribedTopicNames) == 0:
		return kerr.InvalidRequest.Code, "SubscribedTopicNames must be set in first request."
	case req.MemberEpoch < leaveGroupMemberEpoch:
		return kerr.InvalidRequest.Code, "MemberEpoch is invalid."
	}
	return 0, ""
}

func setError(code *int16, msgField **string, c int16, msg string) {
	*code = c
	if msg != "" {
		*msgField = &msg
	}
}

// ShareGroupHeartbeat handles ShareGroupHeartbeat v0-v1: members join with
// epoch 0 (and their client-generated member id), heartbeat with their
// epoch, leave with -1; the coordinator assigns the partitions (the simple
// assignor) and bumps epochs as Kafka's GroupMetadataManager does.
func (c *Coordinator) ShareGroupHeartbeat(ctx context.Context, client Client, req *kmsg.ShareGroupHeartbeatRequest) *kmsg.ShareGroupHeartbeatResponse {
	resp := req.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
	if code, msg := validateHeartbeat(req); code != 0 {
		setError(&resp.ErrorCode, &resp.ErrorMessage, code, msg)
		return resp
	}
	if c.opts.OtherGroupType(req.GroupID) != "" {
		setError(&resp.ErrorCode, &resp.ErrorMessage, kerr.GroupIDNotFound.Code, fmt.Sprintf("Group %s is not a share group.", req.GroupID))
		return resp
	}
	code := c.withGroup(ctx, req.GroupID, req.MemberEpoch == 0, func(g *shareGroup) {
		if g == nil {
			setError(&resp.ErrorCode, &resp.ErrorMessage, kerr.GroupIDNotFound.Code, fmt.Sprintf("Share group %s not found.", req.GroupID))
			return
		}
		g.heartbeat(client, req, resp)
	})
	if code != 0 {
		resp.ErrorCode = code
	}
	return resp
}

// hbPlan is what a heartbeat will change, decided before anything is
// written.
type hbPlan struct {
	records     []Record
	m           *member // the member after the heartbeat
	epoch       int32
	hash        int64
	targets     map[string]assignment
	targetEpoch int32
	newTarget   bool
	state       *stateMetadata // new share-state metadata, if any
	initialize  map[[16]byte]topicInit
}

// heartbeat runs on the group goroutine.
func (g *shareGroup) heartbeat(client Client, req *kmsg.ShareGroupHeartbeatRequest, resp *kmsg.ShareGroupHeartbeatResponse) {
	fail := func(code int16, msg string) {
		setError(&resp.ErrorCode, &resp.ErrorMessage, code, msg)
		g.discardIfUnused()
	}
	if req.MemberEpoch == leaveGroupMemberEpoch {
		g.leave(req, resp)
		return
	}
	old, code, msg := g.memberFor(req)
	if code != 0 {
		fail(code, msg)
		return
	}
	p := g.planHeartbeat(old, client, req)
	if code := g.append(p.records); code != 0 {
		fail(code, "")
		return
	}
	g.applyPlan(p)
	g.scheduleSessionTimeout(p.m.id)
	if len(p.initialize) > 0 {
		g.initializeState(p.initialize, p.epoch, nil)
	}
	resp.MemberID = &p.m.id
	resp.MemberEpoch = p.m.cur.memberEpoch
	resp.HeartbeatIntervalMillis = int32(g.c.opts.Config(g.id).HeartbeatInterval.Milliseconds())
	// The assignment goes to a member that (re)joins, sends a full request
	// (its subscription), or whose assignment changed.
	if req.MemberEpoch == 0 || req.SubscribedTopicNames != nil || old == nil || !old.cur.assigned.equal(p.m.cur.assigned) {
		resp.Assignment = responseAssignment(p.m.cur.assigned)
	}
}

// memberFor finds the member a heartbeat is for (nil: a new member) and
// checks the group size and the member epoch (Kafka's
// throwIfShareGroupIsFull, getOrMaybeSubscribeShareGroupMember and
// throwIfShareGroupMemberEpochIsInvalid). A known member with epoch 0
// rejoins with its current state.
func (g *shareGroup) memberFor(req *kmsg.ShareGroupHeartbeatRequest) (*member, int16, string) {
	m := g.members[req.MemberID]
	max := g.c.opts.MaxGroupSize
	switch {
	case m == nil && int32(len(g.members)) >= max:
		return nil, kerr.GroupMaxSizeReached.Code, fmt.Sprintf("The share group has reached its maximum capacity of %d members.", max)
	case m == nil && req.MemberEpoch != 0:
		return nil, kerr.UnknownMemberID.Code, fmt.Sprintf("Member %s is not a member of group %s.", req.MemberID, g.id)
	case m == nil || req.MemberEpoch == 0:
		return m, 0, ""
	case req.MemberEpoch > m.cur.memberEpoch:
		return nil, kerr.FencedMemberEpoch.Code, fmt.Sprintf("The share group member has a greater member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", req.MemberEpoch, m.cur.memberEpoch)
	case req.MemberEpoch < m.cur.memberEpoch && req.MemberEpoch != m.cur.previousEpoch:
		return nil, kerr.FencedMemberEpoch.Code, fmt.Sprintf("The share group member has a smaller member epoch (%d) than the one known by the group coordinator (%d), and it does not match the previous member epoch (%d). The member must abandon all its partitions and rejoin.", req.MemberEpoch, m.cur.memberEpoch, m.cur.previousEpoch)
	}
	return m, 0, ""
}

// planHeartbeat follows Kafka's shareGroupHeartbeat: 1. update the member
// (a subscription record when it changed; a new subscription bumps the
// group epoch, as does a change of the subscribed topics' metadata or
// share partitions newly initialized); 2. a new target assignment when the
// group epoch passed the assignment epoch; 3. reconcile the member to its
// target; 4. initialize the share state of subscribed partitions that
// have none.
func (g *shareGroup) planHeartbeat(old *member, client Client, req *kmsg.ShareGroupHeartbeatRequest) *hbPlan {
	u := &member{id: req.MemberID, cur: currentAssignment{assigned: assignment{}}}
	if old != nil {
		u = old.clone()
	}
	if req.RackID != nil {
		u.meta.rackID = req.RackID
	}
	if req.SubscribedTopicNames != nil {
		u.meta.topics = sortedUnique(req.SubscribedTopicNames)
	}
	u.meta.clientID, u.meta.clientHost = client.ID, client.Host
	p := &hbPlan{m: u}
	bump := false
	if old == nil || !sameMeta(old.meta, u.meta) {
		p.records = append(p.records, memberRecord(g.id, u.id, u.meta))
		bump = old == nil || !slices.Equal(old.meta.topics, u.meta.topics)
	}
	members := g.withMember(u)
	names := subscribedNames(members)
	p.hash = g.hashTopics(names)
	bump = bump || p.hash != g.metadataHash || g.initializedAssignmentPending(members, names)
	p.epoch = g.epoch
	if bump {
		p.epoch++
		p.records = append(p.records, groupRecord(g.id, groupMetadata{epoch: p.epoch, metadataHash: p.hash}))
	}
	g.planTarget(p, members)
	g.reconcile(p, old == nil, bump)
	g.planInitialize(p, names)
	return p
}

func sameMeta(a, b memberMetadata) bool {
	return ptrEq(a.rackID, b.rackID) && a.clientID == b.clientID && a.clientHost == b.clientHost && slices.Equal(a.topics, b.topics)
}

func ptrEq(a, b *string) bool { return a == nil && b == nil || a != nil && b != nil && *a == *b }

// withMember returns the group's members with u in place of its old self.
func (g *shareGroup) withMember(u *member) map[string]*member {
	out := make(map[string]*member, len(g.members)+1)
	for id, m := range g.members {
		out[id] = m
	}
	out[u.id] = u
	return out
}

// subscribedNames is every topic some member subscribes to, sorted.
func subscribedNames(members map[string]*member) []string {
	var names []string
	for _, m := range members {
		names = append(names, m.meta.topics...)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// metadataHash summarises the subscribed topics that exist (name, id,
// partition count): a change bumps the group epoch so partitions are
// reassigned (Kafka's ShareGroupMetadataValue.MetadataHash). 0 with none.
func (g *shareGroup) hashTopics(names []string) int64 {
	h := fnv.New64a()
	var b []byte
	n := 0
	for _, name := range names {
		id, parts, ok := g.c.opts.TopicByName(name)
		if !ok {
			continue
		}
		n++
		b = kbin.AppendString(b[:0], name)
		b = append(b, id[:]...)
		h.Write(kbin.AppendInt32(b, parts))
	}
	if n == 0 {
		return 0
	}
	return int64(h.Sum64())
}

// initializedAssignmentPending: the target assignment does not cover
// exactly the initialized partitions of the subscribed topics (some were
// initialized since it was computed), so it must be computed again
// (Kafka's initializedAssignmentPending).
func (g *shareGroup) initializedAssignmentPending(members map[string]*member, names []string) bool {
	if len(members) == 0 || len(g.state.initialized) == 0 || len(names) == 0 {
		return false
	}
	assigned := map[[16]byte][]int32{}
	for _, a := range g.target {
		for id, ps := range a {
			assigned[id] = append(assigned[id], ps...)
		}
	}
	for id, t := range g.state.initialized {
		if _, sub := slices.BinarySearch(names, t.name); !sub {
			continue
		}
		got := sortedUnique(assigned[id])
		if !slices.Equal(got, g.assignable(id, t)) {
			return true
		}
	}
	return false
}

// assignable returns the initialized partitions of a topic that exist.
func (g *shareGroup) assignable(id [16]byte, t topicInit) []int32 {
	_, n, ok := g.c.opts.TopicByID(id)
	if !ok {
		return nil
	}
	var out []int32
	for _, p := range t.partitions {
		if p < n {
			out = append(out, p)
		}
	}
	return out
}

// planTarget computes a new target assignment when the group epoch passed
// the assignment epoch.
func (g *shareGroup) planTarget(p *hbPlan, members map[string]*member) {
	p.targets, p.targetEpoch = g.target, g.assignmentEpoch
	if p.epoch <= g.assignmentEpoch {
		return
	}
	p.targets = g.computeTarget(members)
	for _, id := range sortedKeys(p.targets) {
		if prev, ok := g.target[id]; !ok || !prev.equal(p.targets[id]) {
			p.records = append(p.records, targetRecord(g.id, id, p.targets[id]))
		}
	}
	p.records = append(p.records, targetMetaRecord(g.id, p.epoch))
	p.targetEpoch, p.newTarget = p.epoch, true
}

// computeTarget runs the simple assignor over members, giving out only
// partitions whose share state is initialized.
func (g *shareGroup) computeTarget(members map[string]*member) map[string]assignment {
	assignable := map[[16]byte][]int32{}
	for id, t := range g.state.initialized {
		if ps := g.assignable(id, t); len(ps) > 0 {
			assignable[id] = ps
		}
	}
	in := make([]assignMember, 0, len(members))
	for _, id := range sortedKeys(members) {
		am := assignMember{id: id, prev: g.target[id]}
		for _, name := range members[id].meta.topics {
			if tid, _, ok := g.c.opts.TopicByName(name); ok {
				am.topics = append(am.topics, tid)
			}
		}
		slices.SortFunc(am.topics, func(a, b [16]byte) int { return slices.Compare(a[:], b[:]) })
		in = append(in, am)
	}
	return simpleAssign(in, assignable)
}

// reconcile moves the member to its target (Kafka's
// ShareGroupAssignmentBuilder): share partitions are never revoked first,
// so the member takes the target epoch and assignment at once.
func (g *shareGroup) reconcile(p *hbPlan, isNew, force bool) {
	u := p.m
	target := p.targets[u.id]
	if target == nil {
		target = assignment{}
	}
	if !isNew && u.cur.memberEpoch == p.targetEpoch && (!force || u.cur.assigned.equal(target)) {
		return
	}
	u.cur = currentAssignment{memberEpoch: p.targetEpoch, previousEpoch: u.cur.memberEpoch, assigned: target.clone()}
	p.records = append(p.records, currentRecord(g.id, u.id, u.cur))
}

// planInitialize finds the subscribed partitions without share state
// (neither initialized nor initializing for less than the retry interval)
// and records them as initializing (Kafka's subscribedTopicsChangeMap).
func (g *shareGroup) planInitialize(p *hbPlan, names []string) {
	now := g.c.opts.NowMs()
	retry := g.c.opts.InitializeRetryInterval.Milliseconds()
	init := map[[16]byte]topicInit{}
	for _, name := range names {
		id, n, ok := g.c.opts.TopicByName(name)
		if !ok {
			continue
		}
		have := map[int32]bool{}
		for _, q := range g.state.initialized[id].partitions {
			have[q] = true
		}
		if t, ok := g.state.initializing[id]; ok && now-t.createdMs < retry {
			for _, q := range t.partitions {
				have[q] = true
			}
		}
		var missing []int32
		for q := range n {
			if !have[q] {
				missing = append(missing, q)
			}
		}
		if len(missing) > 0 {
			init[id] = topicInit{name: name, partitions: missing, createdMs: now}
		}
	}
	if len(init) == 0 {
		return
	}
	s := g.state.clone()
	for id, t := range init {
		cur := s.initializing[id]
		t.partitions = sortedUnique(append(cur.partitions, t.partitions...))
		s.initializing[id] = t
		delete(s.deleting, id)
	}
	p.state, p.initialize = &s, init
	p.records = append(p.records, stateRecord(g.id, s))
}

// applyPlan installs a committed plan.
func (g *shareGroup) applyPlan(p *hbPlan) {
	g.members[p.m.id] = p.m
	g.epoch, g.metadataHash = p.epoch, p.hash
	if p.newTarget {
		g.target, g.assignmentEpoch = p.targets, p.targetEpoch
	}
	if p.state != nil {
		g.state = *p.state
	}
}

// leave handles member epoch -1.
func (g *shareGroup) leave(req *kmsg.ShareGroupHeartbeatRequest, resp *kmsg.ShareGroupHeartbeatResponse) {
	if g.members[req.MemberID] == nil {
		setError(&resp.ErrorCode, &resp.ErrorMessage, kerr.UnknownMemberID.Code, fmt.Sprintf("Member %s is not a member of group %s.", req.MemberID, g.id))
		g.discardIfUnused()
		return
	}
	if code := g.fence(req.MemberID); code != 0 {
		resp.ErrorCode = code
		return
	}
	resp.MemberID, resp.MemberEpoch = &req.MemberID, leaveGroupMemberEpoch
}

// fence removes members (they left, or their session expired): their
// records are deleted, the group epoch is bumped and the others get a new
// target assignment at once.
func (g *shareGroup) fence(ids ...string) int16 {
	remaining := make(map[string]*member, len(g.members))
	for id, m := range g.members {
		remaining[id] = m
	}
	var records []Record
	for _, id := range ids {
		records = append(records, memberTombstones(g.id, id)...)
		delete(remaining, id)
	}
	epoch, hash := g.epoch+1, g.hashTopics(subscribedNames(remaining))
	records = append(records, groupRecord(g.id, groupMetadata{epoch: epoch, metadataHash: hash}))
	targets := g.computeTarget(remaining)
	for _, id := range sortedKeys(targets) {
		if !g.target[id].equal(targets[id]) {
			records = append(records, targetRecord(g.id, id, targets[id]))
		}
	}
	records = append(records, targetMetaRecord(g.id, epoch))
	if code := g.append(records); code != 0 {
		return code
	}
	for _, id := range ids {
		delete(g.members, id)
		g.timers.Cancel(sessionKey(id))
		g.c.log.Info("share: member removed", "group", g.id, "member", id)
		g.c.opts.MemberLeft(g.id, id)
	}
	g.epoch, g.metadataHash, g.target, g.assignmentEpoch = epoch, hash, targets, epoch
	return 0
}

// scheduleSessionTimeout fences a member that does not heartbeat within
// share.session.timeout.ms.
func (g *shareGroup) scheduleSessionTimeout(id string) {
	g.timers.Schedule(sessionKey(id), g.c.opts.Config(g.id).SessionTimeout, func() {
		if g.members[id] == nil {
			return
		}
		g.c.log.Info("share: member session expired", "group", g.id, "member", id)
		if g.fence(id) != 0 {
			g.scheduleSessionTimeout(id) // try again later
		}
	})
}

func responseAssignment(a assignment) *kmsg.ShareGroupHeartbeatResponseAssignment {
	out := kmsg.NewShareGroupHeartbeatResponseAssignment()
	out.TopicPartitions = []kmsg.ShareGroupHeartbeatResponseAssignmentTopicPartition{}
	for _, id := range a.ids() {
		t := kmsg.NewShareGroupHeartbeatResponseAssignmentTopicPartition()
		t.TopicID, t.Partitions = id, slices.Clone(a[id])
		out.TopicPartitions = append(out.TopicPartitions, t)
	}
	return &out
}

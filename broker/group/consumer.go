package group

import (
	"fmt"
	"hash/fnv"
	"regexp"
	"slices"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// memberState is the reconciliation state of a KIP-848 member (Kafka's
// MemberState; the values are stored in ConsumerGroupCurrentMemberAssignment).
type memberState int8

const (
	// memberStable: the member owns its target assignment at the target epoch.
	memberStable memberState = 0
	// memberUnrevokedPartitions: the member must first give up partitions;
	// it stays at its epoch until it reports them gone.
	memberUnrevokedPartitions memberState = 1
	// memberUnreleasedPartitions: the member is at the target epoch but
	// waits for partitions other members still own.
	memberUnreleasedPartitions memberState = 2
	memberUnknown              memberState = 127
)

func (s memberState) String() string {
	switch s {
	case memberStable:
		return "STABLE"
	case memberUnrevokedPartitions:
		return "UNREVOKED_PARTITIONS"
	case memberUnreleasedPartitions:
		return "UNRELEASED_PARTITIONS"
	}
	return "UNKNOWN"
}

// consumerState is the state of a consumer group, derived from its epochs.
type consumerState int8

const (
	consumerEmpty       consumerState = iota // no members
	consumerAssigning                        // group epoch ahead of the target assignment
	consumerReconciling                      // members still moving to the target
	consumerStable                           // every member owns its target
)

func (s consumerState) String() string {
	switch s {
	case consumerEmpty:
		return "Empty"
	case consumerAssigning:
		return "Assigning"
	case consumerReconciling:
		return "Reconciling"
	case consumerStable:
		return "Stable"
	}
	return fmt.Sprintf("consumerState(%d)", int8(s))
}

// Member epochs of a leaving member (ConsumerGroupHeartbeat).
const (
	leaveGroupMemberEpoch       int32 = -1
	leaveGroupStaticMemberEpoch int32 = -2
)

// consumerMember is a member of a consumer group: its subscription and its
// current assignment, exactly what the two member records hold.
type consumerMember struct {
	id string
	memberSubscription
	memberAssignment
}

func newConsumerMember(id string) *consumerMember {
	return &consumerMember{
		id:                 id,
		memberSubscription: memberSubscription{rebalanceTimeoutMs: -1},
		memberAssignment:   memberAssignment{assigned: assignment{}, pendingRevocation: assignment{}},
	}
}

func (m *consumerMember) clone() *consumerMember {
	c := *m
	c.topicNames = slices.Clone(m.topicNames)
	c.assigned = m.assigned.clone()
	c.pendingRevocation = m.pendingRevocation.clone()
	return &c
}

func (m *consumerMember) sameSubscription(o *consumerMember) bool {
	a, b := m.memberSubscription, o.memberSubscription
	return ptrEq(a.instanceID, b.instanceID) && ptrEq(a.rackID, b.rackID) &&
		a.clientID == b.clientID && a.clientHost == b.clientHost &&
		slices.Equal(a.topicNames, b.topicNames) && ptrEq(a.topicRegex, b.topicRegex) &&
		a.rebalanceTimeoutMs == b.rebalanceTimeoutMs && ptrEq(a.serverAssignor, b.serverAssignor)
}

func (m *consumerMember) sameAssignment(o *consumerMember) bool {
	a, b := m.memberAssignment, o.memberAssignment
	return a.memberEpoch == b.memberEpoch && a.previousMemberEpoch == b.previousMemberEpoch &&
		a.state == b.state && a.assigned.equal(b.assigned) && a.pendingRevocation.equal(b.pendingRevocation)
}

func (m *consumerMember) isReconciledTo(targetEpoch int32) bool {
	return m.state == memberStable && m.memberEpoch == targetEpoch
}

func ptrEq(a, b *string) bool {
	return a == nil && b == nil || a != nil && b != nil && *a == *b
}

// consumerGroup is the state of a KIP-848 group (Kafka's ConsumerGroup),
// owned by the group goroutine.
type consumerGroup struct {
	epoch           int32 // group epoch: bumped on every membership or subscription change
	metadataHash    int64 // hash of the subscribed topics' metadata at the last bump
	assignmentEpoch int32 // epoch of the target assignment
	members         map[string]*consumerMember
	static          map[string]string     // group.instance.id -> member id
	target          map[string]assignment // target assignment per member
	// partitionEpochs holds, per owned partition (assigned or pending
	// revocation), the epoch of its owner: a partition is given to a new
	// member only once it is free here.
	partitionEpochs map[[16]byte]map[int32]int32
	// subscription counts the members' topic names and regexes.
	subscription groupSubscription
}

func newConsumerGroup() *consumerGroup {
	return &consumerGroup{
		members:         make(map[string]*consumerMember),
		static:          make(map[string]string),
		target:          make(map[string]assignment),
		partitionEpochs: make(map[[16]byte]map[int32]int32),
		subscription:    groupSubscription{names: make(map[string]int), regexes: make(map[string]int)},
	}
}

func (cg *consumerGroup) state() consumerState {
	switch {
	case len(cg.members) == 0:
		return consumerEmpty
	case cg.epoch > cg.assignmentEpoch:
		return consumerAssigning
	}
	for _, m := range cg.members {
		if !m.isReconciledTo(cg.assignmentEpoch) {
			return consumerReconciling
		}
	}
	return consumerStable
}

func (cg *consumerGroup) currentPartitionEpoch(id [16]byte, p int32) int32 {
	if e, ok := cg.partitionEpochs[id][p]; ok {
		return e
	}
	return -1
}

func (cg *consumerGroup) setPartitionEpochs(a assignment, epoch int32, remove bool) {
	for id, ps := range a {
		m := cg.partitionEpochs[id]
		if m == nil {
			if remove {
				continue
			}
			m = make(map[int32]int32)
			cg.partitionEpochs[id] = m
		}
		for _, p := range ps {
			if remove {
				delete(m, p)
			} else {
				m[p] = epoch
			}
		}
		if len(m) == 0 {
			delete(cg.partitionEpochs, id)
		}
	}
}

// updateMember installs a member (new or changed).
func (cg *consumerGroup) updateMember(m *consumerMember) {
	if old := cg.members[m.id]; old != nil {
		cg.setPartitionEpochs(old.assigned, 0, true)
		cg.setPartitionEpochs(old.pendingRevocation, 0, true)
		cg.subscription.count(old, -1)
		if old.instanceID != nil && cg.static[*old.instanceID] == m.id {
			delete(cg.static, *old.instanceID)
		}
	}
	cg.members[m.id] = m
	cg.subscription.count(m, 1)
	cg.setPartitionEpochs(m.assigned, m.memberEpoch, false)
	cg.setPartitionEpochs(m.pendingRevocation, m.memberEpoch, false)
	if m.instanceID != nil {
		cg.static[*m.instanceID] = m.id
	}
}

func (cg *consumerGroup) removeMember(id string) {
	m := cg.members[id]
	if m == nil {
		return
	}
	cg.setPartitionEpochs(m.assigned, 0, true)
	cg.setPartitionEpochs(m.pendingRevocation, 0, true)
	cg.subscription.count(m, -1)
	if m.instanceID != nil && cg.static[*m.instanceID] == id {
		delete(cg.static, *m.instanceID)
	}
	delete(cg.members, id)
	delete(cg.target, id)
}

// validateOffsetCommit is ConsumerGroup.validateOffsetCommit: the member
// epoch plays the generation's part.
func (cg *consumerGroup) validateOffsetCommit(memberID string, epoch int32, version int16) int16 {
	if epoch < 0 && len(cg.members) == 0 {
		return 0
	}
	m := cg.members[memberID]
	if m == nil {
		return codeUnknownMemberID
	}
	if version < 9 {
		return codeUnsupportedVersion // KIP-848 members commit with v9+
	}
	if epoch != m.memberEpoch {
		return codeStaleMemberEpoch
	}
	return 0
}

// compiledRegex is a subscription regular expression (RE2 syntax, as
// Kafka's RE2/J; it must match the whole topic name) and the topics it
// matched when last resolved.
type compiledRegex struct {
	re         *regexp.Regexp
	err        error
	topics     []string // sorted
	resolvedAt int64    // ms; 0: never
}

// regexRefreshInterval: a regex is resolved against the topic list again
// when its last resolution is older than this (new topics show up within
// it).
const regexRefreshInterval = 10 * 1000 // ms

func (g *group) regex(expr string) *compiledRegex {
	if g.regexes == nil {
		g.regexes = make(map[string]*compiledRegex)
	}
	r := g.regexes[expr]
	if r == nil {
		re, err := regexp.Compile("^(?:" + expr + ")$")
		r = &compiledRegex{re: re, err: err}
		g.regexes[expr] = r
	}
	return r
}

// resolve returns the existing topics a regex matches.
func (g *group) resolve(expr string) []string {
	r := g.regex(expr)
	if r.err != nil {
		return nil
	}
	now := g.c.nowMs()
	if r.resolvedAt == 0 || now-r.resolvedAt >= regexRefreshInterval {
		r.topics = r.topics[:0]
		for _, t := range g.c.opts.AllTopics() {
			// Internal topics are matched like any other, as Kafka
			// 4.x does: a regex that names __consumer_offsets gets it
			// (clients that must skip internal topics exclude them
			// themselves).
			if r.re.MatchString(t) {
				r.topics = append(r.topics, t)
			}
		}
		slices.Sort(r.topics)
		r.resolvedAt = now
	}
	return r.topics
}

// subscribedTopics resolves a member's subscription: its topic names plus
// the existing topics its regex matches. Sorted.
func (g *group) subscribedTopics(m *consumerMember) []string {
	topics := slices.Clone(m.topicNames)
	if m.topicRegex != nil {
		topics = append(topics, g.resolve(*m.topicRegex)...)
	}
	slices.Sort(topics)
	return slices.Compact(topics)
}

// groupSubscription is what the whole group subscribes to: topic names and
// regular expressions, each with the number of members using it.
type groupSubscription struct {
	names   map[string]int
	regexes map[string]int
}

func (s groupSubscription) clone() groupSubscription {
	c := groupSubscription{names: make(map[string]int, len(s.names)), regexes: make(map[string]int, len(s.regexes))}
	for k, v := range s.names {
		c.names[k] = v
	}
	for k, v := range s.regexes {
		c.regexes[k] = v
	}
	return c
}

// count adds (delta 1) or removes (-1) a member's subscription.
func (s groupSubscription) count(m *consumerMember, delta int) {
	for _, t := range m.topicNames {
		if s.names[t] += delta; s.names[t] <= 0 {
			delete(s.names, t)
		}
	}
	if r := m.topicRegex; r != nil {
		if s.regexes[*r] += delta; s.regexes[*r] <= 0 {
			delete(s.regexes, *r)
		}
	}
}

// subscribedMetas returns the metadata of every existing topic the group
// subscribes to.
func (g *group) subscribedMetas(sub groupSubscription) map[string]topicMeta {
	metas := make(map[string]topicMeta)
	add := func(t string) {
		if _, done := metas[t]; !done {
			metas[t] = g.topicMeta(t)
		}
	}
	for t := range sub.names {
		add(t)
	}
	for r := range sub.regexes {
		for _, t := range g.resolve(r) {
			add(t)
		}
	}
	for t, meta := range metas {
		if meta.partitions <= 0 {
			delete(metas, t)
		}
	}
	return metas
}

func (g *group) topicMeta(topic string) topicMeta {
	if g.c.opts.TopicPartitions == nil {
		return topicMeta{name: topic}
	}
	n, ok := g.c.opts.TopicPartitions(topic)
	if !ok {
		return topicMeta{name: topic}
	}
	id, ok := g.c.opts.TopicID(topic)
	if !ok {
		return topicMeta{name: topic}
	}
	return topicMeta{name: topic, id: id, partitions: n}
}

// metadataHash summarises the subscribed topics (name, id, partitions):
// when it changes the group epoch is bumped and partitions are reassigned
// (Kafka 4.1's ConsumerGroupMetadataValue.MetadataHash, KIP-1101).
func metadataHash(metas map[string]topicMeta) int64 {
	names := make([]string, 0, len(metas))
	for n := range metas {
		names = append(names, n)
	}
	slices.Sort(names)
	h := fnv.New64a()
	var b []byte
	for _, n := range names {
		m := metas[n]
		b = kbin.AppendString(b[:0], n)
		b = append(b, m.id[:]...)
		b = kbin.AppendInt32(b, m.partitions)
		h.Write(b)
	}
	return int64(h.Sum64())
}

// preferredAssignor: the assignor most members ask for, else the default.
func (g *group) preferredAssignor(members map[string]*consumerMember) string {
	votes := make(map[string]int)
	for _, m := range members {
		if m.serverAssignor != nil {
			votes[*m.serverAssignor]++
		}
	}
	best := g.c.opts.ConsumerAssignors[0]
	for _, name := range g.c.opts.ConsumerAssignors {
		if votes[name] > votes[best] {
			best = name
		}
	}
	return best
}

// computeTarget runs the assignor over the members.
func (g *group) computeTarget(members map[string]*consumerMember, metas map[string]topicMeta, previous map[string]assignment) map[string]assignment {
	in := make([]assignMember, 0, len(members))
	for _, id := range sortedKeys(members) {
		in = append(in, assignMember{id: id, topics: g.subscribedTopics(members[id]), prev: previous[id]})
	}
	return assignorsByName[g.preferredAssignor(members)](in, metas)
}

// reconcile moves a member towards its target assignment (Kafka's
// CurrentAssignmentBuilder). owned is what the member reported (nil: not
// reported, so it is assumed to still own everything).
func reconcile(m *consumerMember, targetEpoch int32, target assignment, owned []kmsg.ConsumerGroupHeartbeatRequestTopic, partitionEpoch func([16]byte, int32) int32) *consumerMember {
	switch m.state {
	case memberStable:
		if m.memberEpoch == targetEpoch {
			return m
		}
		return computeNextAssignment(m, m.memberEpoch, targetEpoch, target, owned, partitionEpoch)
	case memberUnrevokedPartitions:
		if ownsAny(owned, m.pendingRevocation) {
			return m
		}
		return computeNextAssignment(m, m.memberEpoch, targetEpoch, target, owned, partitionEpoch)
	case memberUnreleasedPartitions:
		return computeNextAssignment(m, m.memberEpoch, targetEpoch, target, owned, partitionEpoch)
	}
	panic(fmt.Sprintf("member %q in state %s", m.id, m.state))
}

// computeNextAssignment: partitions to give up are revoked first (the member
// keeps its epoch); only then does it move to the target epoch and get new
// partitions, each once its previous owner released it.
func computeNextAssignment(m *consumerMember, memberEpoch, targetEpoch int32, target assignment, owned []kmsg.ConsumerGroupHeartbeatRequestTopic, partitionEpoch func([16]byte, int32) int32) *consumerMember {
	assigned, revoke, add := assignment{}, assignment{}, assignment{}
	unreleased := false
	ids := make(map[[16]byte]bool)
	for id := range target {
		ids[id] = true
	}
	for id := range m.assigned {
		ids[id] = true
	}
	for id := range ids {
		for _, p := range m.assigned[id] {
			if target.has(id, p) {
				assigned.add(id, p)
			} else {
				revoke.add(id, p)
			}
		}
		for _, p := range target[id] {
			if m.assigned.has(id, p) {
				continue
			}
			if partitionEpoch(id, p) != -1 && !m.pendingRevocation.has(id, p) {
				unreleased = true
				continue
			}
			add.add(id, p)
		}
	}
	n := m.clone()
	n.previousMemberEpoch = m.memberEpoch
	switch {
	case len(revoke) > 0 && ownsAny(owned, revoke):
		n.state, n.memberEpoch = memberUnrevokedPartitions, memberEpoch
		n.assigned, n.pendingRevocation = assigned, revoke
	default:
		for id, ps := range add {
			assigned.add(id, ps...)
		}
		n.state, n.memberEpoch = memberStable, targetEpoch
		if unreleased {
			n.state = memberUnreleasedPartitions
		}
		n.assigned, n.pendingRevocation = assigned, assignment{}
	}
	return n
}

// ownsAny: does the member still report owning one of the partitions? When
// it reported nothing it is assumed to.
func ownsAny(owned []kmsg.ConsumerGroupHeartbeatRequestTopic, a assignment) bool {
	if owned == nil {
		return true
	}
	for _, t := range owned {
		for _, p := range t.Partitions {
			if a.has(t.TopicID, p) {
				return true
			}
		}
	}
	return false
}

// isSubset: every reported partition is in a.
func isSubset(owned []kmsg.ConsumerGroupHeartbeatRequestTopic, a assignment) bool {
	if owned == nil {
		return false
	}
	for _, t := range owned {
		for _, p := range t.Partitions {
			if !a.has(t.TopicID, p) {
				return false
			}
		}
	}
	return true
}

// validateMemberEpoch: an epoch ahead of ours, or behind it and not the
// previous epoch with a subset of the assignment (a lost response), fences
// the member. Epoch 0 is a rejoin and always accepted (KAFKA-19233).
func validateMemberEpoch(m *consumerMember, received int32, owned []kmsg.ConsumerGroupHeartbeatRequestTopic) int16 {
	switch {
	case received == 0:
		return 0
	case received > m.memberEpoch:
		return codeFencedMemberEpoch
	case received < m.memberEpoch && (received != m.previousMemberEpoch || !isSubset(owned, m.assigned)):
		return codeFencedMemberEpoch
	}
	return 0
}

// consumerSubscribed reports whether a member subscribes to topic.
func (g *group) consumerSubscribed(topic string) bool {
	sub := g.consumer.subscription
	if sub.names[topic] > 0 {
		return true
	}
	for r := range sub.regexes {
		if _, ok := slices.BinarySearch(g.resolve(r), topic); ok {
			return true
		}
	}
	return false
}

// consumerGroupTombstones delete a consumer group (and any members left).
func (g *group) consumerGroupTombstones() []Record {
	var out []Record
	cg := g.consumer
	for id := range cg.members {
		out = append(out, memberTombstone(typeConsumerGroupCurrentMember, g.id, id))
	}
	for id := range cg.members {
		out = append(out, memberTombstone(typeConsumerGroupTargetMember, g.id, id))
	}
	out = append(out, groupTombstone(typeConsumerGroupTargetMeta, g.id))
	for id := range cg.members {
		out = append(out, memberTombstone(typeConsumerGroupMemberMetadata, g.id, id))
	}
	out = append(out,
		groupTombstone(typeConsumerGroupPartitionMeta, g.id),
		groupTombstone(typeConsumerGroupMetadata, g.id))
	return out
}

// memberRemovalRecords delete one member, in Kafka's order.
func memberRemovalRecords(group, member string) []Record {
	return []Record{
		memberTombstone(typeConsumerGroupCurrentMember, group, member),
		memberTombstone(typeConsumerGroupTargetMember, group, member),
		memberTombstone(typeConsumerGroupMemberMetadata, group, member),
	}
}

package group

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The API handlers. Each takes the decoded request at the client's version
// and returns the response at the same version; Kafka protocol errors are
// error codes in it. Handlers that may park (JoinGroup, SyncGroup) return
// COORDINATOR_NOT_AVAILABLE when ctx ends first; the broker cancels ctx
// when the connection closes or the request times out.

// Authorized operations of a group when no authorizer restricts them: READ,
// DESCRIBE and DELETE (bits 3, 8, 6 of Kafka's AclOperation).
const allGroupOperations int32 = 1<<3 | 1<<6 | 1<<8

// JoinGroup handles JoinGroup v0-v9. The response comes when the join phase
// of the rebalance completes.
func (c *Coordinator) JoinGroup(ctx context.Context, client Client, req *kmsg.JoinGroupRequest) *kmsg.JoinGroupResponse {
	reply := make(chan *kmsg.JoinGroupResponse, 1)
	code := c.startJoin(ctx, client, req, reply)
	if code == 0 {
		select {
		case r := <-reply:
			r.Version = req.Version
			return r
		case <-ctx.Done():
			code = codeCoordinatorNotAvailable
		}
	}
	r := joinError(code, req.MemberID)
	r.Version = req.Version
	return r
}

// startJoin runs a JoinGroup on its group: reply (capacity one) gets the
// response, now or when the join phase completes, unless the code is not 0.
func (c *Coordinator) startJoin(ctx context.Context, client Client, req *kmsg.JoinGroupRequest, reply chan<- *kmsg.JoinGroupResponse) int16 {
	switch {
	case req.Group == "":
		return codeInvalidGroupID
	case req.SessionTimeoutMillis < int32(c.opts.MinSessionTimeout.Milliseconds()) ||
		req.SessionTimeoutMillis > int32(c.opts.MaxSessionTimeout.Milliseconds()):
		return codeInvalidSessionTimeout
	}
	create := kindNone
	if req.MemberID == "" {
		create = kindClassic
	}
	return c.withGroup(ctx, req.Group, create, func(g *group) {
		if g == nil { // a member id for a group that does not exist
			reply <- joinError(codeUnknownMemberID, req.MemberID)
			return
		}
		g.joinGroup(client, req, reply)
	})
}

// SyncGroup handles SyncGroup v0-v5. Followers wait for the leader's
// assignment.
func (c *Coordinator) SyncGroup(ctx context.Context, req *kmsg.SyncGroupRequest) *kmsg.SyncGroupResponse {
	reply := make(chan *kmsg.SyncGroupResponse, 1)
	code := c.startSync(ctx, req, reply)
	if code == 0 {
		select {
		case r := <-reply:
			r.Version = req.Version
			return r
		case <-ctx.Done():
			code = codeCoordinatorNotAvailable
		}
	}
	r := syncError(code)
	r.Version = req.Version
	return r
}

// startSync runs a SyncGroup on its group, like startJoin.
func (c *Coordinator) startSync(ctx context.Context, req *kmsg.SyncGroupRequest, reply chan<- *kmsg.SyncGroupResponse) int16 {
	if req.Group == "" {
		return codeInvalidGroupID
	}
	return c.withGroup(ctx, req.Group, kindNone, func(g *group) {
		if g == nil {
			reply <- syncError(codeUnknownMemberID)
			return
		}
		g.syncGroup(req, reply)
	})
}

// Heartbeat handles Heartbeat v0-v4.
func (c *Coordinator) Heartbeat(ctx context.Context, req *kmsg.HeartbeatRequest) *kmsg.HeartbeatResponse {
	resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
	if req.Group == "" {
		resp.ErrorCode = codeInvalidGroupID
		return resp
	}
	code := c.withGroup(ctx, req.Group, kindNone, func(g *group) {
		if g == nil {
			resp.ErrorCode = codeUnknownMemberID
			return
		}
		resp.ErrorCode = g.heartbeat(req)
	})
	if code != 0 {
		resp.ErrorCode = code
	}
	return resp
}

// LeaveGroup handles LeaveGroup v0-v5 (v3+ leaves a batch of members).
func (c *Coordinator) LeaveGroup(ctx context.Context, req *kmsg.LeaveGroupRequest) *kmsg.LeaveGroupResponse {
	resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
	members := req.Members
	if req.Version <= 2 {
		m := kmsg.NewLeaveGroupRequestMember()
		m.MemberID = req.MemberID
		members = []kmsg.LeaveGroupRequestMember{m}
	}
	if req.Group == "" {
		resp.ErrorCode = codeInvalidGroupID
		return resp
	}
	code := c.withGroup(ctx, req.Group, kindNone, func(g *group) {
		if g == nil {
			resp.ErrorCode = codeUnknownMemberID
			return
		}
		resp.ErrorCode, resp.Members = g.leaveGroup(members)
	})
	if code != 0 {
		resp.ErrorCode, resp.Members = code, nil
	}
	if req.Version <= 2 {
		// Before v3 the member's error is the request's error.
		for _, m := range resp.Members {
			if resp.ErrorCode == 0 {
				resp.ErrorCode = m.ErrorCode
			}
		}
		resp.Members = nil
	}
	return resp
}

// OffsetCommit handles OffsetCommit v2-v9 (topic names; v10 topic ids are
// echoed but not resolved).
func (c *Coordinator) OffsetCommit(ctx context.Context, req *kmsg.OffsetCommitRequest) *kmsg.OffsetCommitResponse {
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	setAll := func(code int16) *kmsg.OffsetCommitResponse {
		fillCommitResponse(resp, req, func(string, int32) int16 { return code })
		return resp
	}
	if req.Group == "" {
		return setAll(codeInvalidGroupID)
	}
	create := kindNone
	if req.Generation < 0 {
		create = kindClassic // a simple consumer creates its group
	}
	code := c.withGroup(ctx, req.Group, create, func(g *group) {
		if g == nil {
			if req.Version >= 9 {
				setAll(codeGroupIDNotFound)
			} else {
				setAll(codeIllegalGeneration)
			}
			return
		}
		resp = g.commitOffsets(req)
	})
	if code != 0 {
		return setAll(code)
	}
	return resp
}

// OffsetFetch handles OffsetFetch v1-v9 (v8+ for several groups). A group
// that never committed gets offset -1 per partition and no error.
func (c *Coordinator) OffsetFetch(ctx context.Context, req *kmsg.OffsetFetchRequest) *kmsg.OffsetFetchResponse {
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	if req.Version >= 8 {
		for i := range req.Groups {
			resp.Groups = append(resp.Groups, c.fetchGroup(ctx, &req.Groups[i], req.RequireStable))
		}
		return resp
	}
	rg := kmsg.NewOffsetFetchRequestGroup()
	rg.Group = req.Group
	if req.Topics != nil {
		rg.Topics = []kmsg.OffsetFetchRequestGroupTopic{}
	}
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetFetchRequestGroupTopic()
		rt.Topic, rt.Partitions = t.Topic, t.Partitions
		rg.Topics = append(rg.Topics, rt)
	}
	out := c.fetchGroup(ctx, &rg, req.Version >= 7 && req.RequireStable)
	resp.ErrorCode = out.ErrorCode
	if out.ErrorCode != 0 && req.Version < 2 {
		// v1 has no group error: every asked partition carries it.
		for _, t := range req.Topics {
			rt := kmsg.NewOffsetFetchResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetFetchResponseTopicPartition()
				rp.Partition, rp.Offset, rp.ErrorCode = p, -1, out.ErrorCode
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
	for _, t := range out.Topics {
		rt := kmsg.NewOffsetFetchResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetFetchResponseTopicPartition()
			rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata, rp.ErrorCode = p.Partition, p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

func (c *Coordinator) fetchGroup(ctx context.Context, rg *kmsg.OffsetFetchRequestGroup, requireStable bool) kmsg.OffsetFetchResponseGroup {
	var out kmsg.OffsetFetchResponseGroup
	if rg.Group == "" {
		out = kmsg.NewOffsetFetchResponseGroup()
		out.ErrorCode = codeInvalidGroupID
		return out
	}
	code := c.withGroup(ctx, rg.Group, kindNone, func(g *group) { out = fetchOffsets(g, rg, requireStable) })
	if code != 0 {
		out = kmsg.NewOffsetFetchResponseGroup()
		out.Group, out.ErrorCode = rg.Group, code
	}
	return out
}

// DescribeGroups handles DescribeGroups v0-v5 (v6 answers GROUP_ID_NOT_FOUND
// for unknown groups). A group that is not a classic group is Dead here.
func (c *Coordinator) DescribeGroups(ctx context.Context, req *kmsg.DescribeGroupsRequest) *kmsg.DescribeGroupsResponse {
	resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
	for _, id := range req.Groups {
		dg := kmsg.NewDescribeGroupsResponseGroup()
		dg.Group = id
		notFound := func() {
			dg.State = classicDead.String()
			if req.Version >= 6 {
				dg.ErrorCode = codeGroupIDNotFound
				dg.ErrorMessage = kmsg.StringPtr(fmt.Sprintf("Group %s not found.", id))
			}
		}
		if id == "" {
			dg.ErrorCode = codeInvalidGroupID
		} else if code := c.withGroup(ctx, id, kindNone, func(g *group) {
			if g == nil || g.classic == nil {
				notFound()
				return
			}
			g.classic.describe(&dg)
		}); code != 0 {
			dg.ErrorCode = code
		}
		if req.IncludeAuthorizedOperations && dg.ErrorCode == 0 {
			dg.AuthorizedOperations = allGroupOperations
		}
		resp.Groups = append(resp.Groups, dg)
	}
	return resp
}

// describe fills a DescribeGroups entry: protocol metadata and assignments
// only in Stable, as Kafka.
func (cg *classicGroup) describe(dg *kmsg.DescribeGroupsResponseGroup) {
	dg.State, dg.ProtocolType = cg.state.String(), cg.protocolType
	stable := cg.is(classicStable)
	if stable {
		dg.Protocol = cg.protocolName
	}
	for _, m := range cg.allMembers() {
		dm := kmsg.NewDescribeGroupsResponseGroupMember()
		dm.MemberID, dm.InstanceID, dm.ClientID, dm.ClientHost = m.id, m.instanceID, m.clientID, m.clientHost
		dm.ProtocolMetadata, dm.MemberAssignment = []byte{}, []byte{}
		if stable {
			dm.ProtocolMetadata = m.metadata(cg.protocolName)
			if m.assignment != nil {
				dm.MemberAssignment = m.assignment
			}
		}
		dg.Members = append(dg.Members, dm)
	}
}

// ListGroups handles ListGroups v0-v5: the groups of the partitions this
// broker leads, filtered by state (v4+) and type (v5+), case-insensitively.
func (c *Coordinator) ListGroups(_ context.Context, req *kmsg.ListGroupsRequest) *kmsg.ListGroupsResponse {
	resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
	groups, loading := c.activeShards()
	if loading {
		resp.ErrorCode = codeCoordinatorLoadInProgress
	}
	matches := func(filter []string, v string) bool {
		return len(filter) == 0 || slices.ContainsFunc(filter, func(f string) bool { return strings.EqualFold(f, v) })
	}
	for _, g := range groups {
		sum := g.summary.Load()
		if sum == nil || sum.state == "Dead" || !matches(req.StatesFilter, sum.state) || !matches(req.TypesFilter, sum.groupType) {
			continue
		}
		lg := kmsg.NewListGroupsResponseGroup()
		lg.Group, lg.ProtocolType, lg.GroupState, lg.GroupType = g.id, sum.protocolType, sum.state, sum.groupType
		resp.Groups = append(resp.Groups, lg)
	}
	slices.SortFunc(resp.Groups, func(a, b kmsg.ListGroupsResponseGroup) int { return strings.Compare(a.Group, b.Group) })
	return resp
}

// DeleteGroups handles DeleteGroups v0-v2: empty groups are deleted with
// their offsets (tombstones); others get NON_EMPTY_GROUP.
func (c *Coordinator) DeleteGroups(ctx context.Context, req *kmsg.DeleteGroupsRequest) *kmsg.DeleteGroupsResponse {
	resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
	for _, id := range req.Groups {
		dg := kmsg.NewDeleteGroupsResponseGroup()
		dg.Group = id
		if id == "" {
			dg.ErrorCode = codeInvalidGroupID
		} else if code := c.withGroup(ctx, id, kindNone, func(g *group) {
			if g == nil {
				dg.ErrorCode = codeGroupIDNotFound
				return
			}
			dg.ErrorCode = g.deleteGroup()
		}); code != 0 {
			dg.ErrorCode = code
		}
		resp.Groups = append(resp.Groups, dg)
	}
	return resp
}

// OffsetDelete handles OffsetDelete v0.
func (c *Coordinator) OffsetDelete(ctx context.Context, req *kmsg.OffsetDeleteRequest) *kmsg.OffsetDeleteResponse {
	resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
	if req.Group == "" {
		resp.ErrorCode = codeInvalidGroupID
		return resp
	}
	code := c.withGroup(ctx, req.Group, kindNone, func(g *group) {
		if g == nil {
			resp.ErrorCode = codeGroupIDNotFound
			return
		}
		resp = g.deleteOffsets(req)
	})
	if code != 0 {
		resp.ErrorCode, resp.Topics = code, nil
	}
	return resp
}

// ConsumerGroupHeartbeat handles ConsumerGroupHeartbeat v0-v1 (KIP-848).
func (c *Coordinator) ConsumerGroupHeartbeat(ctx context.Context, client Client, req *kmsg.ConsumerGroupHeartbeatRequest) *kmsg.ConsumerGroupHeartbeatResponse {
	resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
	if code, msg := c.validateConsumerHeartbeat(req); code != 0 {
		resp.ErrorCode, resp.ErrorMessage = code, &msg
		return resp
	}
	create := kindNone
	if req.MemberEpoch == 0 {
		create = kindConsumer
	}
	code := c.withGroup(ctx, req.Group, create, func(g *group) {
		if g == nil {
			resp.ErrorCode = codeGroupIDNotFound
			resp.ErrorMessage = kmsg.StringPtr(fmt.Sprintf("Consumer group %s not found.", req.Group))
			return
		}
		resp = g.consumerHeartbeat(client, req)
	})
	if code != 0 {
		resp.ErrorCode = code
	}
	return resp
}

// ConsumerGroupDescribe handles ConsumerGroupDescribe v0-v1.
func (c *Coordinator) ConsumerGroupDescribe(ctx context.Context, req *kmsg.ConsumerGroupDescribeRequest) *kmsg.ConsumerGroupDescribeResponse {
	resp := req.ResponseKind().(*kmsg.ConsumerGroupDescribeResponse)
	for _, id := range req.Groups {
		dg := kmsg.NewConsumerGroupDescribeResponseGroup()
		dg.Group = id
		if id == "" {
			dg.ErrorCode = codeInvalidGroupID
		} else if code := c.withGroup(ctx, id, kindNone, func(g *group) {
			switch {
			case g == nil:
				dg.ErrorCode = codeGroupIDNotFound
				dg.ErrorMessage = kmsg.StringPtr(fmt.Sprintf("Group %s not found.", id))
			case g.consumer == nil:
				dg.ErrorCode = codeGroupIDNotFound
				dg.ErrorMessage = kmsg.StringPtr(fmt.Sprintf("Group %s is not a consumer group.", id))
			default:
				g.describeConsumer(&dg, req.Version)
			}
		}); code != 0 {
			dg.ErrorCode = code
		}
		if req.IncludeAuthorizedOperations && dg.ErrorCode == 0 {
			dg.AuthorizedOperations = allGroupOperations
		}
		resp.Groups = append(resp.Groups, dg)
	}
	return resp
}

// describeConsumer fills a ConsumerGroupDescribe entry.
func (g *group) describeConsumer(dg *kmsg.ConsumerGroupDescribeResponseGroup, version int16) {
	cg := g.consumer
	dg.State, dg.Epoch, dg.AssignmentEpoch = cg.state().String(), cg.epoch, cg.assignmentEpoch
	dg.AssignorName = g.preferredAssignor(cg.members)
	names := g.topicNames()
	toAssignment := func(a assignment) kmsg.Assignment {
		out := kmsg.NewAssignment()
		for _, id := range a.topicIDs() {
			tp := kmsg.NewAssignmentTopicPartition()
			tp.TopicID, tp.Topic, tp.Partitions = id, names(id), slices.Clone(a[id])
			out.TopicPartitions = append(out.TopicPartitions, tp)
		}
		return out
	}
	for _, id := range sortedKeys(cg.members) {
		m := cg.members[id]
		dm := kmsg.NewConsumerGroupDescribeResponseGroupMember()
		dm.MemberID, dm.InstanceID, dm.RackID, dm.MemberEpoch = m.id, m.instanceID, m.rackID, m.memberEpoch
		dm.ClientID, dm.ClientHost = m.clientID, m.clientHost
		dm.SubscribedTopics = slices.Clone(m.topicNames)
		if dm.SubscribedTopics == nil {
			dm.SubscribedTopics = []string{}
		}
		dm.SubscribedTopicRegex = m.topicRegex
		dm.Assignment = toAssignment(m.assigned)
		dm.TargetAssignment = toAssignment(cg.target[id])
		if version >= 1 {
			dm.MemberType = 1 // uses the consumer protocol
		}
		dg.Members = append(dg.Members, dm)
	}
}

// topicNames maps topic ids back to names (built once, on first use).
func (g *group) topicNames() func([16]byte) string {
	var byID map[[16]byte]string
	return func(id [16]byte) string {
		if byID == nil {
			byID = make(map[[16]byte]string)
			for _, t := range g.c.opts.AllTopics() {
				if tid, ok := g.c.opts.TopicID(t); ok {
					byID[tid] = t
				}
			}
		}
		return byID[id]
	}
}

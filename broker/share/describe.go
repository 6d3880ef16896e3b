package share

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Assignor is the name ShareGroupDescribe shows (Kafka's SimpleAssignor).
const Assignor = "simple"

// ProtocolType and GroupType are what ListGroups shows for share groups.
const (
	ProtocolType = "share"
	GroupType    = "share"
)

// Authorized operations of a group without an authorizer: READ, DELETE,
// DESCRIBE (bits 3, 6, 8 of Kafka's AclOperation).
const allGroupOperations int32 = 1<<3 | 1<<6 | 1<<8

// ShareGroupDescribe handles ShareGroupDescribe v0-v1.
func (c *Coordinator) ShareGroupDescribe(ctx context.Context, req *kmsg.ShareGroupDescribeRequest) *kmsg.ShareGroupDescribeResponse {
	resp := req.ResponseKind().(*kmsg.ShareGroupDescribeResponse)
	for _, id := range req.GroupIDs {
		dg := kmsg.NewShareGroupDescribeResponseGroup()
		dg.GroupID = id
		if c.opts.OtherGroupType(id) != "" {
			setError(&dg.ErrorCode, &dg.ErrorMessage, codeGroupIDNotFound, fmt.Sprintf("Group %s is not a share group.", id))
			resp.Groups = append(resp.Groups, dg)
			continue
		}
		code := c.withGroup(ctx, id, false, func(g *shareGroup) {
			if g == nil {
				setError(&dg.ErrorCode, &dg.ErrorMessage, codeGroupIDNotFound, fmt.Sprintf("Group %s not found.", id))
				return
			}
			g.describe(&dg)
		})
		if code != 0 {
			dg.ErrorCode = code
		}
		if req.IncludeAuthorizedOperations && dg.ErrorCode == 0 {
			dg.AuthorizedOperations = allGroupOperations
		}
		resp.Groups = append(resp.Groups, dg)
	}
	return resp
}

// describe fills a described group; on the group goroutine.
func (g *shareGroup) describe(dg *kmsg.ShareGroupDescribeResponseGroup) {
	dg.GroupState = g.groupState().String()
	dg.GroupEpoch, dg.AssignmentEpoch, dg.Assignor = g.epoch, g.assignmentEpoch, Assignor
	dg.Members = []kmsg.ShareGroupDescribeResponseGroupMember{}
	for _, id := range sortedKeys(g.members) {
		m := g.members[id]
		dm := kmsg.NewShareGroupDescribeResponseGroupMember()
		dm.MemberID, dm.RackID, dm.MemberEpoch = m.id, m.meta.rackID, m.cur.memberEpoch
		dm.ClientID, dm.ClientHost = m.meta.clientID, m.meta.clientHost
		dm.SubscribedTopicNames = slices.Clone(m.meta.topics)
		dm.Assignment.TopicPartitions = []kmsg.ShareGroupDescribeResponseGroupMemberAssignmentTopicPartition{}
		for _, tid := range m.cur.assigned.ids() {
			tp := kmsg.NewShareGroupDescribeResponseGroupMemberAssignmentTopicPartition()
			tp.TopicID, tp.Partitions = tid, slices.Clone(m.cur.assigned[tid])
			tp.Topic, _, _ = g.c.opts.TopicByID(tid)
			dm.Assignment.TopicPartitions = append(dm.Assignment.TopicPartitions, tp)
		}
		dg.Members = append(dg.Members, dm)
	}
}

// ListGroups returns the share groups for ListGroups v5 (its states and
// types filters, case-insensitive as Kafka; no types filter lists them
// all), and COORDINATOR_LOAD_IN_PROGRESS while a partition loads.
func (c *Coordinator) ListGroups(states, types []string) ([]kmsg.ListGroupsResponseGroup, int16) {
	var code int16
	groups, loading := c.allGroups()
	if loading {
		code = kerr.CoordinatorLoadInProgress.Code
	}
	if len(types) > 0 && !slices.ContainsFunc(types, func(t string) bool { return strings.EqualFold(t, GroupType) }) {
		return nil, code
	}
	var out []kmsg.ListGroupsResponseGroup
	for _, g := range groups {
		sum := g.summary.Load()
		if sum == nil || sum.state == stateDead {
			continue
		}
		st := sum.state.String()
		if len(states) > 0 && !slices.ContainsFunc(states, func(s string) bool { return strings.EqualFold(s, st) }) {
			continue
		}
		lg := kmsg.NewListGroupsResponseGroup()
		lg.Group, lg.ProtocolType, lg.GroupState, lg.GroupType = g.id, ProtocolType, st, GroupType
		out = append(out, lg)
	}
	slices.SortFunc(out, func(a, b kmsg.ListGroupsResponseGroup) int { return strings.Compare(a.Group, b.Group) })
	return out, code
}

// GroupSummary is a served share group as the metrics show it.
type GroupSummary struct {
	ID      string
	State   string
	Members int
}

// Summaries lists the share groups this coordinator serves, sorted by id.
func (c *Coordinator) Summaries() []GroupSummary {
	groups, _ := c.allGroups()
	out := make([]GroupSummary, 0, len(groups))
	for _, g := range groups {
		if sum := g.summary.Load(); sum != nil && sum.state != stateDead {
			out = append(out, GroupSummary{ID: g.id, State: sum.state.String(), Members: sum.members})
		}
	}
	slices.SortFunc(out, func(a, b GroupSummary) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// DescribeGroup answers the classic DescribeGroups for a share group, as
// Kafka does: GROUP_ID_NOT_FOUND, "not a classic group". ok is false when
// id is not a share group here.
func (c *Coordinator) DescribeGroup(id string) (dg kmsg.DescribeGroupsResponseGroup, ok bool) {
	if c.GroupType(id) == "" {
		return dg, false
	}
	dg = kmsg.NewDescribeGroupsResponseGroup()
	dg.Group = id
	setError(&dg.ErrorCode, &dg.ErrorMessage, codeGroupIDNotFound, fmt.Sprintf("Group %s is not a classic group.", id))
	return dg, true
}

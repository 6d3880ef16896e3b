package admin

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// GroupSummary is one line of a group list.
type GroupSummary struct {
	Group        string `json:"group"`
	State        string `json:"state"`
	ProtocolType string `json:"protocol_type"`
	Coordinator  int32  `json:"coordinator"`
}

// TopicPartitions is a topic with some of its partitions.
type TopicPartitions struct {
	Topic      string  `json:"topic"`
	Partitions []int32 `json:"partitions"`
}

// GroupMember is one member of a group with what it was assigned.
type GroupMember struct {
	MemberID   string            `json:"member_id"`
	InstanceID string            `json:"instance_id,omitempty"`
	ClientID   string            `json:"client_id"`
	Host       string            `json:"host"`
	Assignment []TopicPartitions `json:"assignment"`
}

// PartitionLag is a group's position in one partition.
type PartitionLag struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Committed int64  `json:"committed_offset"` // -1: nothing committed
	LogStart  int64  `json:"log_start_offset"`
	LogEnd    int64  `json:"log_end_offset"` // the high watermark
	// Lag is LogEnd - Committed (LogEnd - LogStart with no commit); -1
	// if an offset could not be read.
	Lag      int64  `json:"lag"`
	MemberID string `json:"member_id,omitempty"`
	ClientID string `json:"client_id,omitempty"`
	Host     string `json:"host,omitempty"`
	Error    string `json:"error,omitempty"`
}

// GroupDetail is what `group describe` and the console's group page show.
type GroupDetail struct {
	Group        string         `json:"group"`
	State        string         `json:"state"`
	Protocol     string         `json:"protocol"`
	ProtocolType string         `json:"protocol_type"`
	Coordinator  int32          `json:"coordinator"`
	Members      []GroupMember  `json:"members"`
	Partitions   []PartitionLag `json:"partitions"`
	TotalLag     int64          `json:"total_lag"`
}

// Groups lists the cluster's groups.
func (c *Client) Groups(ctx context.Context) ([]GroupSummary, error) {
	listed, err := c.adm.ListGroups(ctx)
	if err != nil && len(listed) == 0 {
		return nil, c.Explain(ctx, err)
	}
	out := []GroupSummary{}
	for _, g := range listed.Sorted() {
		out = append(out, GroupSummary{Group: g.Group, State: g.State, ProtocolType: g.ProtocolType, Coordinator: g.Coordinator})
	}
	return out, c.Explain(ctx, err)
}

// DescribeGroup describes a group with its members and lag per partition.
func (c *Client) DescribeGroup(ctx context.Context, group string) (*GroupDetail, error) {
	lags, err := c.adm.Lag(ctx, group)
	if err != nil {
		return nil, c.Explain(ctx, err)
	}
	l, ok := lags[group]
	if !ok {
		return nil, &NotFoundError{What: "group", Name: group}
	}
	return c.groupDetail(l)
}

// Lags describes every group (for the console's lag history).
func (c *Client) Lags(ctx context.Context) (map[string]*GroupDetail, error) {
	lags, err := c.adm.Lag(ctx)
	if err != nil {
		return nil, c.Explain(ctx, err)
	}
	out := map[string]*GroupDetail{}
	for g, l := range lags {
		if d, err := c.groupDetail(l); err == nil {
			out[g] = d
		}
	}
	return out, nil
}

func (c *Client) groupDetail(l kadm.DescribedGroupLag) (*GroupDetail, error) {
	subject := fmt.Sprintf("group %q", l.Group)
	if errors.Is(l.DescribeErr, kerr.GroupIDNotFound) || l.DescribeErr == nil && l.State == "Dead" && len(l.Lag) == 0 {
		return nil, &NotFoundError{What: "group", Name: l.Group}
	}
	if l.DescribeErr != nil {
		return nil, c.codeErr(subject, l.DescribeErr, nil, kmsg.DescribeGroups.Int16())
	}
	if l.FetchErr != nil {
		return nil, c.codeErr(subject+" offsets", l.FetchErr, nil, kmsg.OffsetFetch.Int16())
	}
	d := &GroupDetail{Group: l.Group, State: l.State, Protocol: l.Protocol, ProtocolType: l.ProtocolType,
		Coordinator: l.Coordinator.NodeID, Members: []GroupMember{}, Partitions: []PartitionLag{}}
	for _, m := range l.Members {
		d.Members = append(d.Members, member(m))
	}
	for _, ml := range l.Lag.Sorted() {
		pl := PartitionLag{Topic: ml.Topic, Partition: ml.Partition, Committed: ml.Commit.At,
			LogStart: ml.Start.Offset, LogEnd: ml.End.Offset, Lag: ml.Lag}
		if ml.Err != nil {
			pl.Error = ml.Err.Error()
		}
		if ml.Member != nil {
			pl.MemberID, pl.ClientID, pl.Host = ml.Member.MemberID, ml.Member.ClientID, ml.Member.ClientHost
		}
		if pl.Lag > 0 {
			d.TotalLag += pl.Lag
		}
		d.Partitions = append(d.Partitions, pl)
	}
	return d, nil
}

func member(m kadm.DescribedGroupMember) GroupMember {
	gm := GroupMember{MemberID: m.MemberID, InstanceID: deref(m.InstanceID), ClientID: m.ClientID, Host: m.ClientHost,
		Assignment: []TopicPartitions{}}
	if a, ok := m.Assigned.AsConsumer(); ok {
		for _, t := range a.Topics {
			ps := append([]int32{}, t.Partitions...)
			sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
			gm.Assignment = append(gm.Assignment, TopicPartitions{Topic: t.Topic, Partitions: ps})
		}
		sort.Slice(gm.Assignment, func(i, j int) bool { return gm.Assignment[i].Topic < gm.Assignment[j].Topic })
	}
	return gm
}

// GroupResult is the outcome for one group of a delete.
type GroupResult struct {
	Group string `json:"group"`
	Error string `json:"error,omitempty"`
}

// DeleteGroups deletes groups (they must have no members, as in Kafka).
func (c *Client) DeleteGroups(ctx context.Context, groups []string) ([]GroupResult, error) {
	resps, err := c.adm.DeleteGroups(ctx, groups...)
	if err != nil && len(resps) == 0 {
		return nil, c.Explain(ctx, err)
	}
	var out []GroupResult
	var errs []error
	for _, g := range groups {
		r, ok := resps[g]
		res := GroupResult{Group: g}
		gerr := r.Err
		if !ok {
			gerr = c.Explain(ctx, err)
		}
		if errors.Is(gerr, kerr.GroupIDNotFound) {
			gerr = &NotFoundError{What: "group", Name: g}
		}
		if e := c.codeErr(fmt.Sprintf("group %q", g), gerr, nil, kmsg.DeleteGroups.Int16()); e != nil {
			res.Error, errs = e.Error(), append(errs, e)
		}
		out = append(out, res)
	}
	return out, firstOf(errs)
}

// SeekRow is one partition of a group seek: where the group is and where
// it will be.
type SeekRow struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Current   int64  `json:"current_offset"` // -1: nothing committed
	New       int64  `json:"new_offset"`
	Error     string `json:"error,omitempty"`
}

// SeekPlan works out a group seek: every partition of topics (all the
// topics the group has committed offsets for when topics is empty) moved
// to spec. It changes nothing.
func (c *Client) SeekPlan(ctx context.Context, group string, topics []string, spec OffsetSpec) ([]SeekRow, error) {
	committed, err := c.adm.FetchOffsets(ctx, group)
	if err != nil {
		return nil, c.Explain(ctx, c.codeErr(fmt.Sprintf("group %q", group), err, nil, kmsg.OffsetFetch.Int16()))
	}
	set, err := c.seekSet(ctx, group, topics, committed)
	if err != nil {
		return nil, err
	}
	target, err := c.Resolve(ctx, set, spec)
	if err != nil {
		return nil, err
	}
	var rows []SeekRow
	for _, tl := range set.Sorted() {
		for _, p := range tl.Partitions {
			cur := int64(-1)
			if o, ok := committed.Lookup(tl.Topic, p); ok && o.Err == nil {
				cur = o.At
			}
			rows = append(rows, SeekRow{Topic: tl.Topic, Partition: p, Current: cur, New: target.Lookup(tl.Topic, p)})
		}
	}
	return rows, nil
}

// seekSet is the partitions a seek moves.
func (c *Client) seekSet(ctx context.Context, group string, topics []string, committed kadm.OffsetResponses) (kadm.TopicsSet, error) {
	set := kadm.TopicsSet{}
	if len(topics) == 0 {
		committed.Each(func(o kadm.OffsetResponse) {
			if o.Err == nil && o.At >= 0 {
				set.Add(o.Topic, o.Partition)
			}
		})
		if len(set) == 0 {
			return nil, fmt.Errorf("group %q has no committed offsets: name the topics to seek with --topics", group)
		}
		return set, nil
	}
	md, err := c.adm.Metadata(ctx, topics...)
	if err != nil {
		return nil, c.Explain(ctx, err)
	}
	for _, t := range topics {
		td, ok := md.Topics[t]
		if !ok || td.Err != nil {
			return nil, &NotFoundError{What: "topic", Name: t}
		}
		for p := range td.Partitions {
			set.Add(t, p)
		}
	}
	return set, nil
}

// Seek commits a seek plan for group. As in Kafka, only a group without
// members may be moved: live members would overwrite the offsets.
func (c *Client) Seek(ctx context.Context, group string, rows []SeekRow) ([]SeekRow, error) {
	described, err := c.adm.DescribeGroups(ctx, group)
	if err != nil {
		return nil, c.Explain(ctx, err)
	}
	if g, ok := described[group]; ok && len(g.Members) > 0 {
		return nil, fmt.Errorf("group %q has %d active members (state %s): stop its consumers first; "+
			"offsets can only be reset while the group is inactive", group, len(g.Members), g.State)
	}
	offsets := kadm.Offsets{}
	for _, r := range rows {
		offsets.AddOffset(r.Topic, r.Partition, r.New, -1)
	}
	resps, err := c.adm.CommitOffsets(ctx, group, offsets)
	if err != nil {
		return nil, c.Explain(ctx, err)
	}
	var errs []error
	for i, r := range rows {
		if o, ok := resps.Lookup(r.Topic, r.Partition); ok && o.Err != nil {
			e := c.codeErr(fmt.Sprintf("group %q partition %s/%d", group, r.Topic, r.Partition), o.Err, nil, kmsg.OffsetCommit.Int16())
			rows[i].Error, errs = e.Error(), append(errs, e)
		}
	}
	return rows, firstOf(errs)
}

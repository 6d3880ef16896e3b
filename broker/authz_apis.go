package broker

import (
	"context"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/protocol"
	"github.com/kbroker/kbroker/security/acl"
)

// The checks of the APIs whose requests name many resources: they split a
// request into what may go on and the answers of what may not, as Kafka's
// AuthHelper.partitionSeqByAuthorized does, so that each handler's change
// is one call.

// refuse answers the whole request with code (a group or cluster check
// failed).
func refuse(req *protocol.Request, code int16) protocol.Response {
	if body := protocol.ErrorResponse(req.Body, code); body != nil {
		return protocol.Response{Body: body}
	}
	return protocol.Response{Close: true}
}

// partitionByAuthorized splits items into those check allows (code 0)
// and the answers deny makes of the others.
func partitionByAuthorized[T, D any](items []T, check func(T) int16, deny func(T, int16) D) (keep []T, denied []D) {
	for _, it := range items {
		if code := check(it); code != 0 {
			denied = append(denied, deny(it, code))
			continue
		}
		keep = append(keep, it)
	}
	return keep, denied
}

// fetchDenied lists the topics a Fetch may not read: every topic of a
// follower without CLUSTER_ACTION, or each topic a consumer lacks READ on.
func (b *Broker) fetchDenied(req *protocol.Request, r *kmsg.FetchRequest) map[string]bool {
	if b.authz == nil {
		return nil
	}
	view := b.view()
	follower := r.ReplicaID >= 0 || (r.Version >= 15 && r.ReplicaState.ID >= 0)
	clusterOK := follower && b.allowedCluster(req, acl.OpClusterAction)
	var denied map[string]bool
	for _, rt := range r.Topics {
		name := b.fetchTopicName(view, r.Version, rt)
		if name == "" || clusterOK || (!follower && b.allowed(req, acl.OpRead, acl.ResourceTopic, name)) {
			continue
		}
		if denied == nil {
			denied = map[string]bool{}
		}
		denied[name] = true
	}
	return denied
}

// offsetForLeaderEpochDenied is 0 for a follower with CLUSTER_ACTION, else
// the topic's DESCRIBE check (KIP-320 consumers use the API too).
func (b *Broker) offsetForLeaderEpochDenied(req *protocol.Request, fromFollower bool, topic string) int16 {
	if fromFollower && b.visible(req, acl.OpClusterAction, acl.ResourceCluster, acl.ClusterName) {
		return 0
	}
	return b.topicAllowed(req, acl.OpDescribe, topic)
}

// authorizeCreateTopics keeps the topics the principal may create (CLUSTER
// CREATE, else TOPIC CREATE on each) and answers the others.
func (b *Broker) authorizeCreateTopics(req *protocol.Request, r *kmsg.CreateTopicsRequest) (*kmsg.CreateTopicsRequest, []kmsg.CreateTopicsResponseTopic) {
	if b.authz == nil || b.visible(req, acl.OpCreate, acl.ResourceCluster, acl.ClusterName) {
		return r, nil
	}
	keep := *r
	keep.Topics = nil
	var denied []kmsg.CreateTopicsResponseTopic
	for _, t := range r.Topics {
		if code := b.topicAllowed(req, acl.OpCreate, t.Topic); code != 0 {
			rt := kmsg.NewCreateTopicsResponseTopic()
			rt.Topic, rt.ErrorCode = t.Topic, code
			denied = append(denied, rt)
			continue
		}
		keep.Topics = append(keep.Topics, t)
	}
	return &keep, denied
}

// authorizeDeleteTopics keeps the topics the principal may delete.
func (b *Broker) authorizeDeleteTopics(req *protocol.Request, r *kmsg.DeleteTopicsRequest) (*kmsg.DeleteTopicsRequest, []kmsg.DeleteTopicsResponseTopic) {
	if b.authz == nil {
		return r, nil
	}
	view := b.view()
	keep := *r
	keep.TopicNames, keep.Topics = nil, nil
	var denied []kmsg.DeleteTopicsResponseTopic
	deny := func(name *string, id [16]byte) {
		rt := kmsg.NewDeleteTopicsResponseTopic()
		rt.Topic, rt.TopicID, rt.ErrorCode = name, id, kerr.TopicAuthorizationFailed.Code
		denied = append(denied, rt)
	}
	for _, name := range r.TopicNames {
		if b.topicAllowed(req, acl.OpDelete, name) != 0 {
			deny(kmsg.StringPtr(name), [16]byte{})
			continue
		}
		keep.TopicNames = append(keep.TopicNames, name)
	}
	for _, t := range r.Topics {
		name := ""
		if t.Topic != nil {
			name = *t.Topic
		} else if known, ok := view.img.TopicsByID[t.TopicID]; ok {
			name = known.Name
		}
		if name != "" && b.topicAllowed(req, acl.OpDelete, name) != 0 {
			deny(t.Topic, t.TopicID)
			continue
		}
		keep.Topics = append(keep.Topics, t)
	}
	return &keep, denied
}

// forwardAuthorized forwards the part of req that keep says may go, and
// adds the answers of the rest (addDenied) to the controller's response.
func (b *Broker) forwardAuthorized(req *protocol.Request, timeoutMillis int32, keep kmsg.Request, addDenied func(kmsg.Response)) protocol.Response {
	sub := *req
	sub.Body = keep
	resp := b.forwardAdmin(&sub, timeoutMillis)
	forward := resp.Later
	resp.Later = func(ctx context.Context) kmsg.Response {
		out := forward(ctx)
		if addDenied != nil {
			addDenied(out)
		}
		return out
	}
	return resp
}

// authorizeCreatePartitions keeps the topics the principal may ALTER.
func (b *Broker) authorizeCreatePartitions(req *protocol.Request, r *kmsg.CreatePartitionsRequest) (kmsg.Request, func(kmsg.Response)) {
	if b.authz == nil {
		return r, nil
	}
	keep := *r
	keep.Topics = nil
	var denied []kmsg.CreatePartitionsResponseTopic
	for _, t := range r.Topics {
		if code := b.topicAllowed(req, acl.OpAlter, t.Topic); code != 0 {
			rt := kmsg.NewCreatePartitionsResponseTopic()
			rt.Topic, rt.ErrorCode = t.Topic, code
			denied = append(denied, rt)
			continue
		}
		keep.Topics = append(keep.Topics, t)
	}
	return &keep, func(resp kmsg.Response) {
		out := resp.(*kmsg.CreatePartitionsResponse)
		out.Topics = append(out.Topics, denied...)
	}
}

// configResourceAllowed is the check of one config resource: TOPIC on the
// topic, BROKER and BROKER_LOGGER on the cluster, GROUP on the group.
func (b *Broker) configResourceAllowed(req *protocol.Request, op acl.Operation, typ kmsg.ConfigResourceType, name string) int16 {
	switch typ {
	case kmsg.ConfigResourceTypeTopic:
		return b.topicAllowed(req, op, name)
	case kmsg.ConfigResourceTypeGroupConfig:
		return b.groupAllowed(req, op, name)
	}
	return b.clusterAllowed(req, op)
}

// authorizeAlterConfigs keeps the resources the principal may ALTER_CONFIGS.
func (b *Broker) authorizeAlterConfigs(req *protocol.Request, r *kmsg.AlterConfigsRequest) (kmsg.Request, func(kmsg.Response)) {
	if b.authz == nil {
		return r, nil
	}
	keep := *r
	keep.Resources = nil
	var denied []kmsg.AlterConfigsResponseResource
	for _, res := range r.Resources {
		if code := b.configResourceAllowed(req, acl.OpAlterConfigs, res.ResourceType, res.ResourceName); code != 0 {
			out := kmsg.NewAlterConfigsResponseResource()
			out.ResourceType, out.ResourceName, out.ErrorCode = res.ResourceType, res.ResourceName, code
			denied = append(denied, out)
			continue
		}
		keep.Resources = append(keep.Resources, res)
	}
	return &keep, func(resp kmsg.Response) {
		out := resp.(*kmsg.AlterConfigsResponse)
		out.Resources = append(out.Resources, denied...)
	}
}

// authorizeIncrementalAlterConfigs keeps the resources the principal may
// ALTER_CONFIGS.
func (b *Broker) authorizeIncrementalAlterConfigs(req *protocol.Request, r *kmsg.IncrementalAlterConfigsRequest) (kmsg.Request, func(kmsg.Response)) {
	if b.authz == nil {
		return r, nil
	}
	keep := *r
	keep.Resources = nil
	var denied []kmsg.IncrementalAlterConfigsResponseResource
	for _, res := range r.Resources {
		if code := b.configResourceAllowed(req, acl.OpAlterConfigs, res.ResourceType, res.ResourceName); code != 0 {
			out := kmsg.NewIncrementalAlterConfigsResponseResource()
			out.ResourceType, out.ResourceName, out.ErrorCode = res.ResourceType, res.ResourceName, code
			denied = append(denied, out)
			continue
		}
		keep.Resources = append(keep.Resources, res)
	}
	return &keep, func(resp kmsg.Response) {
		out := resp.(*kmsg.IncrementalAlterConfigsResponse)
		out.Resources = append(out.Resources, denied...)
	}
}

// coordinatorKeyAllowed is FindCoordinator's check of one key: DESCRIBE on
// the group or the transactional id.
func (b *Broker) coordinatorKeyAllowed(req *protocol.Request, keyType int8, key string) int16 {
	switch keyType {
	case 0:
		return b.groupAllowed(req, acl.OpDescribe, key)
	case 1:
		return b.TransactionalIDAllowed(req, acl.OpDescribe, key)
	case 2: // share coordinator keys: an inter-broker lookup
		return b.clusterAllowed(req, acl.OpClusterAction)
	}
	return 0
}

// findAuthorizedCoordinator answers one FindCoordinator key once the
// principal may DESCRIBE it.
func (b *Broker) findAuthorizedCoordinator(ctx context.Context, req *protocol.Request, key string, keyType int8) kmsg.FindCoordinatorResponseCoordinator {
	if code := b.coordinatorKeyAllowed(req, keyType, key); code != 0 {
		c := kmsg.NewFindCoordinatorResponseCoordinator()
		c.Key, c.NodeID, c.ErrorCode = key, -1, code
		return c
	}
	return b.findCoordinator(ctx, req.Version, key, keyType, req.Conn.Listener)
}

// authorizeOffsetCommit keeps the topics the principal may READ (the group
// was checked) and returns the answers of the others.
func (b *Broker) authorizeOffsetCommit(req *protocol.Request, r *kmsg.OffsetCommitRequest) (*kmsg.OffsetCommitRequest, []kmsg.OffsetCommitResponseTopic) {
	if b.authz == nil {
		return r, nil
	}
	keep := *r
	keep.Topics = nil
	var denied []kmsg.OffsetCommitResponseTopic
	for _, t := range r.Topics {
		if code := b.topicAllowed(req, acl.OpRead, t.Topic); code != 0 && t.Topic != "" {
			rt := kmsg.NewOffsetCommitResponseTopic()
			rt.Topic, rt.TopicID = t.Topic, t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetCommitResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, code
				rt.Partitions = append(rt.Partitions, rp)
			}
			denied = append(denied, rt)
			continue
		}
		keep.Topics = append(keep.Topics, t)
	}
	return &keep, denied
}

// authorizeOffsetDelete keeps the topics the principal may READ.
func (b *Broker) authorizeOffsetDelete(req *protocol.Request, r *kmsg.OffsetDeleteRequest) (*kmsg.OffsetDeleteRequest, []kmsg.OffsetDeleteResponseTopic) {
	if b.authz == nil {
		return r, nil
	}
	keep := *r
	keep.Topics = nil
	var denied []kmsg.OffsetDeleteResponseTopic
	for _, t := range r.Topics {
		if code := b.topicAllowed(req, acl.OpRead, t.Topic); code != 0 {
			rt := kmsg.NewOffsetDeleteResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetDeleteResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, code
				rt.Partitions = append(rt.Partitions, rp)
			}
			denied = append(denied, rt)
			continue
		}
		keep.Topics = append(keep.Topics, t)
	}
	return &keep, denied
}

// filterOffsetFetch hides what the principal may not see in an OffsetFetch
// answer: a group without DESCRIBE answers GROUP_AUTHORIZATION_FAILED, a
// named topic without DESCRIBE TOPIC_AUTHORIZATION_FAILED per partition,
// and such a topic is left out of an all-topics answer.
func (b *Broker) filterOffsetFetch(req *protocol.Request, r *kmsg.OffsetFetchRequest, resp *kmsg.OffsetFetchResponse) {
	if b.authz == nil {
		return
	}
	if r.Version < 8 {
		if code := b.groupAllowed(req, acl.OpDescribe, r.Group); code != 0 {
			*resp = *protocol.ErrorResponse(r, code).(*kmsg.OffsetFetchResponse)
			return
		}
		out := resp.Topics[:0]
		for _, t := range resp.Topics {
			keep, code := b.fetchedTopicCheck(req, r.Topics != nil, t.Topic)
			for j := range t.Partitions {
				if code != 0 {
					t.Partitions[j] = kmsg.OffsetFetchResponseTopicPartition{Partition: t.Partitions[j].Partition, Offset: -1, LeaderEpoch: -1, ErrorCode: code}
				}
			}
			if keep {
				out = append(out, t)
			}
		}
		resp.Topics = out
		return
	}
	for i := range resp.Groups {
		b.filterFetchedGroup(req, i < len(r.Groups) && r.Groups[i].Topics != nil, &resp.Groups[i])
	}
}

func (b *Broker) filterFetchedGroup(req *protocol.Request, named bool, g *kmsg.OffsetFetchResponseGroup) {
	if code := b.groupAllowed(req, acl.OpDescribe, g.Group); code != 0 {
		*g = kmsg.OffsetFetchResponseGroup{Group: g.Group, ErrorCode: code}
		return
	}
	out := g.Topics[:0]
	for _, t := range g.Topics {
		keep, code := b.fetchedTopicCheck(req, named, t.Topic)
		for j := range t.Partitions {
			if code != 0 {
				t.Partitions[j] = kmsg.OffsetFetchResponseGroupTopicPartition{Partition: t.Partitions[j].Partition, Offset: -1, LeaderEpoch: -1, ErrorCode: code}
			}
		}
		if keep {
			out = append(out, t)
		}
	}
	g.Topics = out
}

// fetchedTopicCheck decides one topic of an OffsetFetch answer: a named
// topic stays, with code TOPIC_AUTHORIZATION_FAILED when denied; a topic of
// an all-topics answer stays only when visible.
func (b *Broker) fetchedTopicCheck(req *protocol.Request, named bool, topic string) (keep bool, code int16) {
	if named {
		return true, b.topicAllowed(req, acl.OpDescribe, topic)
	}
	return b.visible(req, acl.OpDescribe, acl.ResourceTopic, topic), 0
}

// filterListGroups keeps the groups the principal may DESCRIBE unless it
// may DESCRIBE the cluster.
func (b *Broker) filterListGroups(req *protocol.Request, resp *kmsg.ListGroupsResponse) {
	if b.authz == nil || b.visible(req, acl.OpDescribe, acl.ResourceCluster, acl.ClusterName) {
		return
	}
	out := resp.Groups[:0]
	for _, g := range resp.Groups {
		if b.visible(req, acl.OpDescribe, acl.ResourceGroup, g.Group) {
			out = append(out, g)
		}
	}
	resp.Groups = out
}

// authorizeDescribeGroups keeps the groups the principal may DESCRIBE;
// the answers of the others come back with GROUP_AUTHORIZATION_FAILED.
func (b *Broker) authorizeDescribeGroups(req *protocol.Request, r *kmsg.DescribeGroupsRequest) (*kmsg.DescribeGroupsRequest, []kmsg.DescribeGroupsResponseGroup) {
	keep := *r
	keep.Groups = nil
	var denied []kmsg.DescribeGroupsResponseGroup
	for _, g := range r.Groups {
		if code := b.groupAllowed(req, acl.OpDescribe, g); code != 0 {
			dg := kmsg.NewDescribeGroupsResponseGroup()
			dg.Group, dg.ErrorCode, dg.AuthorizedOperations = g, code, authorizedOpsOmitted
			denied = append(denied, dg)
			continue
		}
		keep.Groups = append(keep.Groups, g)
	}
	return &keep, denied
}

// describedGroupsOps sets KIP-430's authorized operations of the groups.
func (b *Broker) describedGroupsOps(req *protocol.Request, r *kmsg.DescribeGroupsRequest, resp *kmsg.DescribeGroupsResponse) {
	for i := range resp.Groups {
		g := &resp.Groups[i]
		g.AuthorizedOperations = authorizedOpsOmitted
		if r.IncludeAuthorizedOperations && g.ErrorCode == 0 {
			g.AuthorizedOperations = b.authorizedOps(req, acl.ResourceGroup, g.Group)
		}
	}
}

// authorizeDeleteGroups keeps the groups the principal may DELETE.
func (b *Broker) authorizeDeleteGroups(req *protocol.Request, r *kmsg.DeleteGroupsRequest) (*kmsg.DeleteGroupsRequest, []kmsg.DeleteGroupsResponseGroup) {
	keep := *r
	keep.Groups = nil
	var denied []kmsg.DeleteGroupsResponseGroup
	for _, g := range r.Groups {
		if code := b.groupAllowed(req, acl.OpDelete, g); code != 0 {
			dg := kmsg.NewDeleteGroupsResponseGroup()
			dg.Group, dg.ErrorCode = g, code
			denied = append(denied, dg)
			continue
		}
		keep.Groups = append(keep.Groups, g)
	}
	return &keep, denied
}

// consumerHeartbeatDenied is ConsumerGroupHeartbeat's check: READ on the
// group and DESCRIBE on every subscribed topic name (Kafka 4.0).
func (b *Broker) consumerHeartbeatDenied(req *protocol.Request, r *kmsg.ConsumerGroupHeartbeatRequest) (int16, string) {
	return b.groupHeartbeatDenied(req, r.Group, r.SubscribedTopicNames)
}

// groupHeartbeatDenied is the check of the KIP-848 and KIP-932
// heartbeats: READ on the group and DESCRIBE on every subscribed topic.
func (b *Broker) groupHeartbeatDenied(req *protocol.Request, group string, topics []string) (int16, string) {
	if code := b.groupAllowed(req, acl.OpRead, group); code != 0 {
		return code, ""
	}
	var missing []string
	for _, t := range topics {
		if b.topicAllowed(req, acl.OpDescribe, t) != 0 {
			missing = append(missing, t)
		}
	}
	if len(missing) > 0 {
		return kerr.TopicAuthorizationFailed.Code, "Unauthorized topics: " + strings.Join(missing, ", ")
	}
	return 0, ""
}

// authorizeConsumerGroupDescribe keeps the groups the principal may
// DESCRIBE.
func (b *Broker) authorizeConsumerGroupDescribe(req *protocol.Request, r *kmsg.ConsumerGroupDescribeRequest) (*kmsg.ConsumerGroupDescribeRequest, []kmsg.ConsumerGroupDescribeResponseGroup) {
	keep := *r
	keep.Groups = nil
	var denied []kmsg.ConsumerGroupDescribeResponseGroup
	for _, g := range r.Groups {
		if code := b.groupAllowed(req, acl.OpDescribe, g); code != 0 {
			dg := kmsg.NewConsumerGroupDescribeResponseGroup()
			dg.Group, dg.ErrorCode, dg.AuthorizedOperations = g, code, authorizedOpsOmitted
			denied = append(denied, dg)
			continue
		}
		keep.Groups = append(keep.Groups, g)
	}
	return &keep, denied
}

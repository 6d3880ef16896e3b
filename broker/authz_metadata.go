package broker

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/protocol"
	"github.com/kbroker/kbroker/security/acl"
)

// Metadata's authorization, as KafkaApis.handleTopicMetadataRequest: a
// topic the principal may not DESCRIBE is left out of an all-topics answer
// (logged at trace) and answered TOPIC_AUTHORIZATION_FAILED when named
// (its name is not echoed for a topic asked by id); auto-creation needs
// CLUSTER CREATE or CREATE on the topic; KIP-430's authorized operations
// are the principal's.

// authorizeAutoCreate splits the missing topics into those this request
// may create and the answers of the others.
func (b *Broker) authorizeAutoCreate(req *protocol.Request, missing []string) ([]string, map[string]int16) {
	if b.authz == nil || len(missing) == 0 {
		return missing, nil
	}
	clusterCreate := b.visible(req, acl.OpCreate, acl.ResourceCluster, acl.ClusterName)
	var keep []string
	denied := map[string]int16{}
	for _, name := range missing {
		switch {
		case !b.allowed(req, acl.OpDescribe, acl.ResourceTopic, name):
			denied[name] = kerr.TopicAuthorizationFailed.Code
		case !clusterCreate && !b.allowed(req, acl.OpCreate, acl.ResourceTopic, name):
			denied[name] = kerr.TopicAuthorizationFailed.Code
		default:
			keep = append(keep, name)
		}
	}
	return keep, denied
}

// authorizeMetadata applies the topic checks and authorized operations to
// a Metadata answer.
func (b *Broker) authorizeMetadata(req *protocol.Request, r *kmsg.MetadataRequest, resp *kmsg.MetadataResponse) *kmsg.MetadataResponse {
	if resp.AuthorizedOperations != authorizedOpsOmitted && r.IncludeClusterAuthorizedOperations {
		resp.AuthorizedOperations = b.clusterAuthorizedOps(req)
	}
	named := !(r.Topics == nil || (r.Version == 0 && len(r.Topics) == 0))
	out := resp.Topics[:0]
	for _, t := range resp.Topics {
		name := ""
		if t.Topic != nil {
			name = *t.Topic
		}
		keep, code := b.describedTopicCheck(req, named, name)
		switch {
		case !keep:
			continue
		case code != 0:
			denied := kmsg.NewMetadataResponseTopic()
			denied.ErrorCode, denied.AuthorizedOperations = code, authorizedOpsOmitted
			if i := len(out); i < len(r.Topics) && r.Topics[i].Topic != nil {
				denied.Topic = t.Topic // asked by name: echo it
			}
			t = denied
		case r.IncludeTopicAuthorizedOperations && t.ErrorCode == 0:
			t.AuthorizedOperations = b.authorizedOps(req, acl.ResourceTopic, name)
		}
		out = append(out, t)
	}
	resp.Topics = out
	return resp
}

// describedTopicCheck decides one topic of a Metadata or
// DescribeTopicPartitions answer: named topics stay, with
// TOPIC_AUTHORIZATION_FAILED without DESCRIBE; unnamed ones stay only when
// visible. A topic without a name (an unknown id) is left as it is.
func (b *Broker) describedTopicCheck(req *protocol.Request, named bool, topic string) (keep bool, code int16) {
	switch {
	case b.authz == nil || topic == "":
		return true, 0
	case named:
		return true, b.topicAllowed(req, acl.OpDescribe, topic)
	}
	return b.visible(req, acl.OpDescribe, acl.ResourceTopic, topic), 0
}

// clusterAuthorizedOps is KIP-430's cluster bit field: the principal's
// operations when it may DESCRIBE the cluster, else none.
func (b *Broker) clusterAuthorizedOps(req *protocol.Request) int32 {
	if !b.visible(req, acl.OpDescribe, acl.ResourceCluster, acl.ClusterName) {
		return 0
	}
	return b.authorizedOps(req, acl.ResourceCluster, acl.ClusterName)
}

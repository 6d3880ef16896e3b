package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/config"
	"github.com/kbroker/kbroker/internal/testsupport"
	"github.com/kbroker/kbroker/security/acl"
	"github.com/kbroker/kbroker/security/principal"
)

// runAs is runRequest on a connection authenticated as p from 127.0.0.1.
func runAs(tb testing.TB, br *Broker, p principal.Principal, req kmsg.Request) kmsg.Response {
	tb.Helper()
	return runOn(tb, br, newConn(p), req)
}

func allowACL(topic string, who string, op acl.Operation) kmsg.CreateACLsRequestCreation {
	c := kmsg.NewCreateACLsRequestCreation()
	c.ResourceType, c.ResourceName, c.ResourcePatternType = kmsg.ACLResourceTypeTopic, topic, kmsg.ACLResourcePatternTypeLiteral
	c.Principal, c.Host, c.Operation, c.PermissionType = who, "*", kmsg.ACLOperation(op), kmsg.ACLPermissionTypeAllow
	return c
}

// With the StandardAuthorizer, each API applies its checks: Produce WRITE
// (nothing appended when denied), Metadata DESCRIBE (filtered, or
// TOPIC_AUTHORIZATION_FAILED when named), follower Fetch CLUSTER_ACTION,
// the ACL APIs CLUSTER DESCRIBE/ALTER, KIP-430 operations.
func TestAPIsAuthorize(t *testing.T) {
	br := startTestBroker(t, func(c *config.Config) {
		c.AuthorizerClassName = config.StandardAuthorizer
		c.SuperUsers = "User:ANONYMOUS" // the test's own requests (runRequest)
	})
	for _, topic := range []string{"a", "b", "c"} {
		createTopic(t, br, topic)
	}
	alice := principal.User("alice")
	create := kmsg.NewPtrCreateACLsRequest()
	create.SetVersion(3)
	create.Creations = []kmsg.CreateACLsRequestCreation{allowACL("a", "User:alice", acl.OpWrite), allowACL("b", "User:alice", acl.OpDescribe)}
	for _, r := range runRequest(t, br, create).(*kmsg.CreateACLsResponse).Results {
		if r.ErrorCode != 0 {
			t.Fatalf("CreateAcls: %v", kerr.ErrorForCode(r.ErrorCode))
		}
	}
	if denied := runAs(t, br, alice, create).(*kmsg.CreateACLsResponse).Results[0].ErrorCode; denied != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("alice's CreateAcls: %v, want CLUSTER_AUTHORIZATION_FAILED", kerr.ErrorForCode(denied))
	}

	produce := func(topic string) int16 {
		req := testsupport.ProduceRequest(topic, 0, 1, 30000, benchBatch(1, 10))
		req.SetVersion(9)
		return runAs(t, br, alice, req).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode
	}
	if code := produce("a"); code != 0 {
		t.Fatalf("produce to a: %v", kerr.ErrorForCode(code))
	}
	part, _ := br.replicas.Partition("b", 0)
	before := part.Log().LogEndOffset()
	if code := produce("b"); code != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("produce to b: %v, want TOPIC_AUTHORIZATION_FAILED", kerr.ErrorForCode(code))
	}
	if after := part.Log().LogEndOffset(); after != before {
		t.Fatalf("a refused produce appended: %d -> %d", before, after)
	}

	md := kmsg.NewPtrMetadataRequest()
	md.SetVersion(12)
	md.IncludeTopicAuthorizedOperations = true
	seen := map[string]int32{}
	for _, mt := range runAs(t, br, alice, md).(*kmsg.MetadataResponse).Topics {
		seen[*mt.Topic] = mt.AuthorizedOperations
	}
	if _, ok := seen["c"]; ok || len(seen) != 2 {
		t.Fatalf("alice's Metadata of all topics: %v, want a and b only", seen)
	}
	if want := int32(1<<acl.OpWrite | 1<<acl.OpDescribe); seen["a"] != want {
		t.Fatalf("authorized operations on a: %b, want WRITE and DESCRIBE %b", seen["a"], want)
	}
	md.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("c")}}
	md.AllowAutoTopicCreation = false
	if code := runAs(t, br, alice, md).(*kmsg.MetadataResponse).Topics[0].ErrorCode; code != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("alice's Metadata of c: %v, want TOPIC_AUTHORIZATION_FAILED", kerr.ErrorForCode(code))
	}

	fetch := kmsg.NewPtrFetchRequest()
	fetch.SetVersion(12)
	fetch.ReplicaID = 2 // a follower without CLUSTER_ACTION
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "a"
	ft.Partitions = []kmsg.FetchRequestTopicPartition{{Partition: 0, PartitionMaxBytes: 1 << 20, CurrentLeaderEpoch: -1, LastFetchedEpoch: -1}}
	fetch.Topics = append(fetch.Topics, ft)
	if code := runAs(t, br, alice, fetch).(*kmsg.FetchResponse).Topics[0].Partitions[0].ErrorCode; code != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("alice as a follower: %v, want TOPIC_AUTHORIZATION_FAILED", kerr.ErrorForCode(code))
	}

	describe := kmsg.NewPtrDescribeACLsRequest()
	describe.SetVersion(3)
	describe.ResourceType, describe.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
	describe.Operation, describe.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	if code := runAs(t, br, alice, describe).(*kmsg.DescribeACLsResponse).ErrorCode; code != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("alice's DescribeAcls: %v", kerr.ErrorForCode(code))
	}
	if res := runRequest(t, br, describe).(*kmsg.DescribeACLsResponse).Resources; len(res) != 2 {
		t.Fatalf("DescribeAcls: %d resources, want 2", len(res))
	}
	dc := kmsg.NewPtrDescribeClusterRequest()
	dc.IncludeClusterAuthorizedOperations = true
	if ops := runAs(t, br, alice, dc).(*kmsg.DescribeClusterResponse).ClusterAuthorizedOperations; ops != 0 {
		t.Fatalf("alice's cluster operations: %b, want none", ops)
	}
}

// Without an authorizer everything is allowed and the ACL APIs answer
// SECURITY_DISABLED, as in Kafka.
func TestACLAPIsWithoutAuthorizer(t *testing.T) {
	br := startTestBroker(t)
	describe := kmsg.NewPtrDescribeACLsRequest()
	describe.ResourceType, describe.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeLiteral
	describe.Operation, describe.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	resp := runRequest(t, br, describe).(*kmsg.DescribeACLsResponse)
	if resp.ErrorCode != kerr.SecurityDisabled.Code || resp.ErrorMessage == nil || *resp.ErrorMessage != noAuthorizerMessage {
		t.Fatalf("DescribeAcls without an authorizer: %+v", resp)
	}
	create := kmsg.NewPtrCreateACLsRequest()
	create.Creations = []kmsg.CreateACLsRequestCreation{allowACL("a", "User:alice", acl.OpWrite)}
	if code := runRequest(t, br, create).(*kmsg.CreateACLsResponse).Results[0].ErrorCode; code != kerr.SecurityDisabled.Code {
		t.Fatalf("CreateAcls without an authorizer: %v", kerr.ErrorForCode(code))
	}
}

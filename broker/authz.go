package broker

import (
	"net"
	"net/netip"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/protocol"
	"github.com/kbroker/kbroker/security/acl"
)

// Authorization, as Kafka's KafkaApis asks its authorizer (AuthHelper):
// every check is one call here, at the top of the handler's loop over
// topics, groups or resources, and answers with the error code the client
// expects. Without an authorizer (authorizer.class.name unset) every call
// allows, as in Kafka.
//
// A check on a resource the client named logs a denial at info in Kafka's
// authorizer-log form and counts it in kbroker_authorization_denied_total;
// a filtering check (Metadata of all topics, ListGroups, authorized
// operations) logs at trace only.

// aclRequest describes who asks: the connection's principal and host.
func aclRequest(req *protocol.Request) acl.Request {
	r := acl.Request{API: kmsg.NameForKey(req.Key)}
	if req.Conn == nil {
		return r
	}
	r.Principal = req.Conn.Principal()
	r.Host = remoteHost(req.Conn.Remote)
	return r
}

func remoteHost(a net.Addr) string {
	if a == nil {
		return ""
	}
	if ap, err := netip.ParseAddrPort(a.String()); err == nil {
		return acl.HostAddress(ap.Addr())
	}
	host, _, _ := net.SplitHostPort(a.String())
	return host
}

// allowed decides op on a resource the request names.
func (b *Broker) allowed(req *protocol.Request, op acl.Operation, typ acl.ResourceType, name string) bool {
	if b.authz == nil {
		return true
	}
	return b.authz.Allowed(aclRequest(req), acl.Action{Operation: op, Type: typ, Name: name, RefCount: 1, LogIfDenied: true, LogIfAllowed: true})
}

// visible decides op on a resource the request did not name (filtering).
func (b *Broker) visible(req *protocol.Request, op acl.Operation, typ acl.ResourceType, name string) bool {
	if b.authz == nil {
		return true
	}
	return b.authz.Allowed(aclRequest(req), acl.Action{Operation: op, Type: typ, Name: name, RefCount: 1})
}

// allowedCluster decides op on the CLUSTER resource.
func (b *Broker) allowedCluster(req *protocol.Request, op acl.Operation) bool {
	return b.allowed(req, op, acl.ResourceCluster, acl.ClusterName)
}

// topicAllowed returns 0 when op on the topic is allowed, else
// TOPIC_AUTHORIZATION_FAILED.
func (b *Broker) topicAllowed(req *protocol.Request, op acl.Operation, topic string) int16 {
	if b.allowed(req, op, acl.ResourceTopic, topic) {
		return 0
	}
	return kerr.TopicAuthorizationFailed.Code
}

// groupAllowed returns 0 when op on the group is allowed, else
// GROUP_AUTHORIZATION_FAILED.
func (b *Broker) groupAllowed(req *protocol.Request, op acl.Operation, group string) int16 {
	if b.allowed(req, op, acl.ResourceGroup, group) {
		return 0
	}
	return kerr.GroupAuthorizationFailed.Code
}

// clusterAllowed returns 0 when op on the cluster is allowed, else
// CLUSTER_AUTHORIZATION_FAILED.
func (b *Broker) clusterAllowed(req *protocol.Request, op acl.Operation) int16 {
	if b.allowedCluster(req, op) {
		return 0
	}
	return kerr.ClusterAuthorizationFailed.Code
}

// TransactionalIDAllowed returns 0 when op on the transactional id is
// allowed, else TRANSACTIONAL_ID_AUTHORIZATION_FAILED: InitProducerId,
// AddPartitionsToTxn, AddOffsetsToTxn, EndTxn and TxnOffsetCommit need
// WRITE, FindCoordinator of a transaction and DescribeTransactions
// DESCRIBE.
func (b *Broker) TransactionalIDAllowed(req *protocol.Request, op acl.Operation, id string) int16 {
	if b.allowed(req, op, acl.ResourceTransactionalID, id) {
		return 0
	}
	return kerr.TransactionalIDAuthorizationFailed.Code
}

// txnGroupAllowed is the check of a transaction's offsets (AddOffsetsToTxn,
// TxnOffsetCommit): WRITE on the transactional id, then READ on the group.
func (b *Broker) txnGroupAllowed(req *protocol.Request, id, group string) int16 {
	if code := b.TransactionalIDAllowed(req, acl.OpWrite, id); code != 0 {
		return code
	}
	return b.groupAllowed(req, acl.OpRead, group)
}

// idempotentAllowed is InitProducerId's check without a transactional id:
// CLUSTER IDEMPOTENT_WRITE, or WRITE on some topic (KIP-679).
func (b *Broker) idempotentAllowed(req *protocol.Request) int16 {
	if b.authz == nil {
		return 0
	}
	r := aclRequest(req)
	if b.authz.Allowed(r, acl.Action{Operation: acl.OpIdempotentWrite, Type: acl.ResourceCluster, Name: acl.ClusterName, RefCount: 1}) ||
		b.authz.AuthorizeByResourceType(r, acl.OpWrite, acl.ResourceTopic) {
		return 0
	}
	b.allowedCluster(req, acl.OpIdempotentWrite) // log and count the denial as Kafka does
	return kerr.ClusterAuthorizationFailed.Code
}

// authorizedOps is the KIP-430 bit field of what the principal may do on
// a resource.
func (b *Broker) authorizedOps(req *protocol.Request, typ acl.ResourceType, name string) int32 {
	if b.authz == nil {
		var bits int32
		for _, op := range acl.SupportedOperations(typ) {
			bits |= 1 << op
		}
		return bits
	}
	return b.authz.AuthorizedOperations(aclRequest(req), typ, name)
}

// noAuthorizer is SECURITY_DISABLED, the answer of the ACL APIs when no
// authorizer is configured.
const noAuthorizerMessage = "No Authorizer is configured."

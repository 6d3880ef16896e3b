// Package quota is Kafka's client quotas (KIP-13, KIP-55, KIP-124, KIP-219,
// KIP-546, KIP-599), the parts that do not touch a socket: the quota
// entities and their configs, the validation and planning of
// AlterClientQuotas (Kafka's ClientQuotaControlManager), the matching of
// DescribeClientQuotas (ClientQuotasImage.describe), the precedence that
// picks the quota of a (user, client id) (ClientQuotaManager's
// DefaultQuotaCallback), and the quota managers that measure clients
// against their quotas and compute throttle times (ClientQuotaManager,
// ClientRequestQuotaManager, ControllerMutationQuotaManager).
//
// # Entities
//
// An Entity names a user, a client id, both, or an IP, each by name or as
// the <default> of its type (a null name on the wire). The quotas of the
// cluster are a map from Entity to config key to value, stored in the
// replicated metadata log (replication/controller's ClientQuota record).
//
// # Precedence
//
// For a connection's (user, client id) and one quota key, the first entity
// with that key in this list applies:
//
//	/config/users/<user>/clients/<client-id>
//	/config/users/<user>/clients/<default>
//	/config/users/<user>
//	/config/users/<default>/clients/<client-id>
//	/config/users/<default>/clients/<default>
//	/config/users/<default>
//	/config/clients/<client-id>
//	/config/clients/<default>
//
// The level that applies decides what is measured together: a user quota
// is shared by all the user's client ids, a (user, client id) quota by the
// connections of that pair only (Resolve's Tags). The user is the
// connection's authenticated principal name (User:ANONYMOUS on PLAINTEXT).
//
// # Measuring
//
// Byte-rate and request-time quotas are Kafka's Rate over quota.window.num
// windows of quota.window.size.seconds (internal/sampled); a client over
// its quota gets the throttle time QuotaUtils.throttleTime computes, which
// the broker returns in throttle_time_ms and for which it mutes the
// connection (KIP-219). Controller mutations (partitions created or
// deleted) go through a token bucket (KIP-599): strict from the request
// versions that know THROTTLING_QUOTA_EXCEEDED, permissive before.
//
// Nothing here reads a clock or starts a goroutine: managers take an
// injected clock, and sensors unused for an hour are dropped on a later
// call, as Kafka expires them.
package quota

// Package acl is Kafka's StandardAuthorizer as pure functions over an
// immutable, indexed ACL set, plus the decoding, validation and filtering
// the CreateAcls, DescribeAcls and DeleteAcls APIs need.
//
// Semantics (Kafka's, checked by the table tests in decide_test.go):
//
//   - Resource types TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID,
//     DELEGATION_TOKEN, USER; ACL patterns LITERAL and PREFIXED; filters
//     add ANY and MATCH. The LITERAL name "*" applies to every resource of
//     its type, User:* to every principal, host "*" to every host.
//   - super.users are allowed everything. Otherwise any DENY that applies
//     denies; else any ALLOW that applies allows; else, when no ACL at all
//     (of any principal, operation or host) applies to the resource,
//     allow.everyone.if.no.acl.found decides; else deny.
//   - Only ALLOW implies: an ALLOW of READ, WRITE, DELETE or ALTER also
//     allows DESCRIBE, ALTER_CONFIGS allows DESCRIBE_CONFIGS, ALL allows
//     everything. A DENY denies only its own operation (or ALL of them).
//   - Hosts compare as strings with the client address in Java's form
//     (HostAddress: IPv6 uncompressed).
//
// Concurrency: a Set never changes once built (With and Without return new
// sets); the Authorizer swaps its Set with an atomic pointer, so
// authorization takes no lock. The metadata image (controller) owns the
// source of truth and calls SetACLs after applying ACL records.
//
// Where kbroker differs or was unsure:
//
//   - Kafka refuses a whole CreateAcls request whose creation carries code 0
//     (UNKNOWN) in a field, by failing to parse it; kbroker rejects such
//     bindings one by one with INVALID_REQUEST, like unrecognised codes.
//   - When several ALLOW ACLs apply, the one named in the log line may
//     differ from the one Kafka names (Kafka's scan order is by reversed
//     resource name); the decision is the same.
//   - Before the first SetACLs only super users are allowed (Kafka throws
//     AuthorizerNotReadyException; brokers do not serve clients then).
package acl

// Package session is one connection's authentication, as Kafka's
// SaslServerAuthenticator runs it: a state machine (handshake ->
// authenticate -> authenticated, re-authentication, failed), the pre-auth
// gate (before authentication only ApiVersions, SaslHandshake and
// SaslAuthenticate are served; anything else closes the connection
// unanswered), SaslHandshake v0-v1 and SaslAuthenticate v0-v2 answered
// with kmsg types, KIP-368 session expiry, and the principal that
// authorization uses.
//
// # Wiring plan (the later step, once the protocol/config/broker refactor lands)
//
// The security packages are self-contained; the wiring touches these
// files, each change small:
//
// config/ (keys.go, listener.go, validate.go)
//
//   - listener.security.protocol.map already parses; validate each value
//     with session.ParseProtocol. inter.broker.listener.name /
//     security.inter.broker.protocol pick the protocol of broker clients.
//   - Per listener L: tlsconf.FromConfig(get, L) for ssl.* (Keys lists
//     them; Sensitive marks passwords and ssl.keystore.key for
//     DescribeConfigs and logs); sasl.ParseEnabledMechanisms of
//     listener.name.<l>.sasl.enabled.mechanisms or sasl.enabled.mechanisms
//     (default GSSAPI: refuse it with "GSSAPI is not supported");
//     listener.name.<l>.<mech>.sasl.jaas.config (lower-case mechanism);
//     connections.max.reauth.ms, connection.failed.authentication.delay.ms
//     (default 100), sasl.oauthbearer.* (jwks.endpoint.url, refresh.ms,
//     retry.backoff.ms, expected.audience, expected.issuer,
//     sub/scope.claim.name, clock.skew.seconds), super.users
//     (acl.ParseSuperUsers), allow.everyone.if.no.acl.found,
//     authorizer.class.name (accept
//     org.apache.kafka.metadata.authorizer.StandardAuthorizer and empty =
//     no authorization; refuse others), ssl.principal.mapping.rules
//     (principal.ParseSSLMappingRules, default DEFAULT).
//
// protocol/ (server.go, conn.go, handler.go, client.go)
//
//   - ServerOptions gains Listeners map[name]ListenerSecurity{Protocol,
//     TLS *tlsconf.Reloader, Session func(*tls.ConnectionState)
//     (*session.Session, error)}. Serve wraps the listener with
//     tls.NewListener(l, reloader.Config()) for SSL/SASL_SSL; serveConn runs
//     the handshake with a deadline, then session.New; a mapping error closes.
//   - ConnInfo gains Session *session.Session (handlers read Principal()).
//   - The reader loop, before Handle: v := Session.Gate(key); !v.Serve ->
//     log v.Reason and close without a response. With Session.RawTokens()
//     (SaslHandshake v0) the next frame is a raw token: Session.Token, and
//     write the reply as a size-prefixed frame.
//   - Where TLS is on, Vector/sendfile responses fall back to copying
//     (sendfile cannot go through crypto/tls): conn.go checks
//     nc.(*tls.Conn) and flattens vectors. Measure for BENCHMARKS.md.
//   - client.go (broker-to-broker and broker-to-controller): dial with
//     reloader.ClientConfig(host) and authenticate with franz-go's sasl
//     mechanisms (pkg/sasl/plain, scram, oauth) from the listener's JAAS
//     username/password (plain.ParseJAAS) before the first request.
//
// broker/ (dispatch.go, one new file per API, authorization calls)
//
//   - dispatch.go: add {17, 0, 1, b.handleSaslHandshake}, {36, 0, 2,
//     b.handleSaslAuthenticate}, {29, 0, 3, DescribeAcls}, {30, 0, 3,
//     CreateAcls}, {31, 0, 3, DeleteAcls}, {50, 0, 0,
//     DescribeUserScramCredentials}, {51, 0, 0, AlterUserScramCredentials}.
//   - api_17_sasl_handshake.go / api_36_sasl_authenticate.go: call
//     Session.HandleSaslHandshake / HandleSaslAuthenticate; on Failure log
//     Err.Reason with the principal-less remote address, count
//     kbroker_failed_authentication_total{listener,mechanism}, answer
//     through protocol.Response{Later} after
//     connection.failed.authentication.delay.ms, then Close.
//   - api_29/30/31_*_acls.go: acl.FilterFromDescribe + ValidateDescribe,
//     acl.BindingFromCreation + Binding.Validate per creation,
//     acl.FilterFromDeletion + Filter.Validate per filter; creations and
//     deletions are forwarded to the controller; answers with
//     acl.DescribeResources / acl.MatchingACLs. No authorizer configured:
//     SECURITY_DISABLED "No Authorizer is configured."
//   - api_50/51_*_scram_credentials.go: scram.Describe over the image;
//     AlterUserScramCredentials forwarded to the controller, which runs
//     scram.PlanAlter. Both need CLUSTER DESCRIBE / ALTER.
//   - An authz.go helper builds acl.Request{Principal: Session.Principal(),
//     Host: acl.HostAddress(remote), API: kmsg.NameForKey(key)} and calls
//     acl.Authorizer.Authorize with Kafka's checks per API: Produce TOPIC
//     WRITE (+ TRANSACTIONAL_ID WRITE, idempotent: CLUSTER IDEMPOTENT_WRITE
//     or AuthorizeByResourceType(WRITE, TOPIC)); Fetch TOPIC READ, replica
//     fetch CLUSTER CLUSTER_ACTION; Metadata TOPIC DESCRIBE (filter with
//     LogIfDenied=false for all-topics, TOPIC_AUTHORIZATION_FAILED for named
//     ones; auto-creation CLUSTER or TOPIC CREATE); ListOffsets/
//     OffsetForLeaderEpoch TOPIC DESCRIBE; groups GROUP READ/DESCRIBE/DELETE
//     (+ TOPIC READ for offset commits); CreateTopics CLUSTER or TOPIC CREATE;
//     DeleteTopics/DeleteRecords TOPIC DELETE; CreatePartitions TOPIC ALTER;
//     Describe/AlterConfigs DESCRIBE_CONFIGS/ALTER_CONFIGS on TOPIC, CLUSTER
//     (broker) or GROUP; ElectLeaders, reassignments, AlterPartition,
//     broker registration/heartbeat CLUSTER ALTER / CLUSTER_ACTION;
//     InitProducerId/AddPartitionsToTxn/EndTxn TRANSACTIONAL_ID WRITE (the
//     txn work in broker/txn calls the same helper); KIP-430 authorized
//     operations from Authorizer.AuthorizedOperations in Metadata,
//     DescribeCluster and DescribeGroups. Options.OnDeny counts
//     kbroker_authorization_denied_total{api,resource_type}; Options.Log is a
//     "kafka.authorizer.logger" slog logger.
//
// replication/controller (records.go, apply.go, image.go, api_*.go)
//
//   - Records, Kafka's KRaft names: AccessControlEntry{id, binding} and
//     RemoveAccessControlEntry{id}; UserScramCredential{name, mechanism,
//     salt, storedKey, serverKey, iterations} and
//     RemoveUserScramCredential{name, mechanism}. The image keeps id ->
//     acl.Binding and (user, mechanism) -> scram.Credential; after each
//     apply the broker calls Authorizer.SetACLs(acl.NewSet(bindings)) and
//     its scram.Store reads the image (copy on write, no lock on lookup).
//   - CreateAcls: per binding Validate, skip exact duplicates, new ids,
//     one atomic batch; DeleteAcls: Filter.Matches over the image, one
//     RemoveAccessControlEntry per match; AlterUserScramCredentials:
//     scram.PlanAlter with exists from the image, its Upserts/Deletes as
//     one atomic batch. Snapshots include both maps, so ACLs and
//     credentials survive restarts and controller failover.
//   - Bootstrap: `kbroker format --add-scram 'SCRAM-SHA-256=[name=admin,
//     password=...]'` (scram.ParseAddScram) writes UserScramCredential
//     records into the initial metadata with the cluster id.
//
// cmd/kbroker: a `kbroker dev-certs --dir D --broker-hosts h1,h2` subcommand
// over devca writes ca.pem, <host>.keystore.pem and client.keystore.pem
// and prints the matching server.properties and kcat/franz-go settings.
// The Makefile's fuzz target gains the fuzz tests of security/...
package session

// Package session is one connection's authentication, as Kafka's
// SaslServerAuthenticator runs it: a state machine (handshake ->
// authenticate -> authenticated, re-authentication, failed), the pre-auth
// gate (before authentication only ApiVersions, SaslHandshake and
// SaslAuthenticate are served; anything else closes the connection
// unanswered), SaslHandshake v0-v1 and SaslAuthenticate v0-v2 answered
// with kmsg types, KIP-368 session expiry, and the principal that
// authorization uses.
//
// # Wiring (as built)
//
//   - config: listener.security.protocol.map takes the four protocols; the
//     broker-wide security keys are typed (super.users,
//     allow.everyone.if.no.acl.found, authorizer.class.name,
//     security.inter.broker.protocol, sasl.mechanism.inter.broker.protocol,
//     sasl.mechanism.controller.protocol, connections.max.reauth.ms,
//     connection.failed.authentication.delay.ms, and kbroker's
//     ssl.store.reload.interval.ms); every ssl.*, sasl.* and
//     listener.name.* key is kept as given (Config.Security, read with
//     Property/ListenerProperty), settable in the file or with --override.
//   - broker/listener_security.go builds each listener's
//     protocol.ListenerSecurity (a tlsconf.Reloader, the principal mapping,
//     the sasl.Registry of sasl.enabled.mechanisms with their JAAS configs
//     and OAUTHBEARER validator, MaxReauth, the failed-auth delay);
//     broker/client_security.go the broker's own clients (inter-broker and
//     controller mechanisms with the listener's JAAS username and
//     password); broker/security.go holds them, the authorizer and the SCRAM
//     store over the image, and follows images (ACLs, dynamic listener SSL
//     in broker/dynamic_tls.go).
//   - protocol: serveConn runs the TLS handshake and session.New; the
//     reader gates every request (Gate), limits frames to 512 KiB before
//     authentication, reads SaslHandshake v0's raw tokens itself, and
//     publishes the principal on ConnInfo (Principal) for the writer's
//     deferred answers; HandleSASL answers SaslHandshake/SaslAuthenticate
//     for the broker's and the controller's handlers (failure: logged,
//     reported through ServerOptions.OnAuthFailure, answered after the
//     delay, CloseAfter). Under TLS vector responses are copied
//     (copyVectors). Clients dial with ClientSecurity (TLS, then a franz-go
//     SASL mechanism; a session lifetime makes them reconnect before it
//     ends); AuthenticateConn and ServeAuthentication do the same on a
//     Raft stream.
//   - replication/controller: AccessControlEntry, RemoveAccessControlEntry,
//     UserScramCredential and RemoveUserScramCredential records, in the
//     image (ACLSet, ScramCredentials) and snapshots; CreateAcls,
//     DeleteAcls and AlterUserScramCredentials are controller APIs; the
//     bootstrap file `kbroker format --add-scram` writes is committed with
//     the cluster id. The controller listener runs TLS before routing Raft
//     and Kafka; a Raft stream authenticates after its fingerprint, and
//     Security.AuthorizeCaller (CLUSTER_ACTION) admits Raft and every
//     controller API. SCRAM is refused for the controller quorum (its
//     credentials live in the log the quorum replicates).
//   - broker: one api_NN file per SASL, ACL and SCRAM API; every check is a
//     call into authz.go / authz_apis.go / authz_metadata.go at the top of
//     a handler's loop. TransactionalIDAllowed is the helper the
//     transaction APIs call.
package session

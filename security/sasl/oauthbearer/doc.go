// Package oauthbearer is the server side of SASL/OAUTHBEARER (RFC 7628)
// as Kafka implements it (KIP-255, KIP-342, KIP-768).
//
// The client's initial response n,[a=authzid],^Aauth=Bearer <token>^A...^A^A
// is parsed with Kafka's grammar. The token goes to a Validator:
//
//   - Unsecured: Kafka's unsecured JWS validator for development (alg
//     "none", empty signature; principal, scope and clock-skew options from
//     the JAAS unsecuredValidator* options).
//   - JWT: signed tokens checked against a JSON Web Key Set from
//     sasl.oauthbearer.jwks.endpoint.url (an https URL or a file), with
//     golang-jwt/jwt/v5: signature (RSA, RSA-PSS, ECDSA, Ed25519), exp and
//     iat required, nbf, issuer and audience when configured, the subject
//     claim as principal.
//
// A refused token is answered, as in Kafka, with the error challenge
// {"status":"invalid_token"} (or insufficient_scope with the scope); the
// client answers %x01 and authentication fails with that JSON as the
// message. The token's exp is the Outcome's Expiry, which bounds the
// KIP-368 session lifetime. Tokens never reach errors or logs.
//
// Unsure: Kafka's jose4j consumer rejects a token carrying aud when no
// expected audience is configured unless told otherwise; kbroker only
// checks aud when sasl.oauthbearer.expected.audience is set.
package oauthbearer

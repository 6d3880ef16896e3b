// Package sasl is the server side of Kafka's SASL authentication: one
// interface for every mechanism (PLAIN, SCRAM-SHA-256/512, OAUTHBEARER in
// the subpackages), a Conversation that runs one exchange as a checked
// state machine with a bound on its steps, the mechanism registry that
// sasl.enabled.mechanisms selects from, and KIP-368 session lifetimes.
//
// An exchange consumes the auth bytes of each SaslAuthenticate request (or
// each raw token after SaslHandshake v0) and returns the bytes to send
// back. It ends in success (an Outcome: the authorization id, the
// credential's expiry, extensions) or in an *AuthError.
//
// Errors and secrets: an AuthError carries two texts. What the client is
// told follows Kafka exactly: mechanisms that fail with Kafka's
// SaslAuthenticationException pass their own message (PLAIN's
// "Authentication failed: Invalid username or password"); the others, as
// Kafka does for a SaslException, get "Authentication failed during
// authentication due to invalid credentials with SASL mechanism <M>" so
// that the reply does not reveal whether the user exists. Reason is for
// the broker's log. Neither ever holds a password, salted password, proof,
// key or token: mechanisms build them from fixed strings and user names.
package sasl

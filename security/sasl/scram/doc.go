// Package scram is SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677)
// as Kafka serves and stores them.
//
// Server runs Kafka's ScramSaslServer exchange: the client-first message
// is checked against Kafka's grammar (ScramMessages: gs2 header "n" only,
// ASCII names with =2C/=3D escapes, optional authzid that must equal the
// name, extensions), the credential comes from a Store, and the proof is
// verified by github.com/xdg-go/scram. The tokenauth=true extension asks
// for delegation-token credentials; kbroker has no delegation tokens, so
// it fails like an unknown token id does in Kafka. Failures tell the
// client only Kafka's generic invalid-credentials text.
//
// Credentials are Kafka's ScramCredential: salt, iterations, StoredKey,
// ServerKey; never the password. AlterUserScramCredentials sends the salt
// and the salted password (the client runs PBKDF2), and PlanAlter derives
// the keys exactly as Kafka's ScramControlManager, with its validation and
// error texts; Describe answers DescribeUserScramCredentials. ParseAddScram
// reads `kafka-storage format --add-scram` values for the first admin.
//
// Passwords are used as UTF-8 bytes without SASLprep, as Kafka,
// librdkafka and franz-go do, so a non-ASCII password means the same to
// every client. Iterations must be in [4096, 16384].
package scram

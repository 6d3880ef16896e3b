// Package principal names who a connection is, the way Kafka's
// DefaultKafkaPrincipalBuilder does:
//
//   - PLAINTEXT, and SSL without a client certificate: User:ANONYMOUS.
//   - SSL with a client certificate: the subject's distinguished name in
//     RFC 2253 form exactly as Java's X500Principal.getName() prints it
//     (DistinguishedName), passed through ssl.principal.mapping.rules
//     (SSLMapper, Kafka's SslPrincipalMapper syntax).
//   - SASL_PLAINTEXT and SASL_SSL: User:<authorization id> from the SASL
//     exchange, whether or not TLS also carried a certificate.
//
// A Principal is a value (type, name); its String form "User:alice" is what
// ACLs, super.users and the authorizer log use.
//
// Differences from Java that a user can see:
//
//   - Mapping-rule patterns are Go regular expressions (RE2). Java-only
//     constructs (back references inside the pattern, look-around,
//     possessive quantifiers) are refused when the rules are parsed, with
//     the rule in the error. Replacements use Java's syntax ($1, ${name},
//     \$ for a literal dollar), including Kafka's rule that a reference to a
//     group that does not exist is kept literally.
//   - Attribute values of type BMPString are decoded as UTF-16 (Java decodes
//     their bytes as UTF-8, which garbles them); no CA we know of issues
//     them.
package principal

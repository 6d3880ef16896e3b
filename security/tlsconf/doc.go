// Package tlsconf builds crypto/tls configurations from Kafka's ssl.*
// configs, with KIP-651 PEM stores, and keeps them current.
//
//   - Keystore: ssl.keystore.type=PEM with ssl.keystore.location (one file
//     holding the private key and the certificate chain) or inline
//     ssl.keystore.key + ssl.keystore.certificate.chain. ssl.key.password
//     decrypts an "ENCRYPTED PRIVATE KEY" (PKCS#8 PBES2 with PBKDF2-HMAC-SHA1/
//     224/256/384/512 and AES-128/192/256-CBC or DES-EDE3-CBC; see package
//     pkcs8). Refused with a message saying what to run instead: JKS and
//     PKCS12 stores, legacy OpenSSL "Proc-Type: 4,ENCRYPTED" keys, PBES1 and
//     scrypt, ssl.keystore.password with PEM (as Kafka). Accepted beyond
//     Kafka: unencrypted PKCS#1 and SEC1 keys.
//   - Truststore: ssl.truststore.type=PEM with ssl.truststore.location or
//     ssl.truststore.certificates; none means the system roots.
//   - ssl.client.auth none|requested|required; ssl.enabled.protocols
//     TLSv1.2 and TLSv1.3 (older ones are refused); ssl.cipher.suites in
//     IANA/Java names (SSL_ aliases too) mapped to Go's suites. Go cannot
//     restrict TLS 1.3 suites: a list without TLS 1.3 suites disables TLS
//     1.3 (Java ends the same way), one with only TLS 1.3 suites disables
//     TLS 1.2.
//   - Clients: ssl.endpoint.identification.algorithm=https checks the
//     server name; "" checks the chain only.
//
// Listener-prefixed configs (listener.name.<l>.ssl.*) override the plain
// ones key by key (FromConfig).
//
// Reloading: Reloader serves handshakes from an atomic pointer (no lock on
// the handshake path) and swaps it when the store files' contents change
// (Check/Run, polled with an injected tick channel) or new settings are
// set (Update, for AlterConfigs). As Kafka's SslFactory, a new certificate
// must keep the subject DN and SANs unless ssl.allow.dn.changes /
// ssl.allow.san.changes are true, and a reload that fails keeps the old
// material. Reloader.mu serializes reloads and is held while the store
// files are read (small local files); handshakes never take it.
package tlsconf

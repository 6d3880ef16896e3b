// Package devca makes a development certificate authority and the broker
// and client certificates signed by it, with crypto/x509 and ECDSA P-256
// keys: for tests, the README's "Securing kbroker" walk-through and a
// later `kbroker` subcommand. Outputs are KIP-651 PEM: a truststore is the
// CA certificate, a keystore is the private key (PKCS#8, optionally
// encrypted for ssl.key.password) followed by the certificate chain.
//
// Not for production: keys are generated in memory, nothing is revoked.
package devca

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"time"

	"github.com/kbroker/kbroker/security/pkcs8"
)

// CA is a self-signed certificate authority.
type CA struct {
	Cert *x509.Certificate
	Key  crypto.Signer
	rand io.Reader
}

// NewCA makes a CA valid from now for validity. rnd is crypto/rand.Reader
// unless a test needs otherwise (nil means crypto/rand).
func NewCA(commonName string, now time.Time, validity time.Duration, rnd io.Reader) (*CA, error) {
	if rnd == nil {
		rnd = rand.Reader
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rnd)
	if err != nil {
		return nil, err
	}
	tmpl, err := template(pkix.Name{CommonName: commonName, Organization: []string{"kbroker development CA"}}, now, validity, rnd)
	if err != nil {
		return nil, err
	}
	tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
	tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageCRLSign
	der, err := x509.CreateCertificate(rnd, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("devca: signing the CA: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{Cert: cert, Key: key, rand: rnd}, nil
}

func template(subject pkix.Name, now time.Time, validity time.Duration, rnd io.Reader) (*x509.Certificate, error) {
	serial, err := rand.Int(rnd, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, err
	}
	return &x509.Certificate{
		SerialNumber: serial,
		Subject:      subject,
		NotBefore:    now.Add(-time.Minute), // tolerate small clock differences
		NotAfter:     now.Add(validity),
	}, nil
}

// CertPEM is the CA certificate: the content of a PEM truststore
// (ssl.truststore.location or ssl.truststore.certificates).
func (ca *CA) CertPEM() []byte { return certPEM(ca.Cert) }

// Leaf says what certificate to issue.
type Leaf struct {
	// Subject; CommonName alone is enough for brokers. Client certificates'
	// subjects become principals through ssl.principal.mapping.rules.
	Subject  pkix.Name
	DNSNames []string
	IPs      []net.IP
	Server   bool // serverAuth extended key usage (brokers)
	Client   bool // clientAuth (clients, and brokers talking to brokers)
	Validity time.Duration
}

// KeyPair is an issued certificate with its key.
type KeyPair struct {
	Cert  *x509.Certificate
	Key   crypto.Signer
	chain []*x509.Certificate // the leaf, then the CA
	rand  io.Reader
}

// Issue signs a certificate for l, valid from now.
func (ca *CA) Issue(l Leaf, now time.Time) (*KeyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), ca.rand)
	if err != nil {
		return nil, err
	}
	tmpl, err := template(l.Subject, now, l.Validity, ca.rand)
	if err != nil {
		return nil, err
	}
	tmpl.DNSNames, tmpl.IPAddresses = l.DNSNames, l.IPs
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	if l.Server {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
	}
	if l.Client {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageClientAuth)
	}
	der, err := x509.CreateCertificate(ca.rand, tmpl, ca.Cert, key.Public(), ca.Key)
	if err != nil {
		return nil, fmt.Errorf("devca: signing %q: %w", l.Subject.CommonName, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &KeyPair{Cert: cert, Key: key, chain: []*x509.Certificate{cert, ca.Cert}, rand: ca.rand}, nil
}

// ChainPEM is the certificate chain: ssl.keystore.certificate.chain.
func (k *KeyPair) ChainPEM() []byte {
	var out []byte
	for _, c := range k.chain {
		out = append(out, certPEM(c)...)
	}
	return out
}

// KeyPEM is the unencrypted PKCS#8 key: ssl.keystore.key without
// ssl.key.password.
func (k *KeyPair) KeyPEM() []byte {
	der, err := x509.MarshalPKCS8PrivateKey(k.Key)
	if err != nil {
		panic(fmt.Sprintf("devca: marshalling our own ECDSA key: %v", err)) // cannot happen
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
}

// EncryptedKeyPEM is the key encrypted for ssl.key.password (PBES2,
// PBKDF2-HMAC-SHA256, AES-256-CBC).
func (k *KeyPair) EncryptedKeyPEM(password string) ([]byte, error) {
	der, err := pkcs8.Encrypt(k.Key, []byte(password), 100_000, k.rand)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "ENCRYPTED PRIVATE KEY", Bytes: der}), nil
}

// KeystorePEM is a PEM keystore file (ssl.keystore.location with
// ssl.keystore.type=PEM): the key, then the chain. With a password the key
// is encrypted.
func (k *KeyPair) KeystorePEM(password string) ([]byte, error) {
	key := k.KeyPEM()
	if password != "" {
		var err error
		if key, err = k.EncryptedKeyPEM(password); err != nil {
			return nil, err
		}
	}
	return append(key, k.ChainPEM()...), nil
}

func certPEM(c *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
}

// KeyPEM is the CA's private key (PKCS#8), to issue more certificates
// later with LoadCA (certificate rotation in development).
func (ca *CA) KeyPEM() []byte {
	der, err := x509.MarshalPKCS8PrivateKey(ca.Key)
	if err != nil {
		panic(fmt.Sprintf("devca: marshalling our own ECDSA key: %v", err)) // cannot happen
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
}

// LoadCA reads a CA written by CertPEM and KeyPEM. rnd is as for NewCA.
func LoadCA(certPEM, keyPEM []byte, rnd io.Reader) (*CA, error) {
	if rnd == nil {
		rnd = rand.Reader
	}
	cb, _ := pem.Decode(certPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		return nil, fmt.Errorf("devca: the CA certificate or key is not PEM")
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("devca: CA certificate: %w", err)
	}
	key, err := x509.ParsePKCS8PrivateKey(kb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("devca: CA key: %w", err)
	}
	signer, ok := key.(crypto.Signer)
	if !ok || !cert.IsCA {
		return nil, fmt.Errorf("devca: not a CA certificate and signing key")
	}
	return &CA{Cert: cert, Key: signer, rand: rnd}, nil
}

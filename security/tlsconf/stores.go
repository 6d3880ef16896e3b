package tlsconf

import (
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/kbroker/kbroker/security/pkcs8"
)

// FS reads store files; OSFS in production, a map in tests.
type FS interface {
	ReadFile(name string) ([]byte, error)
}

// OSFS reads the real file system.
type OSFS struct{}

// ReadFile implements FS.
func (OSFS) ReadFile(name string) ([]byte, error) { return os.ReadFile(name) }

// Material is loaded key and trust material.
type Material struct {
	// Certificate is the keystore's key and chain; nil without a keystore.
	Certificate *tls.Certificate
	// Roots is the truststore; nil means the system roots (Java's cacerts
	// default).
	Roots *x509.CertPool
}

// Load reads the keystore and truststore of s (KIP-651 PEM). Errors name
// the config key and never hold key material or passwords.
func Load(s Settings, fsys FS) (*Material, error) {
	if err := checkStoreTypes(s); err != nil {
		return nil, err
	}
	m := &Material{}
	var err error
	if m.Certificate, err = loadKeystore(s, fsys); err != nil {
		return nil, err
	}
	if m.Roots, err = loadTruststore(s, fsys); err != nil {
		return nil, err
	}
	return m, nil
}

func checkStoreTypes(s Settings) error {
	for key, typ := range map[string]string{KeyKeystoreType: s.KeystoreType, KeyTruststoreType: s.TruststoreType} {
		if typ != "" && !strings.EqualFold(typ, "PEM") {
			return fmt.Errorf("tlsconf: %s=%s is not supported: kbroker reads PEM stores (KIP-651); "+
				"convert with `keytool -importkeystore -deststoretype PKCS12` and `openssl pkcs12 -nodes`, then set %s=PEM", key, typ, key)
		}
	}
	if s.KeystorePassword != "" && (s.KeystoreLocation != "" || s.KeystoreKey != "") {
		return errors.New("tlsconf: SSL key store password cannot be specified with PEM format, only key password may be specified (ssl.keystore.password)")
	}
	if s.TruststorePassword != "" && (s.TruststoreLocation != "" || s.TruststoreCertificates != "") {
		return errors.New("tlsconf: SSL trust store password cannot be specified for PEM format (ssl.truststore.password)")
	}
	if s.KeystoreLocation != "" && (s.KeystoreKey != "" || s.KeystoreCertificateChain != "") {
		return errors.New("tlsconf: set either ssl.keystore.location or ssl.keystore.key with ssl.keystore.certificate.chain, not both")
	}
	if s.TruststoreLocation != "" && s.TruststoreCertificates != "" {
		return errors.New("tlsconf: set either ssl.truststore.location or ssl.truststore.certificates, not both")
	}
	return nil
}

func loadKeystore(s Settings, fsys FS) (*tls.Certificate, error) {
	var keyPEM, chainPEM []byte
	source := KeyKeystoreLocation
	switch {
	case s.KeystoreLocation != "":
		b, err := fsys.ReadFile(s.KeystoreLocation)
		if err != nil {
			return nil, fmt.Errorf("tlsconf: %s: %w", KeyKeystoreLocation, err)
		}
		keyPEM, chainPEM = b, b
	case s.KeystoreKey != "" || s.KeystoreCertificateChain != "":
		if s.KeystoreKey == "" || s.KeystoreCertificateChain == "" {
			return nil, errors.New("tlsconf: ssl.keystore.key and ssl.keystore.certificate.chain go together")
		}
		keyPEM, chainPEM, source = []byte(s.KeystoreKey), []byte(s.KeystoreCertificateChain), KeyKeystoreKey
	default:
		return nil, nil
	}
	key, err := parseKey(keyPEM, s.KeyPassword, source)
	if err != nil {
		return nil, err
	}
	return buildCertificate(key, chainPEM)
}

// parseKey finds the one private key block.
func parseKey(data []byte, password, source string) (crypto.Signer, error) {
	var found *pem.Block
	for rest := data; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		if strings.HasSuffix(b.Type, "PRIVATE KEY") {
			if found != nil {
				return nil, fmt.Errorf("tlsconf: %s holds more than one private key", source)
			}
			found = b
		}
	}
	if found == nil {
		return nil, fmt.Errorf("tlsconf: %s holds no PEM private key", source)
	}
	key, err := decodeKey(found, password, source)
	if err != nil {
		return nil, err
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("tlsconf: %s: unsupported key type %T", source, key)
	}
	return signer, nil
}

func decodeKey(b *pem.Block, password, source string) (any, error) {
	if _, legacy := b.Headers["Proc-Type"]; legacy {
		return nil, fmt.Errorf("tlsconf: %s: legacy OpenSSL-encrypted PEM (Proc-Type: 4,ENCRYPTED) is not supported; "+
			"convert it with `openssl pkcs8 -topk8 -v2 aes-256-cbc`", source)
	}
	switch b.Type {
	case "ENCRYPTED PRIVATE KEY":
		if password == "" {
			return nil, fmt.Errorf("tlsconf: %s is encrypted: set ssl.key.password", source)
		}
		key, err := pkcs8.Decrypt(b.Bytes, []byte(password))
		if err != nil {
			return nil, fmt.Errorf("tlsconf: %s: %w", source, err)
		}
		return key, nil
	case "PRIVATE KEY":
		if password != "" {
			return nil, fmt.Errorf("tlsconf: ssl.key.password is set but %s is not encrypted", source)
		}
		return x509.ParsePKCS8PrivateKey(b.Bytes)
	case "RSA PRIVATE KEY":
		return x509.ParsePKCS1PrivateKey(b.Bytes)
	case "EC PRIVATE KEY":
		return x509.ParseECPrivateKey(b.Bytes)
	}
	return nil, fmt.Errorf("tlsconf: %s: unsupported PEM block %q", source, b.Type)
}

func buildCertificate(key crypto.Signer, chainPEM []byte) (*tls.Certificate, error) {
	certs, err := parseCertificates(chainPEM)
	if err != nil || len(certs) == 0 {
		return nil, fmt.Errorf("tlsconf: the keystore holds no certificate chain")
	}
	pub, ok := certs[0].PublicKey.(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !pub.Equal(key.Public()) {
		return nil, errors.New("tlsconf: the keystore's private key does not match its first certificate")
	}
	out := &tls.Certificate{PrivateKey: key, Leaf: certs[0]}
	for _, c := range certs {
		out.Certificate = append(out.Certificate, c.Raw)
	}
	return out, nil
}

func parseCertificates(data []byte) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	for rest := data; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			return out, nil
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
}

func loadTruststore(s Settings, fsys FS) (*x509.CertPool, error) {
	data, source := []byte(s.TruststoreCertificates), KeyTruststoreCertificates
	if s.TruststoreLocation != "" {
		b, err := fsys.ReadFile(s.TruststoreLocation)
		if err != nil {
			return nil, fmt.Errorf("tlsconf: %s: %w", KeyTruststoreLocation, err)
		}
		data, source = b, KeyTruststoreLocation
	}
	if len(data) == 0 {
		return nil, nil
	}
	certs, err := parseCertificates(data)
	if err != nil || len(certs) == 0 {
		return nil, fmt.Errorf("tlsconf: %s holds no PEM certificate", source)
	}
	pool := x509.NewCertPool()
	for _, c := range certs {
		pool.AddCert(c)
	}
	return pool, nil
}

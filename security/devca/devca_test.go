package devca

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"net"
	"testing"
	"time"
)

func TestIssueAndVerify(t *testing.T) {
	now := time.Now()
	ca, err := NewCA("dev-ca", now, 24*time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}
	broker, err := ca.Issue(Leaf{Subject: pkix.Name{CommonName: "broker-1"}, DNSNames: []string{"localhost"}, IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, Server: true, Client: true, Validity: time.Hour}, now)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca.CertPEM()) {
		t.Fatal("CA PEM")
	}
	if _, err := broker.Cert.Verify(x509.VerifyOptions{Roots: pool, DNSName: "localhost", KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		t.Fatal(err)
	}
	if _, err := tls.X509KeyPair(broker.ChainPEM(), broker.KeyPEM()); err != nil {
		t.Fatalf("key pair: %v", err)
	}
	ks, err := broker.KeystorePEM("pw")
	if err != nil || len(ks) == 0 {
		t.Fatal(err)
	}
	if _, err := broker.Cert.Verify(x509.VerifyOptions{Roots: pool, CurrentTime: now.Add(2 * time.Hour)}); err == nil {
		t.Fatal("expired certificate verified")
	}
}

func TestLoadCAIssuesUnderTheSameRoot(t *testing.T) {
	now := time.Now()
	ca, err := NewCA("dev-ca", now, time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}
	again, err := LoadCA(ca.CertPEM(), ca.KeyPEM(), nil)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := again.Issue(Leaf{Subject: pkix.Name{CommonName: "b"}, DNSNames: []string{"localhost"}, Server: true, Validity: time.Hour}, now)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.CertPEM())
	if _, err := leaf.Cert.Verify(x509.VerifyOptions{Roots: pool, DNSName: "localhost"}); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadCA(leaf.ChainPEM(), leaf.KeyPEM(), nil); err == nil {
		t.Fatal("a leaf loaded as a CA")
	}
}

package tlsconf

import (
	"context"
	"crypto/tls"
	"crypto/x509/pkix"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kbroker/kbroker/security/devca"
)

type pki struct {
	ca             *devca.CA
	broker, client *devca.KeyPair
	dir            string
}

func newPKI(t *testing.T) *pki {
	t.Helper()
	now := time.Now()
	ca, err := devca.NewCA("test-ca", now, time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}
	issue := func(cn string, server bool) *devca.KeyPair {
		kp, err := ca.Issue(devca.Leaf{Subject: pkix.Name{CommonName: cn}, DNSNames: []string{"localhost"}, IPs: []net.IP{net.IPv4(127, 0, 0, 1)},
			Server: server, Client: true, Validity: time.Hour}, now)
		if err != nil {
			t.Fatal(err)
		}
		return kp
	}
	p := &pki{ca: ca, broker: issue("broker-1", true), client: issue("alice", false), dir: t.TempDir()}
	p.write(t, "ca.pem", p.ca.CertPEM())
	return p
}

func (p *pki) write(t *testing.T, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(p.dir, name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func (p *pki) keystore(t *testing.T, name string, kp *devca.KeyPair, password string) string {
	t.Helper()
	b, err := kp.KeystorePEM(password)
	if err != nil {
		t.Fatal(err)
	}
	return p.write(t, name, b)
}

func props(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// handshake runs a TLS handshake over a pipe and returns the client's view.
func handshake(t *testing.T, server, client *tls.Config) (tls.ConnectionState, error, error) {
	t.Helper()
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	srvErr := make(chan error, 1)
	go func() {
		s := tls.Server(a, server)
		err := s.Handshake()
		if err == nil {
			// TLS 1.3 clients learn of a refused certificate on first read.
			_, err = s.Write([]byte{1})
		}
		srvErr <- err
		a.Close()
	}()
	c := tls.Client(b, client)
	err := c.Handshake()
	if err == nil {
		_, err = c.Read(make([]byte, 1))
	}
	b.Close()
	return c.ConnectionState(), err, <-srvErr
}

func TestSettingsFromConfigListenerOverride(t *testing.T) {
	s := FromConfig(props(map[string]string{
		"ssl.keystore.location": "/base.pem", "listener.name.sasl_ssl.ssl.keystore.location": "/l.pem",
		"ssl.client.auth": "required", "ssl.enabled.protocols": "TLSv1.3",
	}), "SASL_SSL")
	if s.KeystoreLocation != "/l.pem" || s.ClientAuth != "required" || len(s.EnabledProtocols) != 1 || s.EndpointIdentification != "https" {
		t.Fatalf("%+v", s)
	}
	if !Sensitive(KeyKeyPassword) || Sensitive(KeyKeystoreLocation) {
		t.Fatal("Sensitive")
	}
}

func TestMutualTLS(t *testing.T) {
	p := newPKI(t)
	srvSettings := FromConfig(props(map[string]string{
		KeyKeystoreType: "PEM", KeyKeystoreLocation: p.keystore(t, "broker.pem", p.broker, "k3y-pass"), KeyKeyPassword: "k3y-pass",
		KeyTruststoreType: "PEM", KeyTruststoreLocation: filepath.Join(p.dir, "ca.pem"), KeyClientAuth: "required",
	}), "")
	m, err := Load(srvSettings, OSFS{})
	if err != nil {
		t.Fatal(err)
	}
	server, err := ServerConfig(m, srvSettings)
	if err != nil {
		t.Fatal(err)
	}
	cliSettings := FromConfig(props(map[string]string{
		KeyKeystoreChain: string(p.client.ChainPEM()), KeyKeystoreKey: string(p.client.KeyPEM()),
		KeyTruststoreCertificates: string(p.ca.CertPEM()),
	}), "")
	cm, err := Load(cliSettings, OSFS{})
	if err != nil {
		t.Fatal(err)
	}
	client, _ := ClientConfig(cm, cliSettings, "localhost")
	state, cerr, serr := handshake(t, server, client)
	if cerr != nil || serr != nil || state.PeerCertificates[0].Subject.CommonName != "broker-1" {
		t.Fatalf("%v %v", cerr, serr)
	}
	// Without a client certificate a required listener refuses.
	anon, _ := ClientConfig(&Material{Roots: cm.Roots}, cliSettings, "localhost")
	if _, cerr, serr := handshake(t, server, anon); cerr == nil || serr == nil {
		t.Fatal("no client certificate accepted on a required listener")
	}
	// requested: accepted without one.
	srvSettings.ClientAuth = "requested"
	requested, _ := ServerConfig(m, srvSettings)
	if _, cerr, serr := handshake(t, requested, anon); cerr != nil || serr != nil {
		t.Fatalf("requested: %v %v", cerr, serr)
	}
	// A wrong host name fails with https identification, passes without.
	wrongHost, _ := ClientConfig(cm, cliSettings, "broker.example")
	if _, cerr, _ := handshake(t, server, wrongHost); cerr == nil {
		t.Fatal("wrong host accepted")
	}
	cliSettings.EndpointIdentification = ""
	noHostCheck, _ := ClientConfig(cm, cliSettings, "broker.example")
	if _, cerr, serr := handshake(t, server, noHostCheck); cerr != nil || serr != nil {
		t.Fatalf("no endpoint identification: %v %v", cerr, serr)
	}
	// ... but the chain is still checked.
	other := newPKI(t)
	untrusted, _ := ClientConfig(&Material{Roots: mustLoad(t, other).Roots, Certificate: cm.Certificate}, cliSettings, "localhost")
	if _, cerr, _ := handshake(t, server, untrusted); cerr == nil {
		t.Fatal("untrusted server accepted without endpoint identification")
	}
}

func mustLoad(t *testing.T, p *pki) *Material {
	t.Helper()
	m, err := Load(Settings{TruststoreLocation: filepath.Join(p.dir, "ca.pem")}, OSFS{})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestProtocolsAndCiphers(t *testing.T) {
	p := newPKI(t)
	s := Settings{KeystoreKey: string(p.broker.KeyPEM()), KeystoreCertificateChain: string(p.broker.ChainPEM()), EnabledProtocols: []string{"TLSv1.2"},
		CipherSuites: []string{"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", "SSL_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"}}
	m, err := Load(s, OSFS{})
	if err != nil {
		t.Fatal(err)
	}
	server, err := ServerConfig(m, s)
	if err != nil || server.MaxVersion != tls.VersionTLS12 || len(server.CipherSuites) != 2 {
		t.Fatalf("%v %+v", err, server)
	}
	tls13 := &tls.Config{RootCAs: mustLoad(t, p).Roots, ServerName: "localhost", MinVersion: tls.VersionTLS13}
	if _, cerr, _ := handshake(t, server, tls13); cerr == nil {
		t.Fatal("TLS 1.3 client accepted by a TLSv1.2 listener")
	}
	for _, bad := range []Settings{
		{EnabledProtocols: []string{"TLSv1.1"}},
		{EnabledProtocols: []string{"TLSv1.2"}, CipherSuites: []string{"TLS_NOPE"}},
		{EnabledProtocols: []string{"TLSv1.3"}, CipherSuites: []string{"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"}},
		{EnabledProtocols: []string{"TLSv1.2"}, Protocol: "SSLv3"},
		{EnabledProtocols: []string{"TLSv1.2"}, ClientAuth: "maybe"},
	} {
		if _, err := ServerConfig(m, bad); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
	only13, _ := ServerConfig(m, Settings{EnabledProtocols: []string{"TLSv1.2", "TLSv1.3"}, CipherSuites: []string{"TLS_AES_128_GCM_SHA256"}})
	if only13.MinVersion != tls.VersionTLS13 {
		t.Fatalf("TLS 1.3 suites only: min %x", only13.MinVersion)
	}
}

func TestStoreErrors(t *testing.T) {
	p := newPKI(t)
	enc, _ := p.broker.EncryptedKeyPEM("k3y-pass")
	chain := string(p.broker.ChainPEM())
	legacy, _ := os.ReadFile("../pkcs8/testdata/ec-legacy.pem")
	for _, c := range []struct {
		s    Settings
		want string
	}{
		{Settings{KeystoreType: "JKS", KeystoreLocation: "/x.jks"}, "ssl.keystore.type=JKS is not supported"},
		{Settings{KeystoreKey: string(enc), KeystoreCertificateChain: chain}, "set ssl.key.password"},
		{Settings{KeystoreKey: string(enc), KeystoreCertificateChain: chain, KeyPassword: "n0t-the-pass"}, "does not decrypt"},
		{Settings{KeystoreKey: string(p.broker.KeyPEM()), KeystoreCertificateChain: chain, KeyPassword: "n0t-the-pass"}, "is not encrypted"},
		{Settings{KeystoreKey: string(p.client.KeyPEM()), KeystoreCertificateChain: chain}, "does not match"},
		{Settings{KeystoreKey: string(legacy), KeystoreCertificateChain: chain, KeyPassword: "k3y-pass"}, "legacy OpenSSL-encrypted"},
		{Settings{KeystoreKey: string(p.broker.KeyPEM())}, "go together"},
		{Settings{KeystoreLocation: "/nonexistent.pem"}, "ssl.keystore.location"},
		{Settings{KeystoreLocation: "/x.pem", KeystorePassword: "n0t-the-pass"}, "key store password cannot be specified"},
		{Settings{TruststoreCertificates: "garbage"}, "holds no PEM certificate"},
	} {
		_, err := Load(c.s, OSFS{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v", c.want, err)
		} else if strings.Contains(err.Error(), "n0t-the-pass") || strings.Contains(err.Error(), "PRIVATE KEY") {
			t.Errorf("%s: secret material in %v", c.want, err)
		}
	}
	if _, err := ServerConfig(&Material{}, Settings{EnabledProtocols: []string{"TLSv1.2"}}); err == nil {
		t.Error("a listener without a keystore accepted")
	}
}

func TestReloaderRotation(t *testing.T) {
	p := newPKI(t)
	path := p.keystore(t, "broker.pem", p.broker, "")
	s := Settings{KeystoreLocation: path, EnabledProtocols: []string{"TLSv1.2", "TLSv1.3"}}
	r, err := NewReloader(s, OSFS{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	client := &tls.Config{RootCAs: mustLoad(t, p).Roots, ServerName: "localhost"}
	serial := func() string {
		st, cerr, serr := handshake(t, r.Config(), client)
		if cerr != nil || serr != nil {
			t.Fatalf("%v %v", cerr, serr)
		}
		return st.PeerCertificates[0].SerialNumber.String()
	}
	first := serial()
	if changed, err := r.Check(); changed || err != nil {
		t.Fatalf("unchanged files: %v %v", changed, err)
	}
	renewed, _ := p.ca.Issue(devca.Leaf{Subject: pkix.Name{CommonName: "broker-1"}, DNSNames: []string{"localhost"}, IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, Server: true, Client: true, Validity: time.Hour}, time.Now())
	p.keystore(t, "broker.pem", renewed, "")
	tick := make(chan time.Time)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.Run(ctx, tick); close(done) }()
	tick <- time.Now()
	tick <- time.Now() // the first tick's Check has finished once the second is taken
	cancel()
	<-done
	if got := serial(); got == first || got != renewed.Cert.SerialNumber.String() {
		t.Fatalf("serial %s after rotation (first %s)", got, first)
	}
	// A broken file keeps the current certificate.
	p.write(t, "broker.pem", []byte("garbage"))
	if _, err := r.Check(); err == nil {
		t.Fatal("broken keystore loaded")
	}
	if serial() != renewed.Cert.SerialNumber.String() {
		t.Fatal("certificate lost after a failed reload")
	}
	// Update: a different DN is refused unless ssl.allow.dn.changes.
	other, _ := p.ca.Issue(devca.Leaf{Subject: pkix.Name{CommonName: "broker-2"}, DNSNames: []string{"localhost"}, IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, Server: true, Validity: time.Hour}, time.Now())
	s2 := Settings{KeystoreKey: string(other.KeyPEM()), KeystoreCertificateChain: string(other.ChainPEM()), EnabledProtocols: []string{"TLSv1.3"}}
	if err := r.Update(s2); err == nil || !strings.Contains(err.Error(), "DistinguishedName does not match") {
		t.Fatalf("DN change: %v", err)
	}
	s2.AllowDNChanges = true
	if err := r.Update(s2); err != nil {
		t.Fatal(err)
	}
	if serial() != other.Cert.SerialNumber.String() {
		t.Fatal("Update not applied")
	}
}

package protocol

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/kbroker/kbroker/security/devca"
	"github.com/kbroker/kbroker/security/principal"
	"github.com/kbroker/kbroker/security/sasl"
	splain "github.com/kbroker/kbroker/security/sasl/plain"
	"github.com/kbroker/kbroker/security/session"
)

// testPKI is a development CA with a broker and a client certificate.
type testPKI struct {
	roots          *x509.CertPool
	broker, client tls.Certificate
}

func newTestPKI(t testing.TB) *testPKI {
	t.Helper()
	now := time.Now()
	ca, err := devca.NewCA("test-ca", now, time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}
	issue := func(cn string, server bool) tls.Certificate {
		kp, err := ca.Issue(devca.Leaf{Subject: pkix.Name{CommonName: cn, Organization: []string{"kbroker"}},
			DNSNames: []string{"localhost"}, IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, Server: server, Client: true,
			Validity: time.Hour}, now)
		if err != nil {
			t.Fatal(err)
		}
		c, err := tls.X509KeyPair(kp.ChainPEM(), kp.KeyPEM())
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	p := &testPKI{roots: x509.NewCertPool(), broker: issue("broker", true), client: issue("alice", false)}
	p.roots.AppendCertsFromPEM(ca.CertPEM())
	return p
}

func (p *testPKI) serverConfig(auth tls.ClientAuthType) *tls.Config {
	return &tls.Config{Certificates: []tls.Certificate{p.broker}, ClientCAs: p.roots, ClientAuth: auth, MinVersion: tls.VersionTLS12}
}

func (p *testPKI) clientConfig(withCert bool) func(string) (*tls.Config, error) {
	return func(host string) (*tls.Config, error) {
		cfg := &tls.Config{RootCAs: p.roots, ServerName: host, MinVersion: tls.VersionTLS12}
		if withCert {
			cfg.Certificates = []tls.Certificate{p.client}
		}
		return cfg, nil
	}
}

// saslHandler serves SASL through HandleSASL, records the principal of
// each Metadata request, and answers Metadata as a VectorResponse so that
// the TLS copy path is exercised.
type saslHandler struct {
	testHandler
	mu         sync.Mutex
	principals []principal.Principal
}

type vectorMetadata struct{ *kmsg.MetadataResponse }

func (v vectorMetadata) AppendVectors(vs []Vector, scratch []byte) []Vector {
	body := v.AppendTo(nil)
	half := len(body) / 2
	return append(vs, Vector{B: body[:half]}, Vector{B: body[half:]})
}

func (h *saslHandler) Handle(ctx context.Context, req *Request) Response {
	switch req.Key {
	case SaslHandshakeKey, SaslAuthenticateKey:
		return HandleSASL(req)
	case 3:
		h.mu.Lock()
		h.principals = append(h.principals, req.Conn.Principal())
		h.mu.Unlock()
		resp := req.Body.ResponseKind().(*kmsg.MetadataResponse)
		resp.ClusterID = kmsg.StringPtr(strings.Repeat("c", 100))
		return Response{Body: vectorMetadata{resp}}
	}
	return h.testHandler.Handle(ctx, req)
}

func (h *saslHandler) seen() []principal.Principal {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]principal.Principal(nil), h.principals...)
}

type secServer struct {
	addr     string
	h        *saslHandler
	mu       sync.Mutex
	failures []AuthFailure
}

func (s *secServer) authFailures() []AuthFailure {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]AuthFailure(nil), s.failures...)
}

const failedAuthDelay = 50 * time.Millisecond

// startSecServer serves one listener secured by sec; a SASL listener gets
// PLAIN with user alice (password alice-secret).
func startSecServer(t *testing.T, sec ListenerSecurity) *secServer {
	t.Helper()
	if sec.Session.Protocol.SASL() {
		reg, err := sasl.NewRegistry(splain.New(splain.StaticUsers{"alice": "alice-secret"}))
		if err != nil {
			t.Fatal(err)
		}
		sec.Session.Mechanisms = reg
	}
	sec.FailedAuthDelay = failedAuthDelay
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ss := &secServer{addr: l.Addr().String(), h: &saslHandler{}}
	srv := NewServer(ss.h, ServerOptions{
		Listeners: map[string]ListenerSecurity{"SECURE": sec},
		OnAuthFailure: func(f AuthFailure) {
			ss.mu.Lock()
			ss.failures = append(ss.failures, f)
			ss.mu.Unlock()
		},
	})
	go srv.Serve(l, "SECURE")
	t.Cleanup(func() { srv.Close() })
	return ss
}

func metadata(t *testing.T, c *Client) (*kmsg.MetadataResponse, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(9)
	resp, err := c.RoundTrip(ctx, req)
	if err != nil {
		return nil, err
	}
	return resp.(*kmsg.MetadataResponse), nil
}

// A client authenticates with SASL/PLAIN over TLS; requests are then
// served with the SASL principal, and a VectorResponse arrives intact
// through TLS (copied, not sent with sendfile).
func TestSASLSSLClientAuthenticates(t *testing.T) {
	pki := newTestPKI(t)
	ss := startSecServer(t, ListenerSecurity{TLS: pki.serverConfig(tls.NoClientCert), Session: session.Config{Protocol: session.SASLSSL}})
	c := NewClient(ss.addr, "test", WithSecurity(ClientSecurity{TLS: pki.clientConfig(false),
		SASL: plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()}))
	defer c.Close()
	for range 2 {
		resp, err := metadata(t, c)
		if err != nil {
			t.Fatal(err)
		}
		if resp.ClusterID == nil || *resp.ClusterID != strings.Repeat("c", 100) {
			t.Fatalf("metadata through TLS: %+v", resp)
		}
	}
	if got := ss.h.seen(); len(got) != 2 || got[0] != principal.User("alice") {
		t.Fatalf("principals = %v, want User:alice twice", got)
	}
}

// A wrong password is answered SASL_AUTHENTICATION_FAILED with Kafka's
// message, no earlier than connection.failed.authentication.delay.ms, then
// the connection closes; the failure is reported.
func TestSASLWrongPasswordFailsAfterDelay(t *testing.T) {
	ss := startSecServer(t, ListenerSecurity{Session: session.Config{Protocol: session.SASLPlaintext}})
	c := NewClient(ss.addr, "test", WithSecurity(ClientSecurity{SASL: plain.Auth{User: "alice", Pass: "p4ss-guess"}.AsMechanism()}))
	defer c.Close()
	start := time.Now()
	_, err := metadata(t, c)
	if !errors.Is(err, ErrAuthentication) || !strings.Contains(err.Error(), "Invalid username or password") ||
		!strings.Contains(err.Error(), kerr.SaslAuthenticationFailed.Message) {
		t.Fatalf("err = %v, want SASL_AUTHENTICATION_FAILED with PLAIN's message", err)
	}
	if d := time.Since(start); d < failedAuthDelay {
		t.Errorf("answered after %v, before the failed-authentication delay %v", d, failedAuthDelay)
	}
	if f := ss.authFailures(); len(f) != 1 || f[0].Mechanism != "PLAIN" || strings.Contains(f[0].Reason, "p4ss-guess") {
		t.Fatalf("failures = %+v, want one PLAIN failure that does not quote the password", f)
	}
	if len(ss.h.seen()) != 0 {
		t.Fatal("a request was served")
	}
}

// Before authentication only ApiVersions and the SASL APIs are served:
// another request closes the connection without an answer.
func TestRequestBeforeAuthenticationClosesUnanswered(t *testing.T) {
	ss := startSecServer(t, ListenerSecurity{Session: session.Config{Protocol: session.SASLPlaintext}})
	rc := dialRaw(t, ss.addr)
	av := kmsg.NewPtrApiVersionsRequest()
	av.SetVersion(3)
	rc.send(1, av)
	if corr, _, err := rc.recv(); err != nil || corr != 1 {
		t.Fatalf("ApiVersions before authentication: corr %d, %v", corr, err)
	}
	rc.send(2, metadataFor("t"))
	if _, _, err := rc.recv(); err == nil {
		t.Fatal("Metadata before authentication was answered")
	}
	if len(ss.h.seen()) != 0 {
		t.Fatal("Metadata before authentication was served")
	}
}

// SaslHandshake v0: the exchange follows as raw size-prefixed tokens
// (librdkafka without SaslAuthenticate), then requests are served.
func TestSaslHandshakeV0RawTokens(t *testing.T) {
	ss := startSecServer(t, ListenerSecurity{Session: session.Config{Protocol: session.SASLPlaintext}})
	rc := dialRaw(t, ss.addr)
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.SetVersion(0)
	hs.Mechanism = "PLAIN"
	rc.send(1, hs)
	_, body, err := rc.recv()
	if err != nil {
		t.Fatal(err)
	}
	hr := kmsg.NewPtrSASLHandshakeResponse()
	hr.SetVersion(0)
	if err := hr.ReadFrom(body); err != nil || hr.ErrorCode != 0 {
		t.Fatalf("handshake: %v %+v", err, hr)
	}
	writeToken(t, rc.nc, []byte("\x00alice\x00alice-secret"))
	if reply := readRawToken(t, rc.rd); len(reply) != 0 {
		t.Fatalf("PLAIN reply = %q, want empty", reply)
	}
	rc.send(2, metadataFor("t"))
	if corr, _, err := rc.recv(); err != nil || corr != 2 {
		t.Fatalf("metadata after raw authentication: %d %v", corr, err)
	}
	if got := ss.h.seen(); len(got) != 1 || got[0] != principal.User("alice") {
		t.Fatalf("principals = %v", got)
	}
}

func writeToken(t *testing.T, nc net.Conn, b []byte) {
	t.Helper()
	var size [4]byte
	binary.BigEndian.PutUint32(size[:], uint32(len(b)))
	if _, err := nc.Write(append(size[:], b...)); err != nil {
		t.Fatal(err)
	}
}

func readRawToken(t *testing.T, rd *bufio.Reader) []byte {
	t.Helper()
	var size [4]byte
	if _, err := io.ReadFull(rd, size[:]); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(rd, b); err != nil {
		t.Fatal(err)
	}
	return b
}

// An unknown mechanism is answered UNSUPPORTED_SASL_MECHANISM with the
// enabled ones, and the connection closes.
func TestUnknownMechanismRefused(t *testing.T) {
	ss := startSecServer(t, ListenerSecurity{Session: session.Config{Protocol: session.SASLPlaintext}})
	c := NewClient(ss.addr, "test", WithSecurity(ClientSecurity{SASL: plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()}))
	rc := dialRaw(t, ss.addr)
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.SetVersion(1)
	hs.Mechanism = "GSSAPI"
	rc.send(1, hs)
	_, body, err := rc.recv()
	if err != nil {
		t.Fatal(err)
	}
	hr := kmsg.NewPtrSASLHandshakeResponse()
	hr.SetVersion(1)
	if err := hr.ReadFrom(body); err != nil || hr.ErrorCode != kerr.UnsupportedSaslMechanism.Code ||
		len(hr.SupportedMechanisms) != 1 || hr.SupportedMechanisms[0] != "PLAIN" {
		t.Fatalf("handshake GSSAPI: %v %+v", err, hr)
	}
	if _, _, err := rc.recv(); err == nil {
		t.Fatal("connection stayed open")
	}
	c.Close()
}

// ssl.client.auth=required: a client without a certificate fails the
// handshake; one with a certificate is User:<its subject>.
func TestMutualTLSPrincipal(t *testing.T) {
	pki := newTestPKI(t)
	ss := startSecServer(t, ListenerSecurity{TLS: pki.serverConfig(tls.RequireAndVerifyClientCert), Session: session.Config{Protocol: session.SSL}})
	anon := NewClient(ss.addr, "test", WithSecurity(ClientSecurity{TLS: pki.clientConfig(false)}))
	defer anon.Close()
	if _, err := metadata(t, anon); err == nil {
		t.Fatal("a client without a certificate was served on a required listener")
	}
	waitFor(t, func() bool { return len(ss.authFailures()) == 1 })
	if f := ss.authFailures()[0]; f.Mechanism != "SSL" {
		t.Fatalf("failure = %+v", f)
	}
	c := NewClient(ss.addr, "test", WithSecurity(ClientSecurity{TLS: pki.clientConfig(true)}))
	defer c.Close()
	if _, err := metadata(t, c); err != nil {
		t.Fatal(err)
	}
	if got := ss.h.seen(); len(got) != 1 || got[0] != principal.User("CN=alice,O=kbroker") {
		t.Fatalf("principals = %v", got)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// The reader sets the connection's principal after every request: an
// unchanged one costs no allocation; a changed one is seen.
func TestSetPrincipalUnchangedAllocatesNothing(t *testing.T) {
	var c ConnInfo
	alice := principal.Principal{Type: "User", Name: "alice"}
	c.setPrincipal(alice)
	if n := testing.AllocsPerRun(100, func() { c.setPrincipal(alice) }); n != 0 {
		t.Fatalf("setPrincipal of the same principal: %v allocations, want 0", n)
	}
	bob := principal.Principal{Type: "User", Name: "bob"}
	c.setPrincipal(bob)
	if got := c.Principal(); got != bob {
		t.Fatalf("principal %v after setting %v", got, bob)
	}
}

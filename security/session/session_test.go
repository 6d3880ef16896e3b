package session

import (
	"crypto/tls"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/internal/fuzzseed"
	"github.com/kbroker/kbroker/security/sasl"
	"github.com/kbroker/kbroker/security/sasl/plain"
	"github.com/kbroker/kbroker/security/sasl/scram"
)

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

func saslConfig(t testing.TB, clk *clock, maxReauth time.Duration) Config {
	t.Helper()
	store := scram.NewMemStore()
	reg, err := sasl.NewRegistry(plain.New(plain.StaticUsers{"alice": "alice-secret", "bob": "bob-secret"}),
		scram.NewServer(scram.SHA256, store, scram.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	return Config{Protocol: SASLSSL, Mechanisms: reg, MaxReauth: maxReauth, Now: clk.Now}
}

func handshake(s *Session, version int16, mech string) (*kmsg.SASLHandshakeResponse, bool) {
	req := kmsg.NewPtrSASLHandshakeRequest()
	req.Version, req.Mechanism = version, mech
	return s.HandleSaslHandshake(req)
}

func authenticate(s *Session, version int16, payload string) (*kmsg.SASLAuthenticateResponse, *Failure) {
	req := kmsg.NewPtrSASLAuthenticateRequest()
	req.Version, req.SASLAuthBytes = version, []byte(payload)
	return s.HandleSaslAuthenticate(req)
}

func TestPlainLoginAndGate(t *testing.T) {
	clk := &clock{now: time.Unix(1000, 0)}
	s, err := New(saslConfig(t, clk, time.Hour), nil)
	if err != nil {
		t.Fatal(err)
	}
	for key, serve := range map[int16]bool{18: true, 17: true, 0: false, 3: false, 36: false} {
		if v := s.Gate(key); v.Serve != serve {
			t.Errorf("before handshake, key %d: %+v", key, v)
		}
	}
	if v := s.Gate(0); !strings.Contains(v.Reason, "Unexpected Kafka request of type Produce during SASL handshake.") {
		t.Errorf("reason %q", v.Reason)
	}
	resp, closeConn := handshake(s, 1, sasl.Plain)
	if resp.ErrorCode != 0 || closeConn || strings.Join(resp.SupportedMechanisms, ",") != "PLAIN,SCRAM-SHA-256" {
		t.Fatalf("%+v %v", resp, closeConn)
	}
	if s.Gate(3).Serve || s.Gate(18).Serve || !s.Gate(36).Serve {
		t.Fatal("gate during authentication")
	}
	ar, fail := authenticate(s, 2, "\x00alice\x00alice-secret")
	if fail != nil || ar.ErrorCode != 0 || ar.SessionLifetimeMillis != time.Hour.Milliseconds() {
		t.Fatalf("%+v %+v", ar, fail)
	}
	if s.State() != StateAuthenticated || s.Principal().String() != "User:alice" || !s.Gate(0).Serve {
		t.Fatalf("%s %s", s.State(), s.Principal())
	}
	clk.Add(time.Hour + time.Second)
	if s.Gate(0).Serve || !s.Gate(17).Serve {
		t.Fatal("expired session still served")
	}
	// KIP-368 re-authentication as the same principal.
	if resp, closeConn := handshake(s, 1, sasl.Plain); resp.ErrorCode != 0 || closeConn {
		t.Fatalf("reauth handshake %+v", resp)
	}
	if _, fail := authenticate(s, 2, "\x00alice\x00alice-secret"); fail != nil || !s.Gate(0).Serve {
		t.Fatalf("reauth: %+v", fail)
	}
	handshake(s, 1, sasl.Plain)
	ar, fail = authenticate(s, 2, "\x00bob\x00bob-secret")
	if fail == nil || ar.ErrorCode != 58 || *ar.ErrorMessage != "Cannot change principals during re-authentication from User.alice: User.bob" {
		t.Fatalf("principal change: %+v", ar)
	}
}

func TestWrongPasswordAndMechanism(t *testing.T) {
	clk := &clock{now: time.Unix(1000, 0)}
	s, _ := New(saslConfig(t, clk, 0), nil)
	handshake(s, 1, sasl.Plain)
	ar, fail := authenticate(s, 1, "\x00alice\x00hunter2hunter2")
	if fail == nil || ar.ErrorCode != 58 || *ar.ErrorMessage != "Authentication failed: Invalid username or password" || s.State() != StateFailed {
		t.Fatalf("%+v %+v", ar, fail)
	}
	if strings.Contains(fail.Err.Error(), "hunter2") {
		t.Fatal("password in the failure")
	}
	if s.Gate(18).Serve {
		t.Fatal("failed session served")
	}
	s, _ = New(saslConfig(t, clk, 0), nil)
	resp, closeConn := handshake(s, 1, "GSSAPI")
	if resp.ErrorCode != 33 || !closeConn || len(resp.SupportedMechanisms) != 2 {
		t.Fatalf("%+v", resp)
	}
	s, _ = New(saslConfig(t, clk, 0), nil)
	handshake(s, 1, sasl.Plain)
	if resp, closeConn := handshake(s, 1, sasl.Plain); resp.ErrorCode != 34 || !closeConn {
		t.Fatalf("second handshake %+v", resp)
	}
	// Re-authentication with another mechanism is refused.
	s, _ = New(saslConfig(t, clk, 0), nil)
	handshake(s, 1, sasl.Plain)
	authenticate(s, 1, "\x00alice\x00alice-secret")
	if resp, _ := handshake(s, 1, sasl.ScramSHA256); resp.ErrorCode != 33 {
		t.Fatalf("reauth with another mechanism %+v", resp)
	}
}

func TestHandshakeV0RawTokens(t *testing.T) {
	clk := &clock{now: time.Unix(1000, 0)}
	s, _ := New(saslConfig(t, clk, 0), nil)
	handshake(s, 0, sasl.Plain)
	if !s.RawTokens() || s.Gate(36).Serve {
		t.Fatal("v0 expects raw tokens")
	}
	if _, fail := s.Token([]byte("\x00alice\x00alice-secret")); fail != nil || s.State() != StateAuthenticated || s.RawTokens() {
		t.Fatalf("%+v", fail)
	}
}

func TestNonSASLListeners(t *testing.T) {
	s, err := New(Config{Protocol: Plaintext}, nil)
	if err != nil || !s.Principal().IsAnonymous() || !s.Gate(0).Serve {
		t.Fatal("plaintext")
	}
	s, err = New(Config{Protocol: SSL}, &tls.ConnectionState{})
	if err != nil || !s.Principal().IsAnonymous() {
		t.Fatal("ssl without a client certificate")
	}
	if _, err := New(Config{Protocol: SASLPlaintext}, nil); err == nil {
		t.Fatal("SASL listener without mechanisms")
	}
	if p, err := ParseProtocol("sasl_ssl"); err != nil || p != SASLSSL || !p.TLS() || !p.SASL() {
		t.Fatal("ParseProtocol")
	}
}

var requestSeeds = [][]any{
	{[]byte("\x00\x05PLAIN"), []byte("\x00\x00\x00\x15\x00alice\x00alice-secret"), 1},
	{[]byte("\x00\x0dSCRAM-SHA-256"), []byte("\x00\x00\x00\x10n,,n=a,r=abcdefg"), 2},
	{[]byte("\x00\x06GSSAPI"), []byte{}, 0},
}

func TestWriteRequestSeedCorpus(t *testing.T) {
	if !fuzzseed.Enabled() {
		t.Skip("set KBROKER_WRITE_SEEDS=1 to rewrite testdata/fuzz")
	}
	fuzzseed.Write(t, "FuzzSaslRequests", requestSeeds)
}

// FuzzSaslRequests decodes SaslHandshake and SaslAuthenticate bodies as
// the broker will and drives a session: no panic, no request served before
// authentication, and authentication only as alice with her password.
func FuzzSaslRequests(f *testing.F) {
	for _, s := range requestSeeds {
		f.Add(s[0].([]byte), s[1].([]byte), s[2].(int))
	}
	clk := &clock{now: time.Unix(1000, 0)}
	cfg := saslConfig(f, clk, time.Minute)
	f.Fuzz(func(t *testing.T, hs, auth []byte, version int) {
		s, _ := New(cfg, nil)
		h := kmsg.NewPtrSASLHandshakeRequest()
		h.Version = int16(version & 1)
		if h.ReadFrom(hs) != nil {
			return
		}
		if _, closeConn := s.HandleSaslHandshake(h); closeConn {
			return
		}
		a := kmsg.NewPtrSASLAuthenticateRequest()
		a.Version = int16(version % 3)
		if a.Version < 0 || a.ReadFrom(auth) != nil {
			return
		}
		if s.RawTokens() {
			s.Token(a.SASLAuthBytes)
		} else {
			s.HandleSaslAuthenticate(a)
		}
		if s.State() == StateAuthenticated && (s.Principal().Name != "alice" || string(a.SASLAuthBytes) != "\x00alice\x00alice-secret" && string(a.SASLAuthBytes) != "alice\x00alice\x00alice-secret") {
			t.Fatalf("authenticated as %s with %q", s.Principal(), a.SASLAuthBytes)
		}
		if s.State() != StateAuthenticated && s.Gate(0).Serve {
			t.Fatal("Produce served before authentication")
		}
	})
}

package scram

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"

	kscram "github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/kbroker/kbroker/internal/fuzzseed"
	"github.com/kbroker/kbroker/security/sasl"
)

func mustB64(t *testing.T, s string) []byte {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// RFC 7677 section 3: the SCRAM-SHA-256 example exchange.
func TestRFC7677Vector(t *testing.T) {
	cred, err := NewCredential(SHA256, "pencil", mustB64(t, "W22ZaJ0SNY7soEsUEjb6gQ=="), 4096)
	if err != nil {
		t.Fatal(err)
	}
	store := NewMemStore()
	store.Set("user", SHA256, cred)
	srv := NewServer(SHA256, store, Options{Nonce: func() string { return "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0" }})
	c := sasl.NewConversation(srv)
	out, aerr := c.Step([]byte("n,,n=user,r=rOprNGfwEbeRWgbNEkqO"))
	if aerr != nil || string(out) != "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096" {
		t.Fatalf("server first %q, %v", out, aerr)
	}
	out, aerr = c.Step([]byte("c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="))
	if aerr != nil || string(out) != "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=" {
		t.Fatalf("server final %q, %v", out, aerr)
	}
	if c.State() != sasl.StateComplete || c.Outcome().AuthorizationID != "user" {
		t.Fatalf("state %s outcome %+v", c.State(), c.Outcome())
	}
}

// runClient drives an exchange with franz-go's SCRAM client, the one kgo
// uses against Kafka.
func runClient(t *testing.T, srv *Server, auth kscram.Auth) (*sasl.Conversation, *sasl.AuthError) {
	t.Helper()
	mech := auth.AsSha256Mechanism()
	if srv.mech == SHA512 {
		mech = auth.AsSha512Mechanism()
	}
	session, msg, err := mech.Authenticate(context.Background(), "127.0.0.1:9092")
	if err != nil {
		t.Fatal(err)
	}
	c := sasl.NewConversation(srv)
	for {
		out, aerr := c.Step(msg)
		if aerr != nil {
			return c, aerr
		}
		done, next, err := session.Challenge(out)
		if err != nil {
			t.Fatalf("client refused the server's reply %q: %v", out, err)
		}
		if done {
			return c, nil
		}
		msg = next
	}
}

func storeWith(t *testing.T, m Mechanism, users map[string]string) *MemStore {
	t.Helper()
	s := NewMemStore()
	for u, p := range users {
		c, err := NewCredential(m, p, []byte("salt-"+u), 8192)
		if err != nil {
			t.Fatal(err)
		}
		s.Set(u, m, c)
	}
	return s
}

func TestFranzGoClient(t *testing.T) {
	for _, m := range []Mechanism{SHA256, SHA512} {
		srv := NewServer(m, storeWith(t, m, map[string]string{"alice": "alice-secret", "a,b=c": "pw"}), Options{})
		c, err := runClient(t, srv, kscram.Auth{User: "alice", Pass: "alice-secret"})
		if err != nil || c.State() != sasl.StateComplete || c.Outcome().AuthorizationID != "alice" {
			t.Fatalf("%s: %v %s", m, err, c.State())
		}
		// Names with ',' and '=' travel as =2C and =3D.
		c, err = runClient(t, srv, kscram.Auth{User: "a,b=c", Pass: "pw"})
		if err != nil || c.Outcome().AuthorizationID != "a,b=c" {
			t.Fatalf("%s escaped name: %v %+v", m, err, c.Outcome())
		}
	}
}

func TestFailures(t *testing.T) {
	srv := NewServer(SHA256, storeWith(t, SHA256, map[string]string{"alice": "alice-secret"}), Options{})
	generic := "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256"
	for _, c := range []struct {
		name string
		auth kscram.Auth
		msg  string
	}{
		{"wrong password", kscram.Auth{User: "alice", Pass: "Wr0ngPassw0rd"}, generic},
		{"unknown user", kscram.Auth{User: "mallory", Pass: "alice-secret"}, generic},
		{"delegation token", kscram.Auth{User: "alice", Pass: "alice-secret", IsToken: true}, generic},
		{"authzid", kscram.Auth{Zid: "admin", User: "alice", Pass: "alice-secret"}, "Authentication failed: Client requested an authorization id that is different from username"},
	} {
		_, err := runClient(t, srv, c.auth)
		if err == nil || err.ClientMessage(sasl.ScramSHA256, false) != c.msg {
			t.Errorf("%s: got %v", c.name, err)
			continue
		}
		for _, s := range []string{err.Error(), err.Reason, err.ClientMessage(sasl.ScramSHA256, false)} {
			if strings.Contains(s, "Wr0ngPassw0rd") || strings.Contains(s, "alice-secret") {
				t.Errorf("%s: a password leaked: %q", c.name, s)
			}
		}
	}
}

func TestMessageGrammar(t *testing.T) {
	srv := NewServer(SHA256, storeWith(t, SHA256, map[string]string{"alice": "x"}), Options{Nonce: func() string { return "S" }})
	for _, first := range []string{
		"y,,n=alice,r=abc", // channel binding flags other than n
		"p=tls-unique,,n=alice,r=abc",
		"n,,n=alice",           // no nonce
		"n,,n=ålice,r=abc",     // non-ASCII name
		"n,,n=alice,r=a b",     // nonce not printable
		"n,,n=a=2Xb,r=abc",     // bad escape
		"n,,n=alice,r=abc,1=x", // bad extension name
		"",
	} {
		c := sasl.NewConversation(srv)
		if _, err := c.Step([]byte(first)); err == nil {
			t.Errorf("%q accepted", first)
		}
	}
	p := newParsers()
	cf, ok := p.ParseClientFirst([]byte("n,a=alice,m=ignored,n=alice,r=abc,tokenauth=TRUE,foo=bar"))
	if !ok || cf.AuthorizationID != "alice" || cf.Nonce != "abc" || !cf.TokenAuth() || cf.Extensions["foo"] != "bar" {
		t.Fatalf("parsed %+v %v", cf, ok)
	}
	c := sasl.NewConversation(srv)
	if _, err := c.Step([]byte("n,,n=alice,r=abc")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Step([]byte("c=biws,r=abcS,p=not base64!")); err == nil {
		t.Fatal("bad final accepted")
	}
	c = sasl.NewConversation(srv)
	c.Step([]byte("n,,n=alice,r=abc"))
	if _, err := c.Step([]byte("c=biws,r=abcX,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")); err == nil {
		t.Fatal("wrong nonce accepted")
	}
}

func TestLowIterationsRefused(t *testing.T) {
	s := NewMemStore()
	s.Set("alice", SHA256, FromSaltedPassword(SHA256, []byte("s"), []byte("salted"), 1000))
	c := sasl.NewConversation(NewServer(SHA256, s, Options{}))
	if _, err := c.Step([]byte("n,,n=alice,r=abc")); err == nil {
		t.Fatal("1000 iterations accepted")
	}
}

var clientFirstSeeds = []string{
	"n,,n=user,r=rOprNGfwEbeRWgbNEkqO",
	"n,a=alice,n=alice,r=abc,tokenauth=true",
	"n,,m=x,n=a=2Cb,r=abc",
	"y,,n=user,r=x",
}

var clientFinalSeeds = []string{
	"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
	"c=biws,r=x,p=",
	"c=,r=,p=",
}

func TestWriteScramSeedCorpus(t *testing.T) {
	if !fuzzseed.Enabled() {
		t.Skip("set KBROKER_WRITE_SEEDS=1 to rewrite testdata/fuzz")
	}
	var seeds [][]any
	for _, f := range clientFirstSeeds {
		for _, fin := range clientFinalSeeds {
			seeds = append(seeds, []any{[]byte(f), []byte(fin)})
		}
	}
	fuzzseed.Write(t, "FuzzExchange", seeds)
}

// FuzzExchange feeds arbitrary client-first and client-final messages:
// the server never panics, never authenticates without the password
// (pencil) and never takes more than two steps.
func FuzzExchange(f *testing.F) {
	for _, a := range clientFirstSeeds {
		for _, b := range clientFinalSeeds {
			f.Add([]byte(a), []byte(b))
		}
	}
	cred, _ := NewCredential(SHA256, "pencil", []byte("salt"), 4096)
	store := NewMemStore()
	store.Set("user", SHA256, cred)
	srv := NewServer(SHA256, store, Options{Nonce: func() string { return "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0" }})
	f.Fuzz(func(t *testing.T, first, final []byte) {
		c := sasl.NewConversation(srv)
		if _, err := c.Step(first); err != nil {
			return
		}
		if _, err := c.Step(final); err == nil {
			t.Fatalf("authenticated without a client proof: %q %q", first, final)
		}
		if _, err := c.Step(nil); err == nil {
			t.Fatal("third step accepted")
		}
	})
}

// librdkafka (up to 2.x, kcat on Debian) sends its own nonce again in
// front of the server-first-message's nonce; Kafka accepts a final nonce
// that ends with the server's, and so does kbroker. The proof covers the
// message as sent.
func TestLibrdkafkaRepeatedNonce(t *testing.T) {
	store := storeWith(t, SHA256, map[string]string{"alice": "alice-secret"})
	srv := NewServer(SHA256, store, Options{Nonce: func() string { return "SERVER" }})
	c := sasl.NewConversation(srv)
	clientFirstBare := "n=alice,r=CLIENT"
	serverFirst, aerr := c.Step([]byte("n,," + clientFirstBare))
	if aerr != nil {
		t.Fatal(aerr)
	}
	cred, _ := store.Credential(SHA256, "alice")
	salted, err := SaltedPassword(SHA256, "alice-secret", cred.Salt, cred.Iterations)
	if err != nil {
		t.Fatal(err)
	}
	final := func(nonce string) string {
		withoutProof := "c=biws,r=" + nonce
		clientKey := mac(SHA256, salted, "Client Key")
		sig := mac(SHA256, cred.StoredKey, clientFirstBare+","+string(serverFirst)+","+withoutProof)
		for i := range clientKey {
			clientKey[i] ^= sig[i]
		}
		return withoutProof + ",p=" + base64.StdEncoding.EncodeToString(clientKey)
	}
	out, aerr := c.Step([]byte(final("CLIENTCLIENTSERVER")))
	if aerr != nil || !strings.HasPrefix(string(out), "v=") || c.State() != sasl.StateComplete {
		t.Fatalf("repeated nonce: %q %v", out, aerr)
	}
	c = sasl.NewConversation(srv)
	if _, aerr := c.Step([]byte("n,," + clientFirstBare)); aerr != nil {
		t.Fatal(aerr)
	}
	if _, aerr := c.Step([]byte(final("CLIENTSERVEX"))); aerr == nil {
		t.Fatal("a nonce that does not end with the server's was accepted")
	}
}

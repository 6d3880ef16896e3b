package plain

import (
	"strings"
	"testing"

	"github.com/kbroker/kbroker/internal/fuzzseed"
	"github.com/kbroker/kbroker/security/sasl"
)

const serverJAAS = `org.apache.kafka.common.security.plain.PlainLoginModule required
	username="admin" password="admin-secret"
	user_admin="admin-secret" user_alice="alice-secret";`

func mechanism(t *testing.T) *Mechanism {
	t.Helper()
	cfg, err := ParseJAAS(serverJAAS)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Username != "admin" || cfg.Password != "admin-secret" || len(cfg.Users) != 2 {
		t.Fatalf("config %+v", cfg)
	}
	return New(cfg.Users)
}

func step(m *Mechanism, msg string) (string, *sasl.AuthError) {
	c := sasl.NewConversation(m)
	_, err := c.Step([]byte(msg))
	if err != nil {
		return "", err
	}
	return c.Outcome().AuthorizationID, nil
}

// Cases from Kafka's PlainSaslServerTest and SaslAuthenticatorTest.
func TestPlainExchange(t *testing.T) {
	m := mechanism(t)
	for _, c := range []struct {
		msg, user, err string
	}{
		{"\x00alice\x00alice-secret", "alice", ""},
		{"alice\x00alice\x00alice-secret", "alice", ""},
		{"\x00admin\x00admin-secret", "admin", ""},
		{"\x00alice\x00wrong-secret", "", "Authentication failed: Invalid username or password"},
		{"\x00mallory\x00alice-secret", "", "Authentication failed: Invalid username or password"},
		{"bob\x00alice\x00alice-secret", "", "Authentication failed: Client requested an authorization id that is different from username"},
		{"\x00\x00alice-secret", "", "Authentication failed: username not specified"},
		{"\x00alice\x00", "", "Authentication failed: password not specified"},
		{"alice-secret", "", "Invalid SASL/PLAIN response: expected 3 tokens, got 1"},
		{"\x00alice\x00alice-secret\x00x", "", "Invalid SASL/PLAIN response: expected 3 tokens, got 4"},
		{"\x00alice\x00\xff\xfe", "", "Authentication failed: Invalid username or password"},
	} {
		user, err := step(m, c.msg)
		if c.err == "" {
			if err != nil || user != c.user {
				t.Errorf("%q: got %q, %v", c.msg, user, err)
			}
			continue
		}
		if err == nil || err.ClientMessage(sasl.Plain, false) != c.err {
			t.Errorf("%q: got %v, want %q", c.msg, err, c.err)
		}
	}
}

func TestWrongPasswordNotInErrors(t *testing.T) {
	m := mechanism(t)
	_, err := step(m, "\x00alice\x00Sup3rS3cret-guess")
	if err == nil {
		t.Fatal("accepted")
	}
	for _, s := range []string{err.Error(), err.ClientMessage(sasl.Plain, false), err.Reason} {
		if strings.Contains(s, "Sup3rS3cret-guess") || strings.Contains(s, "alice-secret") {
			t.Fatalf("a password leaked: %q", s)
		}
	}
}

func TestParseJAASErrors(t *testing.T) {
	if _, err := ParseJAAS(`org.apache.kafka.common.security.scram.ScramLoginModule required;`); err == nil {
		t.Fatal("SCRAM module accepted for PLAIN")
	}
	if _, err := ParseJAAS(`org.apache.kafka.common.security.plain.PlainLoginModule required user_a="x"`); err == nil {
		t.Fatal("unterminated entry accepted")
	}
}

// fixedTexts are the words errors are made of: a "password" that is one
// of them is found in any error.
const fixedTexts = "sasl: Authentication failed: Invalid username or password (PLAIN: wrong password or unknown user <user>) " +
	"username not specified password not specified Client requested an authorization id that is different from username " +
	"Invalid SASL/PLAIN response: expected 3 tokens, got 0123456789 fields empty asked to act as message is not UTF-8"

var plainSeeds = []string{
	"\x00alice\x00alice-secret",
	"alice\x00alice\x00alice-secret",
	"\x00\x00",
	"a\x00b\x00c\x00d",
	"",
}

func TestWritePlainSeedCorpus(t *testing.T) {
	if !fuzzseed.Enabled() {
		t.Skip("set KBROKER_WRITE_SEEDS=1 to rewrite testdata/fuzz")
	}
	var seeds [][]any
	for _, s := range plainSeeds {
		seeds = append(seeds, []any{[]byte(s)})
	}
	fuzzseed.Write(t, "FuzzPlainMessage", seeds)
}

// FuzzPlainMessage: any payload either authenticates a configured user
// with that user's password, or fails without echoing the password field.
func FuzzPlainMessage(f *testing.F) {
	for _, s := range plainSeeds {
		f.Add([]byte(s))
	}
	m := New(StaticUsers{"alice": "alice-secret"})
	f.Fuzz(func(t *testing.T, in []byte) {
		c := sasl.NewConversation(m)
		_, err := c.Step(in)
		_, user, password, perr := ParseMessage(in)
		if err == nil {
			if perr != nil || user != "alice" || password != "alice-secret" || c.Outcome().AuthorizationID != "alice" {
				t.Fatalf("%q authenticated as %q", in, c.Outcome().AuthorizationID)
			}
			return
		}
		text := err.ClientMessage(sasl.Plain, false) + "|" + err.Error()
		if user != "" {
			text = strings.ReplaceAll(text, user, "<user>") // names are logged; passwords equal to them are the user's problem
		}
		if len(password) >= 4 && !strings.Contains(fixedTexts, password) && strings.Contains(text, password) {
			t.Fatalf("password %q in error %v", password, err)
		}
	})
}

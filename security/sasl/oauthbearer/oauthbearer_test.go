package oauthbearer

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	koauth "github.com/twmb/franz-go/pkg/sasl/oauth"

	"github.com/kbroker/kbroker/internal/fuzzseed"
	"github.com/kbroker/kbroker/security/sasl"
)

var t0 = time.Unix(1_700_000_000, 0)

// clock is a settable test clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

func unsecuredToken(claims map[string]any) string {
	enc := func(v any) string {
		b, _ := json.Marshal(v)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	return enc(map[string]any{"alg": "none"}) + "." + enc(claims) + "."
}

// initial builds the client's first message with franz-go's OAUTHBEARER
// client, as kgo sends it to Kafka.
func initial(t *testing.T, a koauth.Auth) []byte {
	t.Helper()
	_, msg, err := a.AsMechanism().Authenticate(context.Background(), "127.0.0.1:9092")
	if err != nil {
		t.Fatal(err)
	}
	return msg
}

func TestUnsecuredExchange(t *testing.T) {
	u, err := UnsecuredFromJAAS(map[string]string{"unsecuredValidatorRequiredScope": "kafka", "unsecuredValidatorAllowableClockSkewMs": "1000"},
		func() time.Time { return t0 })
	if err != nil {
		t.Fatal(err)
	}
	m := New(u)
	good := unsecuredToken(map[string]any{"sub": "alice", "exp": t0.Add(time.Hour).Unix(), "iat": t0.Unix(), "scope": []string{"kafka", "x"}})
	c := sasl.NewConversation(m)
	if _, aerr := c.Step(initial(t, koauth.Auth{Token: good, Extensions: map[string]string{"traceId": "1"}})); aerr != nil || c.State() != sasl.StateComplete {
		t.Fatalf("%v %s", aerr, c.State())
	}
	if o := c.Outcome(); o.AuthorizationID != "alice" || !o.Expiry.Equal(t0.Add(time.Hour)) {
		t.Fatalf("outcome %+v", o)
	}
	for _, tc := range []struct {
		name   string
		claims map[string]any
		want   string
	}{
		{"expired", map[string]any{"sub": "alice", "exp": t0.Add(-2 * time.Second).Unix(), "scope": "kafka"}, `{"status":"invalid_token"}`},
		{"within skew", map[string]any{"sub": "alice", "exp": t0.Add(-500 * time.Millisecond).UnixMilli(), "scope": "kafka"}, "ms"},
		{"no exp", map[string]any{"sub": "alice", "scope": "kafka"}, `{"status":"invalid_token"}`},
		{"no sub", map[string]any{"exp": t0.Add(time.Hour).Unix(), "scope": "kafka"}, `{"status":"invalid_token"}`},
		{"issued in the future", map[string]any{"sub": "a", "iat": t0.Add(time.Minute).Unix(), "exp": t0.Add(time.Hour).Unix(), "scope": "kafka"}, `{"status":"invalid_token"}`},
		{"missing scope", map[string]any{"sub": "alice", "exp": t0.Add(time.Hour).Unix(), "scope": "other"}, `{"status":"insufficient_scope", "scope":"kafka"}`},
	} {
		claims := tc.claims
		if tc.want == "ms" { // exp in seconds with a fraction: 0.5 s ago
			claims["exp"] = float64(t0.UnixMilli()-500) / 1000
			tc.want = ""
		}
		c := sasl.NewConversation(m)
		out, aerr := c.Step(initial(t, koauth.Auth{Token: unsecuredToken(claims)}))
		if tc.want == "" {
			if aerr != nil || c.State() != sasl.StateComplete {
				t.Errorf("%s: %v", tc.name, aerr)
			}
			continue
		}
		if aerr != nil || string(out) != tc.want {
			t.Errorf("%s: challenge %q, %v", tc.name, out, aerr)
			continue
		}
		_, aerr = c.Step([]byte{0x01})
		if aerr == nil || aerr.ClientMessage(sasl.OAuthBearer, false) != tc.want {
			t.Errorf("%s: final %v", tc.name, aerr)
		}
	}
}

func TestUnsecuredRefusesSignedAndMalformed(t *testing.T) {
	u, _ := UnsecuredFromJAAS(nil, func() time.Time { return t0 })
	for _, tok := range []string{
		"a.b.c",
		"e30.e30.",
		base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"HS256"}`)) + ".e30.",
		"onlyonepart",
	} {
		if _, err := u.Validate(tok); err == nil {
			t.Errorf("%q accepted", tok)
		}
	}
	if _, err := UnsecuredFromJAAS(map[string]string{"unsecuredValidatorAllowableClockSkewMs": "-1"}, nil); err == nil {
		t.Error("negative skew accepted")
	}
}

func TestClientMessageGrammar(t *testing.T) {
	g := newGrammar()
	r, _, ok := g.parse([]byte("n,a=alice,\x01host=h\x01auth=Bearer abc.def-_\x01port=9\x01\x01"))
	if !ok || r.AuthorizationID != "alice" || r.Token != "abc.def-_" || r.Extensions["host"] != "h" || len(r.Extensions) != 2 {
		t.Fatalf("%+v %v", r, ok)
	}
	for _, bad := range []string{
		"n,,\x01auth=Basic abc\x01\x01",
		"n,,\x01host=h\x01\x01",
		"n,,\x01auth=Bearer a b\x01\x01",
		"y,,\x01auth=Bearer abc\x01\x01",
		"n,,\x01auth=Bearer abc\x01",
		"n,,\x011x=y\x01auth=Bearer abc\x01\x01",
		"",
	} {
		if _, _, ok := g.parse([]byte(bad)); ok {
			t.Errorf("%q accepted", bad)
		}
	}
	if _, _, ok := g.parse([]byte("n,,\x01auth=bEaReR abc\x01\x01")); !ok {
		t.Error("scheme is case-insensitive")
	}
}

type keyPair struct {
	kid    string
	method jwt.SigningMethod
	priv   any
	jwk    map[string]any
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func newKeys(t *testing.T) []keyPair {
	t.Helper()
	rk, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	ek, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	pub, _ := ek.PublicKey.Bytes() // 0x04 || X || Y
	_, edPriv, _ := ed25519.GenerateKey(rand.Reader)
	return []keyPair{
		{"rsa1", jwt.SigningMethodRS256, rk, map[string]any{"kty": "RSA", "kid": "rsa1", "use": "sig", "n": b64(rk.N.Bytes()), "e": b64(big.NewInt(int64(rk.E)).Bytes())}},
		{"ec1", jwt.SigningMethodES256, ek, map[string]any{"kty": "EC", "kid": "ec1", "crv": "P-256", "x": b64(pub[1:33]), "y": b64(pub[33:])}},
		{"ed1", jwt.SigningMethodEdDSA, edPriv, map[string]any{"kty": "OKP", "kid": "ed1", "crv": "Ed25519", "x": b64(edPriv.Public().(ed25519.PublicKey))}},
	}
}

func jwksJSON(keys ...keyPair) []byte {
	var list []any
	for _, k := range keys {
		list = append(list, k.jwk)
	}
	b, _ := json.Marshal(map[string]any{"keys": list})
	return b
}

func sign(t *testing.T, k keyPair, claims jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(k.method, claims)
	tok.Header["kid"] = k.kid
	s, err := tok.SignedString(k.priv)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func goodClaims() jwt.MapClaims {
	return jwt.MapClaims{"sub": "svc-orders", "iss": "https://idp", "aud": []string{"kafka"}, "iat": t0.Unix(), "exp": t0.Add(10 * time.Minute).Unix(), "scope": "kafka"}
}

func TestJWTValidator(t *testing.T) {
	keys := newKeys(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "jwks.json")
	if err := os.WriteFile(path, jwksJSON(keys...), 0o600); err != nil {
		t.Fatal(err)
	}
	clk := &clock{now: t0}
	src, err := NewKeySource(context.Background(), "file:"+path, KeySourceOptions{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	v := NewJWT(JWTConfig{ExpectedAudience: []string{"kafka"}, ExpectedIssuer: "https://idp", Now: clk.Now}, src)
	for _, k := range keys {
		tok, err := v.Validate(sign(t, k, goodClaims()))
		if err != nil || tok.Principal != "svc-orders" || !tok.Expiry.Equal(t0.Add(10*time.Minute)) {
			t.Errorf("%s: %+v %v", k.kid, tok, err)
		}
	}
	other := newKeys(t)[0] // same kid, another key: a forged signature
	mutate := func(f func(jwt.MapClaims)) jwt.MapClaims { c := goodClaims(); f(c); return c }
	for _, c := range []struct {
		name string
		tok  string
	}{
		{"bad signature", sign(t, other, goodClaims())},
		{"expired beyond skew", sign(t, keys[0], mutate(func(c jwt.MapClaims) { c["exp"] = t0.Add(-31 * time.Second).Unix() }))},
		{"no exp", sign(t, keys[0], mutate(func(c jwt.MapClaims) { delete(c, "exp") }))},
		{"no iat", sign(t, keys[0], mutate(func(c jwt.MapClaims) { delete(c, "iat") }))},
		{"wrong issuer", sign(t, keys[0], mutate(func(c jwt.MapClaims) { c["iss"] = "https://evil" }))},
		{"wrong audience", sign(t, keys[0], mutate(func(c jwt.MapClaims) { c["aud"] = "other" }))},
		{"blank sub", sign(t, keys[0], mutate(func(c jwt.MapClaims) { c["sub"] = " " }))},
		{"not yet valid", sign(t, keys[0], mutate(func(c jwt.MapClaims) { c["nbf"] = t0.Add(time.Minute).Unix() }))},
		{"alg none", unsecuredToken(map[string]any{"sub": "a", "exp": t0.Add(time.Hour).Unix(), "iat": t0.Unix()})},
		{"unknown kid", sign(t, keyPair{"nope", keys[0].method, keys[0].priv, nil}, goodClaims())},
	} {
		if _, err := v.Validate(c.tok); err == nil {
			t.Errorf("%s: accepted", c.name)
		} else if strings.Contains(err.Error(), c.tok) {
			t.Errorf("%s: the token is in the error", c.name)
		}
	}
	if _, err := v.Validate(sign(t, keys[0], mutate(func(c jwt.MapClaims) { c["exp"] = t0.Add(-29 * time.Second).Unix() }))); err != nil {
		t.Errorf("within the 30 s skew: %v", err)
	}
}

func TestKeySourceRotationOverHTTPS(t *testing.T) {
	keys := newKeys(t)
	var mu sync.Mutex
	served := jwksJSON(keys[0])
	fetches := 0
	ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		fetches++
		w.Write(served)
	}))
	defer ts.Close()
	clk := &clock{now: t0}
	src, err := NewKeySource(context.Background(), ts.URL, KeySourceOptions{Client: ts.Client(), Now: clk.Now, Backoff: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	v := NewJWT(JWTConfig{Now: clk.Now}, src)
	if _, err := v.Validate(sign(t, keys[0], goodClaims())); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	served = jwksJSON(keys[0], keys[1]) // the IdP adds a key
	mu.Unlock()
	clk.Add(2 * time.Second)
	if _, err := v.Validate(sign(t, keys[1], goodClaims())); err != nil {
		t.Fatalf("rotated key: %v", err)
	}
	if _, err := v.Validate(sign(t, keyPair{"nope", keys[0].method, keys[0].priv, nil}, goodClaims())); err == nil {
		t.Fatal("unknown kid accepted")
	}
	if _, err := v.Validate(sign(t, keyPair{"nope2", keys[0].method, keys[0].priv, nil}, goodClaims())); err == nil {
		t.Fatal("unknown kid accepted")
	}
	mu.Lock()
	defer mu.Unlock()
	if fetches != 2 { // the start and the miss on ec1: misses within the backoff do not fetch
		t.Fatalf("%d fetches, want 2", fetches)
	}
}

func TestJWKSParse(t *testing.T) {
	for _, bad := range []string{`nope`, `{"keys":[]}`, `{"keys":[{"kty":"RSA","n":"","e":"AQAB"}]}`, `{"keys":[{"kty":"EC","crv":"P-256","x":"AA","y":"AA"}]}`} {
		if _, err := ParseJWKS([]byte(bad)); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
	set, err := ParseJWKS([]byte(`{"keys":[{"kty":"oct","k":"c2VjcmV0"},{"kty":"OKP","crv":"Ed25519","use":"enc","x":"` + strings.Repeat("A", 43) + `"},{"kty":"OKP","crv":"Ed25519","x":"` + strings.Repeat("A", 43) + `"}]}`))
	if err != nil || len(set.keys) != 1 {
		t.Fatalf("%v %v", set, err)
	}
}

func TestJWTExchangeErrorChallenge(t *testing.T) {
	keys := newKeys(t)
	path := filepath.Join(t.TempDir(), "jwks.json")
	os.WriteFile(path, jwksJSON(keys[0]), 0o600)
	src, err := NewKeySource(context.Background(), path, KeySourceOptions{Now: func() time.Time { return t0 }})
	if err != nil {
		t.Fatal(err)
	}
	m := New(NewJWT(JWTConfig{Now: func() time.Time { return t0.Add(time.Hour) }}, src))
	tok := sign(t, keys[0], goodClaims()) // expired an hour later
	c := sasl.NewConversation(m)
	out, aerr := c.Step(initial(t, koauth.Auth{Token: tok}))
	if aerr != nil || string(out) != `{"status":"invalid_token"}` {
		t.Fatalf("%q %v", out, aerr)
	}
	_, aerr = c.Step([]byte{1})
	if aerr == nil || aerr.ClientMessage(sasl.OAuthBearer, false) != `{"status":"invalid_token"}` || strings.Contains(aerr.Error(), tok) {
		t.Fatalf("%v", aerr)
	}
	c = sasl.NewConversation(New(NewJWT(JWTConfig{Now: func() time.Time { return t0 }}, src)))
	_, aerr = c.Step(initial(t, koauth.Auth{Zid: "admin", Token: tok}))
	if aerr == nil || !strings.Contains(aerr.ClientMessage(sasl.OAuthBearer, false), "different from the token's principal name (svc-orders)") {
		t.Fatalf("authzid: %v", aerr)
	}
}

var messageSeeds = []string{
	"n,,\x01auth=Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiJhIn0.\x01\x01",
	"n,a=alice,\x01host=h\x01auth=Bearer abc\x01port=9\x01\x01",
	"\x01",
	"n,,\x01auth=Basic x\x01\x01",
}

func TestWriteMessageSeedCorpus(t *testing.T) {
	if !fuzzseed.Enabled() {
		t.Skip("set KBROKER_WRITE_SEEDS=1 to rewrite testdata/fuzz")
	}
	var seeds [][]any
	for _, s := range messageSeeds {
		seeds = append(seeds, []any{[]byte(s), []byte{1}})
	}
	fuzzseed.Write(t, "FuzzClientMessage", seeds)
}

// FuzzClientMessage: arbitrary first and second client messages against
// the unsecured validator; a success must carry a token whose claims name
// the principal, and no reply or error quotes the token.
func FuzzClientMessage(f *testing.F) {
	for _, s := range messageSeeds {
		f.Add([]byte(s), []byte{1})
	}
	u, _ := UnsecuredFromJAAS(nil, func() time.Time { return t0 })
	m := New(u)
	f.Fuzz(func(t *testing.T, first, second []byte) {
		c := sasl.NewConversation(m)
		for _, msg := range [][]byte{first, second} {
			_, aerr := c.Step(msg)
			if aerr != nil || c.State() == sasl.StateComplete {
				break
			}
		}
		if c.State() == sasl.StateComplete && c.Outcome().AuthorizationID == "" {
			t.Fatal("authenticated without a principal")
		}
	})
}

package oauthbearer

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"
)

// JWKS is a parsed JSON Web Key Set (RFC 7517): the signature keys.
type JWKS struct {
	keys []jwk
}

type jwk struct {
	kid string
	alg string // may be empty
	key crypto.PublicKey
}

type rawJWK struct {
	Kty string `json:"kty"`
	Kid string `json:"kid"`
	Use string `json:"use"`
	Alg string `json:"alg"`
	N   string `json:"n"`
	E   string `json:"e"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	Y   string `json:"y"`
}

// ParseJWKS parses a key set. Keys marked for encryption ("use":"enc")
// and key types other than RSA, EC (P-256/384/521) and OKP Ed25519 are
// skipped; a set with no usable key is an error.
func ParseJWKS(data []byte) (*JWKS, error) {
	var doc struct {
		Keys []rawJWK `json:"keys"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("oauthbearer: JWKS is not JSON: %w", err)
	}
	set := &JWKS{}
	for _, r := range doc.Keys {
		if r.Use != "" && r.Use != "sig" {
			continue
		}
		key, err := r.publicKey()
		if err != nil {
			return nil, fmt.Errorf("oauthbearer: JWKS key %q: %w", r.Kid, err)
		}
		if key != nil {
			set.keys = append(set.keys, jwk{kid: r.Kid, alg: r.Alg, key: key})
		}
	}
	if len(set.keys) == 0 {
		return nil, errors.New("oauthbearer: JWKS has no signature key")
	}
	return set, nil
}

func b64url(s string) ([]byte, error) {
	return base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
}

func (r rawJWK) publicKey() (crypto.PublicKey, error) {
	switch r.Kty {
	case "RSA":
		n, err1 := b64url(r.N)
		e, err2 := b64url(r.E)
		if err1 != nil || err2 != nil || len(n) == 0 || len(e) == 0 || len(e) > 4 {
			return nil, errors.New("bad RSA n or e")
		}
		exp := int(new(big.Int).SetBytes(e).Int64())
		return &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: exp}, nil
	case "EC":
		return ecKey(r.Crv, r.X, r.Y)
	case "OKP":
		x, err := b64url(r.X)
		if r.Crv != "Ed25519" || err != nil || len(x) != ed25519.PublicKeySize {
			return nil, errors.New("only Ed25519 OKP keys are supported")
		}
		return ed25519.PublicKey(x), nil
	}
	return nil, nil // unknown key types are skipped, as RFC 7517 says
}

func ecKey(crv, xs, ys string) (crypto.PublicKey, error) {
	curves := map[string]elliptic.Curve{"P-256": elliptic.P256(), "P-384": elliptic.P384(), "P-521": elliptic.P521()}
	curve, ok := curves[crv]
	if !ok {
		return nil, fmt.Errorf("unsupported curve %q", crv)
	}
	x, err1 := b64url(xs)
	y, err2 := b64url(ys)
	size := (curve.Params().BitSize + 7) / 8
	if err1 != nil || err2 != nil || len(x) != size || len(y) != size {
		return nil, errors.New("bad EC x or y")
	}
	return ecdsa.ParseUncompressedPublicKey(curve, append(append([]byte{4}, x...), y...))
}

// key picks the key for a token: by kid when the token names one, else
// the only key that fits the algorithm.
func (s *JWKS) key(kid, alg string) (crypto.PublicKey, bool) {
	var found []crypto.PublicKey
	for _, k := range s.keys {
		if kid != "" && k.kid != kid || k.alg != "" && k.alg != alg {
			continue
		}
		found = append(found, k.key)
	}
	if len(found) != 1 {
		return nil, false
	}
	return found[0], true
}

// KeySource serves a JWKS from sasl.oauthbearer.jwks.endpoint.url: an
// https (or http) URL, or a file (file:/path or a plain path). It fetches
// again when the set is older than the refresh interval
// (sasl.oauthbearer.jwks.endpoint.refresh.ms) and, at most once per retry
// backoff, when a token names a key it does not have (a rotated key), as
// Kafka's RefreshingHttpsJwks does. Fetches happen on the authenticating
// goroutine under a lock, bounded by the HTTP client's timeout; no
// goroutine is started. Safe for concurrent use.
type KeySource struct {
	url     string
	client  *http.Client
	now     func() time.Time
	refresh time.Duration
	backoff time.Duration

	mu          sync.Mutex // guards the fields below
	set         *JWKS
	fetched     time.Time
	lastAttempt time.Time
}

// KeySourceOptions tune a KeySource; zero values take Kafka's defaults.
type KeySourceOptions struct {
	Client  *http.Client     // default: 10 s timeout
	Now     func() time.Time // default time.Now
	Refresh time.Duration    // default 1 h
	Backoff time.Duration    // minimum time between fetches on a miss; default 100 ms
}

// NewKeySource returns a source for url and fetches it once: a broker
// whose JWKS cannot be read does not start, as in Kafka.
func NewKeySource(ctx context.Context, url string, o KeySourceOptions) (*KeySource, error) {
	if o.Client == nil {
		o.Client = &http.Client{Timeout: 10 * time.Second}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Refresh <= 0 {
		o.Refresh = time.Hour
	}
	if o.Backoff <= 0 {
		o.Backoff = 100 * time.Millisecond
	}
	s := &KeySource{url: url, client: o.Client, now: o.Now, refresh: o.Refresh, backoff: o.Backoff}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.fetchLocked(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// Key returns the verification key for a token's kid and alg.
func (s *KeySource) Key(ctx context.Context, kid, alg string) (crypto.PublicKey, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if now.Sub(s.fetched) >= s.refresh && now.Sub(s.lastAttempt) >= s.backoff {
		_ = s.fetchLocked(ctx) // keep serving the old set if the endpoint is down
	}
	if k, ok := s.set.key(kid, alg); ok {
		return k, nil
	}
	if now.Sub(s.lastAttempt) >= s.backoff {
		if err := s.fetchLocked(ctx); err == nil {
			if k, ok := s.set.key(kid, alg); ok {
				return k, nil
			}
		}
	}
	return nil, fmt.Errorf("no JWKS key for kid %q and alg %s", kid, alg)
}

// fetchLocked reads the set. Must be called with s.mu held.
func (s *KeySource) fetchLocked(ctx context.Context) error {
	s.lastAttempt = s.now()
	data, err := s.read(ctx)
	if err != nil {
		return fmt.Errorf("oauthbearer: reading JWKS %s: %w", s.url, err)
	}
	set, err := ParseJWKS(data)
	if err != nil {
		return err
	}
	s.set, s.fetched = set, s.now()
	return nil
}

func (s *KeySource) read(ctx context.Context) ([]byte, error) {
	if path, ok := filePath(s.url); ok {
		return os.ReadFile(path)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("HTTP %s", resp.Status)
	}
	return io.ReadAll(io.LimitReader(resp.Body, 1<<20))
}

func filePath(url string) (string, bool) {
	switch {
	case strings.HasPrefix(url, "file://"):
		return strings.TrimPrefix(url, "file://"), true
	case strings.HasPrefix(url, "file:"):
		return strings.TrimPrefix(url, "file:"), true
	case strings.HasPrefix(url, "https://"), strings.HasPrefix(url, "http://"):
		return "", false
	}
	return url, true
}

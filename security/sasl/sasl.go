package sasl

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Mechanism names, as clients send them in SaslHandshake.
const (
	Plain       = "PLAIN"
	ScramSHA256 = "SCRAM-SHA-256"
	ScramSHA512 = "SCRAM-SHA-512"
	OAuthBearer = "OAUTHBEARER"
	GSSAPI      = "GSSAPI" // Kafka's default; not supported by kbroker
)

// Outcome is what a successful exchange established.
type Outcome struct {
	// AuthorizationID is the authenticated name: the principal is
	// User:<AuthorizationID>.
	AuthorizationID string
	// Expiry is when the credential stops being valid (an OAUTHBEARER
	// token's exp); zero when it does not expire. It bounds the KIP-368
	// session lifetime.
	Expiry time.Time
	// Extensions are SASL extensions the mechanism accepted (OAUTHBEARER).
	Extensions map[string]string
}

// Exchange is one authentication attempt with one mechanism. Step is
// called with each client message in turn; it returns the reply and
// whether the client is now authenticated. After an error or success the
// exchange is over; Conversation enforces that.
type Exchange interface {
	Step(in []byte) (out []byte, done bool, err error)
	// Outcome is valid once Step has returned done.
	Outcome() Outcome
}

// Mechanism starts exchanges of one SASL mechanism.
type Mechanism interface {
	Name() string
	// MaxSteps bounds the client messages of one exchange.
	MaxSteps() int
	Start() Exchange
}

// AuthError is a failed authentication.
type AuthError struct {
	// Public is the message the client is told, when the mechanism fails
	// with Kafka's SaslAuthenticationException text; empty means Kafka's
	// generic invalid-credentials message (ClientMessage).
	Public string
	// Reason says why, for the broker's log. Never a secret.
	Reason string
}

func (e *AuthError) Error() string {
	if e.Public != "" {
		return "sasl: " + e.Public + " (" + e.Reason + ")"
	}
	return "sasl: authentication failed: " + e.Reason
}

// ClientMessage is SaslAuthenticate's ErrorMessage for this failure, as
// Kafka's SaslServerAuthenticator writes it.
func (e *AuthError) ClientMessage(mechanism string, reauthentication bool) string {
	if e.Public != "" {
		return e.Public
	}
	phase := "authentication"
	if reauthentication {
		phase = "re-authentication"
	}
	return "Authentication failed during " + phase + " due to invalid credentials with SASL mechanism " + mechanism
}

// Fail returns an AuthError that tells the client only Kafka's generic
// message.
func Fail(format string, args ...any) *AuthError {
	return &AuthError{Reason: fmt.Sprintf(format, args...)}
}

// FailPublic returns an AuthError whose message the client sees.
func FailPublic(public, reason string) *AuthError {
	return &AuthError{Public: public, Reason: reason}
}

// Registry holds the enabled mechanisms (sasl.enabled.mechanisms of a
// listener), in configured order.
type Registry struct {
	byName map[string]Mechanism
	names  []string
}

// NewRegistry returns a registry of mechs; names must be unique.
func NewRegistry(mechs ...Mechanism) (*Registry, error) {
	r := &Registry{byName: map[string]Mechanism{}}
	for _, m := range mechs {
		if _, dup := r.byName[m.Name()]; dup {
			return nil, fmt.Errorf("sasl: mechanism %s enabled twice", m.Name())
		}
		r.byName[m.Name()] = m
		r.names = append(r.names, m.Name())
	}
	return r, nil
}

// Lookup returns the enabled mechanism of that name (case-sensitive, as
// Kafka compares them).
func (r *Registry) Lookup(name string) (Mechanism, bool) {
	m, ok := r.byName[name]
	return m, ok
}

// Enabled lists the enabled mechanism names, for SaslHandshake responses.
func (r *Registry) Enabled() []string { return slices.Clone(r.names) }

// ParseEnabledMechanisms splits sasl.enabled.mechanisms.
func ParseEnabledMechanisms(s string) []string {
	var out []string
	for item := range strings.SplitSeq(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

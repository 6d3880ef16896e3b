package session

import (
	"crypto/tls"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/security/principal"
	"github.com/kbroker/kbroker/security/sasl"
)

// Protocol is a listener's security.protocol.
type Protocol int

const (
	Plaintext Protocol = iota
	SSL
	SASLPlaintext
	SASLSSL
)

// ParseProtocol reads PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL.
func ParseProtocol(s string) (Protocol, error) {
	switch strings.ToUpper(s) {
	case "PLAINTEXT":
		return Plaintext, nil
	case "SSL":
		return SSL, nil
	case "SASL_PLAINTEXT":
		return SASLPlaintext, nil
	case "SASL_SSL":
		return SASLSSL, nil
	}
	return 0, fmt.Errorf("session: unknown security protocol %q", s)
}

// SASL reports whether connections must authenticate with SASL.
func (p Protocol) SASL() bool { return p == SASLPlaintext || p == SASLSSL }

// TLS reports whether connections are TLS.
func (p Protocol) TLS() bool { return p == SSL || p == SASLSSL }

// State is where a connection's authentication is.
type State int

const (
	StateHandshake     State = iota // SASL: waiting for SaslHandshake (ApiVersions allowed)
	StateAuthenticate               // SASL: waiting for SaslAuthenticate
	StateAuthenticated              // requests are served
	StateFailed                     // authentication failed: close
)

func (s State) String() string {
	return [...]string{"handshake", "authenticate", "authenticated", "failed"}[s]
}

// Kafka API keys the gate knows.
const (
	keyApiVersions      int16 = 18
	keySaslHandshake    int16 = 17
	keySaslAuthenticate int16 = 36
)

// Kafka error codes.
const (
	codeUnsupportedSaslMechanism int16 = 33
	codeIllegalSaslState         int16 = 34
	codeSaslAuthenticationFailed int16 = 58
)

// Config is a listener's authentication setup.
type Config struct {
	Protocol   Protocol
	Mechanisms *sasl.Registry // SASL listeners: sasl.enabled.mechanisms
	Principals principal.Builder
	// MaxReauth is connections.max.reauth.ms (0: sessions do not expire
	// unless the credential does).
	MaxReauth time.Duration
	Now       func() time.Time
}

// Session is one connection's authentication state machine (Kafka's
// SaslServerAuthenticator and the principal it yields). Transitions:
//
//	handshake --SaslHandshake(enabled)--> authenticate --exchange done--> authenticated
//	authenticated --SaslHandshake (KIP-368 re-authentication)--> authenticate
//	any --failure--> failed
//
// It is not safe for concurrent use: a connection's requests are handled
// one at a time.
type Session struct {
	cfg       Config
	state     State
	principal principal.Principal
	mechanism string
	conv      *sasl.Conversation
	reauth    bool
	rawTokens bool      // SaslHandshake v0: tokens follow as raw frames
	expires   time.Time // zero: no expiry
}

// New starts the session of a connection. Non-SASL listeners are
// authenticated at once: SSL by the client certificate (or ANONYMOUS),
// PLAINTEXT as ANONYMOUS. An error (no mapping rule applies) closes the
// connection.
func New(cfg Config, tlsState *tls.ConnectionState) (*Session, error) {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &Session{cfg: cfg}
	switch {
	case cfg.Protocol.SASL():
		if cfg.Mechanisms == nil {
			return nil, errors.New("session: a SASL listener needs enabled mechanisms")
		}
		s.state = StateHandshake
	case cfg.Protocol == SSL:
		p, err := cfg.Principals.FromTLS(tlsState)
		if err != nil {
			return nil, err
		}
		s.principal, s.state = p, StateAuthenticated
	default:
		s.principal, s.state = principal.Anonymous(), StateAuthenticated
	}
	return s, nil
}

// State is the current state.
func (s *Session) State() State { return s.state }

// Principal is the authenticated principal (valid when authenticated).
func (s *Session) Principal() principal.Principal { return s.principal }

// RawTokens reports that SaslHandshake v0 was used: the next frames are
// raw SASL tokens, not SaslAuthenticate requests (protocol reads them with
// ReadToken framing and calls Token).
func (s *Session) RawTokens() bool { return s.state == StateAuthenticate && s.rawTokens }

// Verdict is the gate's answer for one request.
type Verdict struct {
	Serve  bool
	Reason string // why the connection closes, for the log
}

// Gate decides whether a request may be served in the current state; a
// request that may not closes the connection without an answer, as Kafka
// does (IllegalSaslStateException).
func (s *Session) Gate(apiKey int16) Verdict {
	switch s.state {
	case StateAuthenticated:
		if !s.expires.IsZero() && s.cfg.Now().After(s.expires) && apiKey != keySaslHandshake && apiKey != keySaslAuthenticate {
			return Verdict{Reason: "the SASL session expired and the client did not re-authenticate (connections.max.reauth.ms or token expiry)"}
		}
		return Verdict{Serve: true}
	case StateHandshake:
		if apiKey == keyApiVersions || apiKey == keySaslHandshake {
			return Verdict{Serve: true}
		}
		return Verdict{Reason: fmt.Sprintf("Unexpected Kafka request of type %s during SASL handshake.", apiName(apiKey))}
	case StateAuthenticate:
		if apiKey == keySaslAuthenticate && !s.rawTokens {
			return Verdict{Serve: true}
		}
		return Verdict{Reason: fmt.Sprintf("Unexpected Kafka request of type %s during SASL authentication.", apiName(apiKey))}
	}
	return Verdict{Reason: "authentication failed"}
}

func apiName(key int16) string {
	if n := kmsg.NameForKey(key); n != "" {
		return n
	}
	return fmt.Sprintf("key %d", key)
}

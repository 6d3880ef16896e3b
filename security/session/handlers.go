package session

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/security/sasl"
)

// HandleSaslHandshake answers SaslHandshake v0-v1. close means: write the
// response, then close the connection (unsupported mechanism).
func (s *Session) HandleSaslHandshake(req *kmsg.SASLHandshakeRequest) (resp *kmsg.SASLHandshakeResponse, close bool) {
	resp = req.ResponseKind().(*kmsg.SASLHandshakeResponse)
	resp.SupportedMechanisms = s.enabled()
	if !s.cfg.Protocol.SASL() || s.state == StateAuthenticate || s.state == StateFailed {
		resp.ErrorCode = codeIllegalSaslState
		return resp, true
	}
	reauth := s.state == StateAuthenticated
	m, ok := s.cfg.Mechanisms.Lookup(req.Mechanism)
	if !ok || reauth && req.Mechanism != s.mechanism {
		// Kafka: UnsupportedSaslMechanismException, also when a
		// re-authentication asks for another mechanism.
		resp.ErrorCode = codeUnsupportedSaslMechanism
		s.state = StateFailed
		return resp, true
	}
	s.conv, s.mechanism, s.reauth = sasl.NewConversation(m), req.Mechanism, reauth
	s.rawTokens = req.Version == 0
	s.state = StateAuthenticate
	return resp, false
}

func (s *Session) enabled() []string {
	if s.cfg.Mechanisms == nil {
		return nil
	}
	return s.cfg.Mechanisms.Enabled()
}

// Failure is a failed authentication: log Err.Reason (never a secret),
// count it, wait connection.failed.authentication.delay.ms, then send the
// response and close.
type Failure struct {
	Mechanism string
	Err       *sasl.AuthError
}

// HandleSaslAuthenticate answers SaslAuthenticate v0-v2. On failure the
// response carries SASL_AUTHENTICATION_FAILED with Kafka's message, and
// the connection must close after it (Failure non-nil).
func (s *Session) HandleSaslAuthenticate(req *kmsg.SASLAuthenticateRequest) (*kmsg.SASLAuthenticateResponse, *Failure) {
	resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	out, fail := s.step(req.SASLAuthBytes)
	if fail != nil {
		resp.ErrorCode = codeSaslAuthenticationFailed
		msg := fail.Err.ClientMessage(s.mechanism, s.reauth)
		resp.ErrorMessage = &msg
		return resp, fail
	}
	resp.SASLAuthBytes = out
	if s.state == StateAuthenticated && req.Version >= 1 {
		resp.SessionLifetimeMillis = s.lifetimeMillis()
	}
	return resp, nil
}

// Token handles one raw SASL token after SaslHandshake v0. The reply is
// written as a size-prefixed frame; on failure Kafka just closes.
func (s *Session) Token(in []byte) ([]byte, *Failure) { return s.step(in) }

func (s *Session) step(in []byte) ([]byte, *Failure) {
	if s.state != StateAuthenticate {
		s.state = StateFailed
		return nil, &Failure{Mechanism: s.mechanism, Err: sasl.Fail("SaslAuthenticate in state %s", s.state)}
	}
	out, err := s.conv.Step(in)
	if err != nil {
		s.state = StateFailed
		return nil, &Failure{Mechanism: s.mechanism, Err: err}
	}
	if s.conv.State() == sasl.StateComplete {
		if f := s.complete(s.conv.Outcome()); f != nil {
			return nil, f
		}
	}
	return out, nil
}

func (s *Session) complete(o sasl.Outcome) *Failure {
	p := s.cfg.Principals.FromSASL(o.AuthorizationID)
	if s.reauth && p != s.principal {
		s.state = StateFailed
		msg := fmt.Sprintf("Cannot change principals during re-authentication from %s.%s: %s.%s", s.principal.Type, s.principal.Name, p.Type, p.Name)
		return &Failure{Mechanism: s.mechanism, Err: sasl.FailPublic(msg, "re-authentication as another principal")}
	}
	now := s.cfg.Now()
	lifetime, expires := sasl.SessionLifetime(now, s.cfg.MaxReauth, o.Expiry)
	s.expires = time.Time{}
	if expires {
		s.expires = now.Add(lifetime)
	}
	s.principal, s.state, s.conv, s.rawTokens = p, StateAuthenticated, nil, false
	return nil
}

func (s *Session) lifetimeMillis() int64 {
	if s.expires.IsZero() {
		return 0
	}
	return max(s.expires.Sub(s.cfg.Now()).Milliseconds(), 0)
}

package oauthbearer

import (
	"errors"
	"fmt"

	"github.com/kbroker/kbroker/security/sasl"
)

// Mechanism is the OAUTHBEARER server (Kafka's OAuthBearerSaslServer).
type Mechanism struct {
	v       Validator
	grammar grammar
}

// New returns OAUTHBEARER validating tokens with v.
func New(v Validator) *Mechanism { return &Mechanism{v: v, grammar: newGrammar()} }

func (*Mechanism) Name() string { return sasl.OAuthBearer }

// MaxSteps allows the initial response, the client's %x01 after an error
// challenge, and one retry with another token (Kafka allows any number).
func (*Mechanism) MaxSteps() int { return 4 }

// Start begins one exchange.
func (m *Mechanism) Start() sasl.Exchange { return &exchange{m: m} }

type exchange struct {
	m       *Mechanism
	pending *TokenError // the error challenge sent, awaiting the client's %x01
	outcome sasl.Outcome
}

func (e *exchange) Outcome() sasl.Outcome { return e.outcome }

// Step is OAuthBearerSaslServer.evaluateResponse. A token the validator
// refuses is answered with RFC 7628's error challenge
// ({"status":"invalid_token"}); the client replies %x01 and the exchange
// fails with that JSON as the message the client sees.
func (e *exchange) Step(in []byte) ([]byte, bool, error) {
	if len(in) == 1 && in[0] == 0x01 && e.pending != nil {
		return nil, false, sasl.FailPublic(e.pending.challenge(), "OAUTHBEARER: "+e.pending.Reason)
	}
	e.pending = nil
	resp, reason, ok := e.m.grammar.parse(in)
	if !ok {
		return nil, false, sasl.Fail("OAUTHBEARER: %s", reason)
	}
	tok, err := e.m.v.Validate(resp.Token)
	if err != nil {
		var terr *TokenError
		if !errors.As(err, &terr) {
			terr = invalidToken("%v", err)
		}
		e.pending = terr
		return []byte(terr.challenge()), false, nil
	}
	if resp.AuthorizationID != "" && resp.AuthorizationID != tok.Principal {
		return nil, false, sasl.FailPublic(
			fmt.Sprintf("Authentication failed: Client requested an authorization id (%s) that is different from the token's principal name (%s)",
				resp.AuthorizationID, tok.Principal),
			"OAUTHBEARER: authorization id differs from the token's principal")
	}
	// Extensions are ignored unless a validator accepts them, as Kafka's
	// default handlers do.
	e.outcome = sasl.Outcome{AuthorizationID: tok.Principal, Expiry: tok.Expiry}
	return []byte{}, true, nil
}

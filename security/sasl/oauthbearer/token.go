package oauthbearer

import (
	"fmt"
	"strings"
	"time"
)

// Token is a validated bearer token (Kafka's OAuthBearerToken).
type Token struct {
	Principal string
	Scope     []string
	Expiry    time.Time
	IssuedAt  time.Time // zero when the token has no iat
}

// Validator validates bearer tokens: the unsecured JWS validator for
// development, or the JWT validator against a JWKS.
type Validator interface {
	Validate(token string) (Token, error)
}

// TokenError is a token the validator refused. Status and Scope go to the
// client in the RFC 7628 error challenge; Reason is for the log and never
// holds the token.
type TokenError struct {
	Status string // "invalid_token" or "insufficient_scope"
	Scope  string // the missing scope, for insufficient_scope
	Reason string
}

func (e *TokenError) Error() string { return "oauthbearer: " + e.Reason }

func invalidToken(format string, args ...any) *TokenError {
	return &TokenError{Status: "invalid_token", Reason: fmt.Sprintf(format, args...)}
}

// challenge is OAuthBearerSaslServer.jsonErrorResponse.
func (e *TokenError) challenge() string {
	s := `{"status":"` + e.Status + `"`
	if e.Scope != "" {
		s += `, "scope":"` + e.Scope + `"`
	}
	return s + "}"
}

// checkTimes applies Kafka's OAuthBearerValidationUtils to exp and iat:
// exp is required and may be passed by at most skew; iat, when present,
// may be ahead of now by at most skew, and exp must follow it.
func checkTimes(now time.Time, exp, iat time.Time, skew time.Duration) *TokenError {
	if exp.IsZero() {
		return invalidToken("no expiration time in the token")
	}
	if now.After(exp.Add(skew)) {
		return invalidToken("the token expired at %s (now %s, allowed clock skew %s)", exp.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339), skew)
	}
	if !iat.IsZero() && now.Add(skew).Before(iat) {
		return invalidToken("the token was issued in the future, at %s", iat.UTC().Format(time.RFC3339))
	}
	if !iat.IsZero() && !exp.After(iat) {
		return invalidToken("the token's expiration time is not after its issue time")
	}
	return nil
}

// checkScope is OAuthBearerValidationUtils.validateScope.
func checkScope(have, required []string) *TokenError {
	for _, r := range required {
		found := false
		for _, h := range have {
			found = found || h == r
		}
		if !found {
			return &TokenError{Status: "insufficient_scope", Scope: r,
				Reason: fmt.Sprintf("the token's scope %v lacks the required scope %q (all required: %v)", have, r, required)}
		}
	}
	return nil
}

// scopeClaim reads a scope claim as Kafka does: a string is one scope
// (trimmed; blank is none), a list of strings is the scopes.
func scopeClaim(v any) ([]string, bool) {
	switch s := v.(type) {
	case nil:
		return nil, true
	case string:
		if s = strings.TrimSpace(s); s == "" {
			return nil, true
		}
		return []string{s}, true
	case []any:
		out := make([]string, 0, len(s))
		for _, e := range s {
			str, ok := e.(string)
			if !ok {
				return nil, false
			}
			out = append(out, str)
		}
		return out, true
	}
	return nil, false
}

// secondsClaim reads a NumericDate claim (seconds, maybe fractional) as
// Kafka does: rounded to the millisecond.
func secondsClaim(v any) (time.Time, bool) {
	f, ok := v.(float64)
	if !ok {
		return time.Time{}, v == nil
	}
	return time.UnixMilli(int64(f*1000 + 0.5)), true
}

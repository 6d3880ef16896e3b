package oauthbearer

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Unsecured is Kafka's OAuthBearerUnsecuredValidatorCallbackHandler: it
// accepts unsigned JWS tokens (alg "none", empty signature), for
// development only. Its options are the JAAS options of
// listener.name.<l>.oauthbearer.sasl.jaas.config.
type Unsecured struct {
	PrincipalClaim string        // unsecuredValidatorPrincipalClaimName, default "sub"
	ScopeClaim     string        // unsecuredValidatorScopeClaimName, default "scope"
	RequiredScope  []string      // unsecuredValidatorRequiredScope, space-separated
	ClockSkew      time.Duration // unsecuredValidatorAllowableClockSkewMs, default 0
	Now            func() time.Time
}

// UnsecuredFromJAAS reads the unsecuredValidator* JAAS options.
func UnsecuredFromJAAS(options map[string]string, now func() time.Time) (*Unsecured, error) {
	u := &Unsecured{PrincipalClaim: "sub", ScopeClaim: "scope", Now: now}
	if v := strings.TrimSpace(options["unsecuredValidatorPrincipalClaimName"]); v != "" {
		u.PrincipalClaim = v
	}
	if v := strings.TrimSpace(options["unsecuredValidatorScopeClaimName"]); v != "" {
		u.ScopeClaim = v
	}
	u.RequiredScope = strings.Fields(options["unsecuredValidatorRequiredScope"])
	if v, ok := options["unsecuredValidatorAllowableClockSkewMs"]; ok {
		ms, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || ms < 0 {
			return nil, fmt.Errorf("oauthbearer: unsecuredValidatorAllowableClockSkewMs %q is not a non-negative integer", v)
		}
		u.ClockSkew = time.Duration(ms) * time.Millisecond
	}
	if u.Now == nil {
		u.Now = time.Now
	}
	return u, nil
}

// Validate implements Validator.
func (u *Unsecured) Validate(token string) (Token, error) {
	claims, err := unsecuredClaims(token)
	if err != nil {
		return Token{}, err
	}
	name, ok := claims[u.PrincipalClaim].(string)
	if !ok || strings.TrimSpace(name) == "" {
		return Token{}, invalidToken("the token has no string claim %q for the principal", u.PrincipalClaim)
	}
	exp, okExp := secondsClaim(claims["exp"])
	iat, okIat := secondsClaim(claims["iat"])
	scope, okScope := scopeClaim(claims[u.ScopeClaim])
	if !okExp || !okIat || !okScope {
		return Token{}, invalidToken("the token's exp, iat or %q claim has the wrong type", u.ScopeClaim)
	}
	if terr := checkTimes(u.Now(), exp, iat, u.ClockSkew); terr != nil {
		return Token{}, terr
	}
	if terr := checkScope(scope, u.RequiredScope); terr != nil {
		return Token{}, terr
	}
	return Token{Principal: name, Scope: scope, Expiry: exp, IssuedAt: iat}, nil
}

// unsecuredClaims decodes header.claims. (empty signature) and checks the
// header says alg "none".
func unsecuredClaims(token string) (map[string]any, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 || parts[2] != "" {
		return nil, invalidToken("an unsecured JWS has three dot-separated parts and an empty signature")
	}
	var header, claims map[string]any
	if err := decodePart(parts[0], &header); err != nil {
		return nil, invalidToken("the JOSE header is not base64url JSON")
	}
	if alg, _ := header["alg"].(string); alg != "none" {
		return nil, invalidToken("an unsecured JWS must have alg \"none\"")
	}
	if err := decodePart(parts[1], &claims); err != nil {
		return nil, invalidToken("the claims are not base64url JSON")
	}
	return claims, nil
}

func decodePart(s string, v any) error {
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

package oauthbearer

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// JWTConfig is Kafka's broker-side OAuthBearerValidatorCallbackHandler
// configuration (KIP-768).
type JWTConfig struct {
	ExpectedAudience []string      // sasl.oauthbearer.expected.audience (any one must match)
	ExpectedIssuer   string        // sasl.oauthbearer.expected.issuer
	SubClaim         string        // sasl.oauthbearer.sub.claim.name, default "sub"
	ScopeClaim       string        // sasl.oauthbearer.scope.claim.name, default "scope"
	ClockSkew        time.Duration // sasl.oauthbearer.clock.skew.seconds, default 30 s
	Now              func() time.Time
}

// signingMethods are the JWS algorithms accepted (never "none" or HMAC:
// a JWKS holds public keys).
var signingMethods = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}

// JWT validates signed JWTs against a KeySource: signature, exp and iat
// required (exp with clock skew), nbf if present, issuer and audience when
// configured, a non-blank subject claim, and the scope claim.
type JWT struct {
	cfg  JWTConfig
	keys *KeySource
}

// NewJWT returns a validator over keys.
func NewJWT(cfg JWTConfig, keys *KeySource) *JWT {
	if cfg.SubClaim == "" {
		cfg.SubClaim = "sub"
	}
	if cfg.ScopeClaim == "" {
		cfg.ScopeClaim = "scope"
	}
	if cfg.ClockSkew == 0 {
		cfg.ClockSkew = 30 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &JWT{cfg: cfg, keys: keys}
}

// Validate implements Validator.
func (v *JWT) Validate(token string) (Token, error) {
	opts := []jwt.ParserOption{
		jwt.WithValidMethods(signingMethods),
		jwt.WithLeeway(v.cfg.ClockSkew),
		jwt.WithTimeFunc(v.cfg.Now),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
	}
	if v.cfg.ExpectedIssuer != "" {
		opts = append(opts, jwt.WithIssuer(v.cfg.ExpectedIssuer))
	}
	if len(v.cfg.ExpectedAudience) > 0 {
		opts = append(opts, jwt.WithAudience(v.cfg.ExpectedAudience...))
	}
	claims := jwt.MapClaims{}
	_, err := jwt.NewParser(opts...).ParseWithClaims(token, claims, v.keyFunc)
	if err != nil {
		return Token{}, invalidToken("JWT refused: %s", describeJWTError(err))
	}
	return v.token(claims)
}

func (v *JWT) keyFunc(t *jwt.Token) (any, error) {
	kid, _ := t.Header["kid"].(string)
	return v.keys.Key(context.Background(), kid, t.Method.Alg())
}

func (v *JWT) token(claims jwt.MapClaims) (Token, error) {
	sub, _ := claims[v.cfg.SubClaim].(string)
	if strings.TrimSpace(sub) == "" {
		return Token{}, invalidToken("the JWT has no non-blank %q claim", v.cfg.SubClaim)
	}
	exp, _ := claims.GetExpirationTime()
	iat, _ := claims.GetIssuedAt()
	if iat == nil {
		return Token{}, invalidToken("the JWT has no iat claim")
	}
	scope, ok := scopeClaim(claims[v.cfg.ScopeClaim])
	if !ok {
		return Token{}, invalidToken("the JWT's %q claim is neither a string nor a list of strings", v.cfg.ScopeClaim)
	}
	return Token{Principal: strings.TrimSpace(sub), Scope: scope, Expiry: exp.Time, IssuedAt: iat.Time}, nil
}

// describeJWTError names the failed check without the token's content.
func describeJWTError(err error) string {
	for _, c := range []struct {
		target error
		text   string
	}{
		{jwt.ErrTokenMalformed, "malformed"},
		{jwt.ErrTokenUnverifiable, "no key to verify it"},
		{jwt.ErrTokenSignatureInvalid, "bad signature"},
		{jwt.ErrTokenExpired, "expired"},
		{jwt.ErrTokenUsedBeforeIssued, "issued in the future"},
		{jwt.ErrTokenNotValidYet, "not valid yet (nbf)"},
		{jwt.ErrTokenRequiredClaimMissing, "a required claim (exp) is missing"},
		{jwt.ErrTokenInvalidIssuer, "unexpected issuer"},
		{jwt.ErrTokenInvalidAudience, "unexpected audience"},
		{jwt.ErrTokenInvalidClaims, "invalid claims"},
	} {
		if errors.Is(err, c.target) {
			return c.text
		}
	}
	return "invalid"
}

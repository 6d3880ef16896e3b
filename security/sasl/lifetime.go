package sasl

import "time"

// SessionLifetime is KIP-368's session lifetime for a connection that
// authenticated at now: the shorter of connections.max.reauth.ms (maxReauth,
// 0 = not set) and the time left on the credential (expiry, zero = none),
// never negative. expires is false when neither bounds the session. The
// lifetime is what SaslAuthenticate v1+ returns as SessionLifetimeMs (0
// when it does not expire), and an expiring connection must
// re-authenticate by now + lifetime or be closed. It matches
// SaslServerAuthenticator.calcCompletionTimesAndReturnSessionLifetimeMs:
// a token accepted within the clock skew after its exp gets lifetime 0,
// an already expired session.
func SessionLifetime(now time.Time, maxReauth time.Duration, expiry time.Time) (lifetime time.Duration, expires bool) {
	hasExpiry := !expiry.IsZero()
	switch {
	case !hasExpiry && maxReauth <= 0:
		return 0, false
	case !hasExpiry:
		return maxReauth, true
	}
	left := max(expiry.Sub(now), 0)
	if maxReauth > 0 {
		return min(left, maxReauth), true
	}
	return left, true
}

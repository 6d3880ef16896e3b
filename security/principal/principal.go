package principal

import (
	"crypto/tls"
	"errors"
	"fmt"
	"strings"
)

// UserType is Kafka's KafkaPrincipal.USER_TYPE.
const UserType = "User"

// AnonymousName is the name of the principal of unauthenticated connections.
const AnonymousName = "ANONYMOUS"

// Principal is Kafka's KafkaPrincipal: a type and a name.
type Principal struct {
	Type string
	Name string
}

// User returns the principal User:name.
func User(name string) Principal { return Principal{Type: UserType, Name: name} }

// Anonymous returns User:ANONYMOUS.
func Anonymous() Principal { return User(AnonymousName) }

// String is Kafka's form, "Type:Name".
func (p Principal) String() string { return p.Type + ":" + p.Name }

// IsAnonymous reports whether p is User:ANONYMOUS.
func (p Principal) IsAnonymous() bool { return p == Anonymous() }

// ErrNoColon is returned by Parse for a string without a type.
var ErrNoColon = errors.New("principal: no colon separates the principal type from the name")

// Parse reads "Type:Name" as Kafka's SecurityUtils.parseKafkaPrincipal
// does: the type is everything before the first colon, the name everything
// after it (names may contain colons).
func Parse(s string) (Principal, error) {
	typ, name, ok := strings.Cut(s, ":")
	if !ok {
		return Principal{}, fmt.Errorf("could not parse principal from %q: %w", s, ErrNoColon)
	}
	return Principal{Type: typ, Name: name}, nil
}

// Builder derives the principal of a connection once it is authenticated.
// The zero Builder maps certificates with the DEFAULT rule.
type Builder struct {
	// SSL maps certificate subjects to names; nil means DEFAULT.
	SSL *SSLMapper
}

// FromSASL is the principal of a SASL connection: User:<authorization id>.
func (Builder) FromSASL(authorizationID string) Principal { return User(authorizationID) }

// FromTLS is the principal of an SSL connection: ANONYMOUS without a client
// certificate, else the mapped subject of the leaf certificate. An error
// (no mapping rule applies) fails the connection, as in Kafka.
func (b Builder) FromTLS(state *tls.ConnectionState) (Principal, error) {
	if state == nil || len(state.PeerCertificates) == 0 {
		return Anonymous(), nil
	}
	dn, err := DistinguishedName(state.PeerCertificates[0].RawSubject)
	if err != nil {
		return Principal{}, err
	}
	name, err := b.SSL.Name(dn)
	if err != nil {
		return Principal{}, err
	}
	return User(name), nil
}

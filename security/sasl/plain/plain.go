// Package plain is the server side of SASL/PLAIN (RFC 4616) as Kafka's
// PlainSaslServer implements it, with users from the listener's JAAS
// configuration (PlainServerCallbackHandler: options user_<name>="<password>").
//
// The client's single message is authzid NUL authcid NUL password. Kafka's
// replies on failure are kept word for word, since Kafka sends them to the
// client (SaslAuthenticationException); none of them holds the password.
package plain

import (
	"bytes"
	"crypto/subtle"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/kbroker/kbroker/security/jaas"
	"github.com/kbroker/kbroker/security/sasl"
)

// UserPrefix is the JAAS option prefix of a PLAIN user's password.
const UserPrefix = "user_"

// Users checks passwords.
type Users interface {
	// Check reports whether password is the user's, in time independent of
	// where a wrong password differs.
	Check(user, password string) bool
}

// StaticUsers are users from a JAAS configuration: name -> password.
type StaticUsers map[string]string

// Check compares in constant time (Kafka's Utils.isEqualConstantTime);
// an unknown user costs a comparison too.
func (u StaticUsers) Check(user, password string) bool {
	want, ok := u[user]
	if !ok {
		subtle.ConstantTimeCompare([]byte(password), []byte(password))
		return false
	}
	return subtle.ConstantTimeCompare([]byte(want), []byte(password)) == 1
}

// Config is what a listener's PlainLoginModule entry says.
type Config struct {
	Users StaticUsers
	// Username and Password are the broker's own credentials, used by its
	// clients on this listener (inter-broker).
	Username, Password string
}

// ParseJAAS reads listener.name.<l>.plain.sasl.jaas.config.
func ParseJAAS(value string) (Config, error) {
	cfg, err := jaas.Parse(value)
	if err != nil {
		return Config{}, err
	}
	e, err := cfg.Module(jaas.PlainLoginModule)
	if err != nil {
		return Config{}, err
	}
	out := Config{Users: StaticUsers{}, Username: e.Options["username"], Password: e.Options["password"]}
	for k, v := range e.Options {
		if name, ok := strings.CutPrefix(k, UserPrefix); ok {
			out.Users[name] = v
		}
	}
	return out, nil
}

// Mechanism is the PLAIN server mechanism.
type Mechanism struct{ users Users }

// New returns PLAIN checking passwords with users.
func New(users Users) *Mechanism { return &Mechanism{users: users} }

func (*Mechanism) Name() string  { return sasl.Plain }
func (*Mechanism) MaxSteps() int { return 1 }

// Start begins one exchange.
func (m *Mechanism) Start() sasl.Exchange { return &exchange{users: m.users} }

type exchange struct {
	users   Users
	authzID string
}

func (e *exchange) Outcome() sasl.Outcome { return sasl.Outcome{AuthorizationID: e.authzID} }

// Step is PlainSaslServer.evaluateResponse.
func (e *exchange) Step(in []byte) ([]byte, bool, error) {
	authzID, user, password, err := ParseMessage(in)
	if err != nil {
		return nil, false, err
	}
	switch {
	case user == "":
		return nil, false, sasl.FailPublic("Authentication failed: username not specified", "PLAIN: empty username")
	case password == "":
		return nil, false, sasl.FailPublic("Authentication failed: password not specified", "PLAIN: empty password for user "+user)
	case !e.users.Check(user, password):
		return nil, false, sasl.FailPublic("Authentication failed: Invalid username or password", "PLAIN: wrong password or unknown user "+user)
	case authzID != "" && authzID != user:
		return nil, false, sasl.FailPublic("Authentication failed: Client requested an authorization id that is different from username",
			"PLAIN: user "+user+" asked to act as "+authzID)
	}
	e.authzID = user
	return []byte{}, true, nil
}

// ParseMessage splits a PLAIN message as Kafka's extractTokens does: it
// must hold exactly three NUL-separated fields.
func ParseMessage(in []byte) (authzID, user, password string, err error) {
	parts := bytes.SplitN(in, []byte{0}, 4)
	if len(parts) != 3 {
		n := len(parts)
		return "", "", "", sasl.FailPublic(fmt.Sprintf("Invalid SASL/PLAIN response: expected 3 tokens, got %d", n),
			fmt.Sprintf("PLAIN: %d fields", n))
	}
	for _, p := range parts {
		if !utf8.Valid(p) {
			// Java decodes with replacement characters, which can then match
			// nothing; refusing is the same outcome.
			return "", "", "", sasl.FailPublic("Authentication failed: Invalid username or password", "PLAIN: message is not UTF-8")
		}
	}
	return string(parts[0]), string(parts[1]), string(parts[2]), nil
}

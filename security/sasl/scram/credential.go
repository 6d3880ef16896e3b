package scram

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/sha256"
	"crypto/sha512"
	"fmt"
	"hash"
	"io"

	xscram "github.com/xdg-go/scram"

	"github.com/kbroker/kbroker/security/sasl"
)

// Mechanism is a SCRAM mechanism, with Kafka's ScramMechanism type codes
// (AlterUserScramCredentials and the metadata records carry them).
type Mechanism int8

const (
	Unknown Mechanism = 0
	SHA256  Mechanism = 1
	SHA512  Mechanism = 2
)

// Iteration bounds: Kafka's ScramMechanism.minIterations and
// ScramControlManager.MAX_ITERATIONS.
const (
	MinIterations = 4096
	MaxIterations = 16384
)

// MechanismFromCode maps a type code; unknown codes are Unknown.
func MechanismFromCode(c int8) Mechanism {
	if c == int8(SHA256) || c == int8(SHA512) {
		return Mechanism(c)
	}
	return Unknown
}

// MechanismFromName maps SCRAM-SHA-256 and SCRAM-SHA-512.
func MechanismFromName(name string) (Mechanism, bool) {
	switch name {
	case sasl.ScramSHA256:
		return SHA256, true
	case sasl.ScramSHA512:
		return SHA512, true
	}
	return Unknown, false
}

// Name is the SASL mechanism name.
func (m Mechanism) Name() string {
	switch m {
	case SHA256:
		return sasl.ScramSHA256
	case SHA512:
		return sasl.ScramSHA512
	}
	return "UNKNOWN"
}

func (m Mechanism) String() string { return m.Name() }

func (m Mechanism) hash() func() hash.Hash {
	if m == SHA512 {
		return sha512.New
	}
	return sha256.New
}

func (m Mechanism) xdg() xscram.HashGeneratorFcn {
	if m == SHA512 {
		return xscram.SHA512
	}
	return xscram.SHA256
}

// Credential is Kafka's ScramCredential: what the broker stores for a user
// and mechanism. The password and the salted password are not kept.
type Credential struct {
	Salt       []byte
	Iterations int
	StoredKey  []byte
	ServerKey  []byte
}

// String hides the secrets, as Kafka's ScramCredentialValue.toString does.
func (c Credential) String() string {
	return "ScramCredential(salt=[hidden], storedKey=[hidden], serverKey=[hidden], iterations=[hidden])"
}

// GoString hides them from %#v too.
func (c Credential) GoString() string { return c.String() }

// SaltedPassword is RFC 5802's Hi(password, salt, i): PBKDF2 with the
// mechanism's HMAC. Like Kafka (ScramFormatter.normalize), the password is
// used as UTF-8 bytes without SASLprep.
func SaltedPassword(m Mechanism, password string, salt []byte, iterations int) ([]byte, error) {
	if m == Unknown {
		return nil, fmt.Errorf("scram: unknown mechanism")
	}
	return pbkdf2.Key(m.hash(), password, salt, iterations, m.hash()().Size())
}

// FromSaltedPassword derives the stored credential from a salted password,
// as the controller does for AlterUserScramCredentials upsertions (the
// client sends salt and salted password, never the password):
// StoredKey = H(HMAC(salted, "Client Key")), ServerKey = HMAC(salted, "Server Key").
func FromSaltedPassword(m Mechanism, salt, salted []byte, iterations int) Credential {
	clientKey := mac(m, salted, "Client Key")
	h := m.hash()()
	h.Write(clientKey)
	return Credential{
		Salt:       append([]byte(nil), salt...),
		Iterations: iterations,
		StoredKey:  h.Sum(nil),
		ServerKey:  mac(m, salted, "Server Key"),
	}
}

func mac(m Mechanism, key []byte, msg string) []byte {
	h := hmac.New(m.hash(), key)
	h.Write([]byte(msg))
	return h.Sum(nil)
}

// NewCredential makes a credential from a password.
func NewCredential(m Mechanism, password string, salt []byte, iterations int) (Credential, error) {
	if iterations < MinIterations || iterations > MaxIterations {
		return Credential{}, fmt.Errorf("scram: iterations %d outside [%d, %d]", iterations, MinIterations, MaxIterations)
	}
	salted, err := SaltedPassword(m, password, salt, iterations)
	if err != nil {
		return Credential{}, err
	}
	return FromSaltedPassword(m, salt, salted, iterations), nil
}

// NewSalt returns 32 random bytes from r (crypto/rand.Reader in
// production).
func NewSalt(r io.Reader) ([]byte, error) {
	salt := make([]byte, 32)
	if _, err := io.ReadFull(r, salt); err != nil {
		return nil, fmt.Errorf("scram: reading a salt: %w", err)
	}
	return salt, nil
}

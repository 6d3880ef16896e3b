package scram

import (
	"regexp"
	"strings"

	xscram "github.com/xdg-go/scram"

	"github.com/kbroker/kbroker/security/sasl"
)

// Kafka's ScramMessages grammar (Java's [a&&[^b]] classes written out).
// Names, nonces and values are ASCII: Kafka refuses anything else.
const (
	saslName   = `(?:[\x01-\x2B\x2D-\x3C\x3E-\x7F]|=2C|=3D)+`
	value      = `[\x01-\x2B\x2D-\x7F]+`
	printable  = `[\x21-\x2B\x2D-\x7E]+`
	base64Re   = `(?:[a-zA-Z0-9/+]{4})*(?:[a-zA-Z0-9/+]{3}=|[a-zA-Z0-9/+]{2}==)?`
	extensions = `(?:,[A-Za-z]+=` + value + `)*`
)

// Parsers holds the compiled grammar; one per Server, shared by its
// exchanges (regexp.Regexp is safe for concurrent use).
type parsers struct {
	clientFirst *regexp.Regexp
	clientFinal *regexp.Regexp
}

func newParsers() parsers {
	return parsers{
		clientFirst: regexp.MustCompile(`^n,(?:a=(` + saslName + `))?,(?:m=` + value + `,)?n=(` + saslName + `),r=(` + printable + `)(` + extensions + `)$`),
		clientFinal: regexp.MustCompile(`^c=` + base64Re + `,r=` + printable + extensions + `,p=` + base64Re + `$`),
	}
}

// ClientFirst is a parsed client-first-message.
type ClientFirst struct {
	AuthorizationID string // as sent (Kafka compares it undecoded)
	User            string // decoded: =2C is ',', =3D is '='
	Nonce           string
	Extensions      map[string]string
}

// TokenAuth reports the tokenauth extension: the client authenticates
// with a delegation token.
func (c ClientFirst) TokenAuth() bool { return strings.EqualFold(c.Extensions["tokenauth"], "true") }

// ParseClientFirst parses a client-first-message with Kafka's grammar:
// gs2 header "n" only (no channel binding), optional authzid, the reserved
// m= field, name, nonce and extensions.
func (p parsers) ParseClientFirst(msg []byte) (ClientFirst, bool) {
	m := p.clientFirst.FindSubmatch(msg)
	if m == nil {
		return ClientFirst{}, false
	}
	c := ClientFirst{
		AuthorizationID: string(m[1]),
		User:            strings.NewReplacer("=2C", ",", "=3D", "=").Replace(string(m[2])),
		Nonce:           string(m[3]),
		Extensions:      map[string]string{},
	}
	for kv := range strings.SplitSeq(strings.TrimPrefix(string(m[4]), ","), ",") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			c.Extensions[k] = v
		}
	}
	return c, true
}

// Server is the server side of SCRAM-SHA-256 or SCRAM-SHA-512 (RFC 5802,
// RFC 7677) as Kafka's ScramSaslServer: two client messages, credentials
// from a Store, delegation tokens (tokenauth=true) refused since kbroker
// has none. github.com/xdg-go/scram answers the client-first message; the
// client-final message is checked as Kafka checks it (final.go), because
// xdg-go wants the nonce exactly while Kafka accepts one that ends with the
// server's: librdkafka up to 2.x puts its own nonce in front again.
type Server struct {
	mech    Mechanism
	store   Store
	nonce   func() string
	parsers parsers
}

// Options tune a Server.
type Options struct {
	// Nonce returns the server's part of the nonce; nil uses xdg-go/scram's
	// crypto/rand generator. Tests inject fixed nonces.
	Nonce func() string
}

// NewServer returns the server mechanism m over store.
func NewServer(m Mechanism, store Store, opts Options) *Server {
	return &Server{mech: m, store: store, nonce: opts.Nonce, parsers: newParsers()}
}

func (s *Server) Name() string  { return s.mech.Name() }
func (s *Server) MaxSteps() int { return 2 }

// Start begins one exchange.
func (s *Server) Start() sasl.Exchange { return &exchange{srv: s} }

type exchange struct {
	srv  *Server
	conv *xscram.ServerConversation
	user string
	// What the final check needs from the first round.
	cred        Credential
	gs2Header   string // "n,," or "n,a=<authzid>,"
	clientFirst string // client-first-message-bare
	serverFirst string
	nonce       string // the server-first-message's r: client + server nonce
}

func (e *exchange) Outcome() sasl.Outcome { return sasl.Outcome{AuthorizationID: e.user} }

func (e *exchange) Step(in []byte) ([]byte, bool, error) {
	if e.conv == nil {
		out, err := e.first(in)
		return out, false, err
	}
	return e.final(in)
}

// first is ScramSaslServer's RECEIVE_CLIENT_FIRST_MESSAGE state. Only the
// authzid mismatch is told to the client (a SaslAuthenticationException in
// Kafka); everything else gets the generic message, so that the reply does
// not say whether the user exists.
func (e *exchange) first(in []byte) ([]byte, error) {
	name := e.srv.mech.Name()
	cf, ok := e.srv.parsers.ParseClientFirst(in)
	if !ok {
		return nil, sasl.Fail("%s: invalid client first message format", name)
	}
	if cf.TokenAuth() {
		return nil, sasl.Fail("%s: token authentication failed: delegation tokens are not supported (token id %q)", name, cf.User)
	}
	cred, ok := e.srv.store.Credential(e.srv.mech, cf.User)
	if !ok {
		return nil, sasl.Fail("%s: no credential for user %q", name, cf.User)
	}
	if cf.AuthorizationID != "" && cf.AuthorizationID != cf.User {
		return nil, sasl.FailPublic("Authentication failed: Client requested an authorization id that is different from username",
			name+": user "+cf.User+" asked to act as "+cf.AuthorizationID)
	}
	if cred.Iterations < MinIterations {
		return nil, sasl.Fail("%s: stored credential of %q has %d iterations, below the minimum %d", name, cf.User, cred.Iterations, MinIterations)
	}
	lookup := func(string) (xscram.StoredCredentials, error) {
		return xscram.StoredCredentials{
			KeyFactors: xscram.KeyFactors{Salt: string(cred.Salt), Iters: cred.Iterations},
			StoredKey:  cred.StoredKey,
			ServerKey:  cred.ServerKey,
		}, nil
	}
	srv, err := e.srv.mech.xdg().NewServer(lookup)
	if err != nil {
		return nil, sasl.Fail("%s: %v", name, err)
	}
	if e.srv.nonce != nil {
		srv = srv.WithNonceGenerator(e.srv.nonce)
	}
	e.conv = srv.NewConversation()
	out, err := e.conv.Step(string(in))
	if err != nil {
		return nil, sasl.Fail("%s: client first message of %q refused", name, cf.User)
	}
	e.user, e.cred = cf.User, cred
	e.gs2Header, e.clientFirst = splitGS2(string(in))
	e.serverFirst = out
	e.nonce = attribute(out, 'r')
	return []byte(out), nil
}

// final is RECEIVE_CLIENT_FINAL_MESSAGE: check the nonce and the proof,
// answer with the server signature.
func (e *exchange) final(in []byte) ([]byte, bool, error) {
	name := e.srv.mech.Name()
	if !e.srv.parsers.clientFinal.Match(in) {
		return nil, false, sasl.Fail("%s: invalid client final message format from %q", name, e.user)
	}
	out, err := e.verifyFinal(string(in))
	if err != nil {
		// Never the proof or keys: "wrong password" is all the log learns.
		return nil, false, sasl.Fail("%s: invalid client credentials for %q (%v)", name, e.user, err)
	}
	return []byte(out), true, nil
}

package oauthbearer

import (
	"regexp"
	"strings"
)

// Kafka's OAuthBearerClientInitialResponse grammar (RFC 7628 section 3.1):
//
//	n,[a=authzid],\x01key=value\x01...auth=Bearer <token>\x01...\x01
const (
	separator = "\x01"
	saslName  = `(?:[\x01-\x2B\x2D-\x3C\x3E-\x7F]|=2C|=3D)+`
	kvKey     = `[A-Za-z]+`
	kvValue   = `[\x21-\x7E \t\r\n]+`
)

type grammar struct {
	message *regexp.Regexp
	auth    *regexp.Regexp
}

func newGrammar() grammar {
	kvPairs := `(?:` + kvKey + `=` + kvValue + separator + `)*`
	return grammar{
		message: regexp.MustCompile(`^n,(?:a=(` + saslName + `))?,` + separator + `(` + kvPairs + `)` + separator + `$`),
		auth:    regexp.MustCompile(`^([a-zA-Z0-9_]+) +([-_.a-zA-Z0-9]+)$`),
	}
}

// ClientResponse is a parsed client initial response.
type ClientResponse struct {
	AuthorizationID string
	Token           string
	// Extensions are the key=value pairs other than auth (KIP-342).
	Extensions map[string]string
}

// parse reads a client initial response; the reason never holds the token.
func (g grammar) parse(in []byte) (ClientResponse, string, bool) {
	m := g.message.FindSubmatch(in)
	if m == nil {
		return ClientResponse{}, "invalid OAUTHBEARER client first message", false
	}
	props := map[string]string{}
	for kv := range strings.SplitSeq(string(m[2]), separator) {
		if k, v, ok := strings.Cut(kv, "="); ok {
			props[k] = v
		}
	}
	auth, ok := props["auth"]
	if !ok {
		return ClientResponse{}, "invalid OAUTHBEARER client first message: 'auth' not specified", false
	}
	delete(props, "auth")
	a := g.auth.FindStringSubmatch(auth)
	if a == nil {
		return ClientResponse{}, "invalid OAUTHBEARER client first message: invalid 'auth' format", false
	}
	if !strings.EqualFold(a[1], "bearer") {
		return ClientResponse{}, "invalid scheme in OAUTHBEARER client first message: " + a[1], false
	}
	return ClientResponse{AuthorizationID: string(m[1]), Token: a[2], Extensions: props}, "", true
}

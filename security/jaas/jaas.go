package jaas

import (
	"errors"
	"fmt"
	"strings"
)

// Flag is a JAAS login module control flag.
type Flag string

const (
	Required   Flag = "REQUIRED"
	Requisite  Flag = "REQUISITE"
	Sufficient Flag = "SUFFICIENT"
	Optional   Flag = "OPTIONAL"
)

// Entry is one login module with its options (AppConfigurationEntry).
type Entry struct {
	LoginModule string
	Flag        Flag
	Options     map[string]string
}

// Config is a parsed sasl.jaas.config.
type Config []Entry

// Kafka's login module classes.
const (
	PlainLoginModule       = "org.apache.kafka.common.security.plain.PlainLoginModule"
	ScramLoginModule       = "org.apache.kafka.common.security.scram.ScramLoginModule"
	OAuthBearerLoginModule = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
)

// ErrEmpty is returned for a value with no login module.
var ErrEmpty = errors.New("jaas: login module not specified in JAAS config")

// Parse parses a sasl.jaas.config value.
func Parse(s string) (Config, error) {
	t := newTokenizer(s)
	var out Config
	for tok := t.next(); tok.kind != tokEOF; tok = t.next() {
		e, err := parseEntry(t, tok)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	if len(out) == 0 {
		return nil, ErrEmpty
	}
	return out, nil
}

func text(tok token) (string, bool) {
	return tok.text, tok.kind == tokWord || tok.kind == tokQuoted
}

func parseEntry(t *tokenizer, first token) (Entry, error) {
	module, ok := text(first)
	if !ok {
		return Entry{}, errors.New("jaas: login module name not specified in JAAS config")
	}
	flagTok := t.next()
	if flagTok.kind == tokEOF {
		return Entry{}, errors.New("jaas: login module control flag not specified in JAAS config")
	}
	flag, err := parseFlag(flagTok)
	if err != nil {
		return Entry{}, err
	}
	e := Entry{LoginModule: module, Flag: flag, Options: map[string]string{}}
	tok := t.next()
	for ; tok.kind != tokEOF && !(tok.kind == tokChar && tok.char == ';'); tok = t.next() {
		key, _ := text(tok)
		if eq := t.next(); eq.kind != tokChar || eq.char != '=' {
			return Entry{}, fmt.Errorf("jaas: value not specified for key '%s' in JAAS config", key)
		}
		value, ok := text(t.next())
		if !ok {
			return Entry{}, fmt.Errorf("jaas: value not specified for key '%s' in JAAS config", key)
		}
		e.Options[key] = value
	}
	if tok.kind == tokEOF {
		return Entry{}, errors.New("jaas: JAAS config entry not terminated by semi-colon")
	}
	return e, nil
}

func parseFlag(tok token) (Flag, error) {
	s, ok := text(tok)
	if !ok {
		return "", errors.New("jaas: login module control flag is not available in the JAAS config")
	}
	switch f := Flag(strings.ToUpper(s)); f {
	case Required, Requisite, Sufficient, Optional:
		return f, nil
	}
	return "", fmt.Errorf("jaas: invalid login module control flag '%s' in JAAS config", s)
}

// Module returns the entry for a login module class, as Kafka's
// JaasContext does for a listener: Kafka requires exactly one entry in a
// listener's sasl.jaas.config.
func (c Config) Module(class string) (Entry, error) {
	if len(c) != 1 {
		return Entry{}, fmt.Errorf("jaas: sasl.jaas.config must contain exactly one login module, found %d", len(c))
	}
	if c[0].LoginModule != class {
		return Entry{}, fmt.Errorf("jaas: login module %s where %s is expected", c[0].LoginModule, class)
	}
	return c[0], nil
}

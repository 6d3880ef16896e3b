package config

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Security properties.
//
// Kafka's SSL and SASL configs are an open family: every ssl.* and sasl.*
// key may be given per listener as listener.name.<listener>.<key>, and the
// JAAS configs are per listener and mechanism
// (listener.name.<l>.<mechanism>.sasl.jaas.config). They are kept as given,
// in Config.Security, and read through Property by the broker, which turns
// them into TLS configs, SASL mechanisms and principal mapping rules and
// reports a bad value when it starts the listener. The few security keys
// that are single settings of the broker (super.users,
// allow.everyone.if.no.acl.found, authorizer.class.name,
// security.inter.broker.protocol, the inter-broker and controller SASL
// mechanisms, connections.max.reauth.ms,
// connection.failed.authentication.delay.ms) are typed keys of the table.
//
// Listener-prefixed keys cannot be flags or environment variables (listener
// names hold underscores, which the environment turns into dots): give them
// in the config file or with --override key=value, as Kafka's
// kafka-server-start.sh takes them.

// Security protocols of listener.security.protocol.map.
const (
	ProtocolPlaintext     = "PLAINTEXT"
	ProtocolSSL           = "SSL"
	ProtocolSASLPlaintext = "SASL_PLAINTEXT"
	ProtocolSASLSSL       = "SASL_SSL"
)

// securityProtocols are Kafka's security protocols.
var securityProtocols = []string{ProtocolPlaintext, ProtocolSSL, ProtocolSASLPlaintext, ProtocolSASLSSL}

// StandardAuthorizer is the authorizer.class.name of Kafka's KRaft
// authorizer, the one kbroker implements.
const StandardAuthorizer = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"

// securityPrefixes are the families kept as security properties.
var securityPrefixes = []string{"ssl.", "sasl.", "listener.name."}

// isSecurityProperty reports whether name belongs to an open security
// family (and is not a key of the table).
func isSecurityProperty(name string) bool {
	return slices.ContainsFunc(securityPrefixes, func(p string) bool { return strings.HasPrefix(name, p) })
}

// Property returns a security property (ssl.*, sasl.*, listener.name.*) as
// it was given, or a typed key's value in Kafka's text form, and whether it
// was set (a typed key's default counts as set).
func (c *Config) Property(key string) (string, bool) {
	if v, ok := c.Security[key]; ok {
		return v, true
	}
	if k := keyByName(key); k != nil && k.SynonymOf == "" {
		if _, set := c.origin[key]; set || !k.NoDefault {
			return formatValue(k.current(c)), true
		}
	}
	return "", false
}

// ListenerProperty returns listener.name.<listener>.<key>, else key: the
// listener-prefixed value overrides the plain one, as Kafka's
// valuesWithPrefixOverride. The listener name is matched lower-case.
func (c *Config) ListenerProperty(listener, key string) (string, bool) {
	if v, ok := c.Property(ListenerPrefix(listener) + key); ok {
		return v, true
	}
	return c.Property(key)
}

// ListenerPrefix is "listener.name.<listener lower-case>.".
func ListenerPrefix(listener string) string {
	return "listener.name." + strings.ToLower(listener) + "."
}

// SensitiveProperty reports whether a security property's value is a
// secret: passwords, private keys and JAAS configs (which hold passwords).
// DescribeConfigs answers them as null; logs never print them.
func SensitiveProperty(key string) bool {
	return strings.HasSuffix(key, ".password") || strings.HasSuffix(key, "ssl.keystore.key") ||
		strings.HasSuffix(key, "sasl.jaas.config") || strings.HasSuffix(key, ".client.secret")
}

// ListenerProtocol is the security protocol of a listener name, from
// listener.security.protocol.map ("" when it has none).
func (c *Config) ListenerProtocol(name string) string {
	return c.ListenerSecurityProtocolMap[strings.ToUpper(name)]
}

// securityEntries are the set security properties, for Entries.
func (c *Config) securityEntries() []Entry {
	names := make([]string, 0, len(c.Security))
	for name := range c.Security {
		names = append(names, name)
	}
	sort.Strings(names)
	out := make([]Entry, 0, len(names))
	for _, name := range names {
		e := Entry{Name: name, Value: c.Security[name], Source: c.origin[name].source, ReadOnly: true, Type: TypeString}
		if SensitiveProperty(name) {
			e.Value, e.Null, e.Sensitive, e.Type = "", true, true, TypePassword
		}
		out = append(out, e)
	}
	return out
}

// validateSecurity checks the security keys that tie into the listeners.
func (c *Config) validateSecurity() []error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf("config: "+format, args...)) }
	if _, ok := c.origin["security.inter.broker.protocol"]; ok {
		if _, both := c.origin["inter.broker.listener.name"]; both {
			add("only one of inter.broker.listener.name and security.inter.broker.protocol may be set")
		}
	}
	switch c.AuthorizerClassName {
	case "", StandardAuthorizer:
	default:
		add("authorizer.class.name=%s is not supported: kbroker implements %s (or leave it empty for no authorization)",
			c.AuthorizerClassName, StandardAuthorizer)
	}
	return errs
}

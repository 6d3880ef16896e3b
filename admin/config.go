package admin

import (
	"crypto/x509"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Config is how a client reaches a cluster. Its keys are Kafka's client
// config names (librdkafka's where the Java client has none that fit a
// command line), so that a Kafka client.properties file works as a profile.
type Config struct {
	Brokers  []string // bootstrap.servers
	ClientID string   // client.id

	// SecurityProtocol is PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL.
	SecurityProtocol string
	SASLMechanism    string // PLAIN, SCRAM-SHA-256, SCRAM-SHA-512
	SASLUsername     string
	SASLPassword     string // never printed
	CAFile           string // ssl.ca.location: PEM bundle of trusted CAs
	CertFile         string // ssl.certificate.location: PEM client certificate
	KeyFile          string // ssl.key.location: PEM key of the client certificate
	// VerifyHostname is ssl.endpoint.identification.algorithm=https (the
	// default); an empty value or none keeps the chain check but skips the
	// host name, as Kafka's clients do.
	VerifyHostname bool
	// RootCAs, set in code (no config key), are trusted besides
	// ssl.ca.location's: the console passes its broker's truststore.
	RootCAs *x509.CertPool

	// RequestTimeout bounds one command's requests (request.timeout.ms).
	RequestTimeout time.Duration
}

// DefaultConfig is a plaintext connection to a local broker.
func DefaultConfig() Config {
	return Config{
		Brokers:          []string{"127.0.0.1:9092"},
		ClientID:         "kbroker-cli",
		SecurityProtocol: "PLAINTEXT",
		VerifyHostname:   true,
		RequestTimeout:   10 * time.Second,
	}
}

// ConfigKey is one client config key a profile or -X may set.
type ConfigKey struct {
	Name    string
	Aliases []string
	Example string
	Doc     string
	set     func(c *Config, v string) error
}

// ConfigKeys lists the keys Set accepts, for help texts.
func ConfigKeys() []ConfigKey { return slices.Clone(configKeys) }

var configKeys = []ConfigKey{
	{Name: "bootstrap.servers", Aliases: []string{"brokers", "metadata.broker.list"}, Example: "10.0.0.1:9092,10.0.0.2:9092",
		Doc: "brokers to ask for the cluster's metadata", set: func(c *Config, v string) error {
			c.Brokers = splitList(v)
			if len(c.Brokers) == 0 {
				return fmt.Errorf("needs at least one host:port")
			}
			return nil
		}},
	{Name: "client.id", Example: "ops-laptop", Doc: "the client id brokers log",
		set: func(c *Config, v string) error { c.ClientID = v; return nil }},
	{Name: "security.protocol", Example: "SASL_SSL", Doc: "PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL",
		set: func(c *Config, v string) error {
			return setOneOf(&c.SecurityProtocol, strings.ToUpper(v), "PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
		}},
	{Name: "sasl.mechanism", Aliases: []string{"sasl.mechanisms"}, Example: "SCRAM-SHA-256", Doc: "PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512",
		set: func(c *Config, v string) error {
			return setOneOf(&c.SASLMechanism, strings.ToUpper(v), "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
		}},
	{Name: "sasl.username", Example: "alice", Doc: "SASL user",
		set: func(c *Config, v string) error { c.SASLUsername = v; return nil }},
	{Name: "sasl.password", Example: "s3cret", Doc: "SASL password (never printed)",
		set: func(c *Config, v string) error { c.SASLPassword = v; return nil }},
	{Name: "sasl.jaas.config", Example: `org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" password="s3cret";`,
		Doc: "the Java client's form of the SASL user and password", set: setJAAS},
	{Name: "ssl.ca.location", Example: "/etc/kafka/ca.pem", Doc: "PEM file of the CAs that sign the brokers' certificates",
		set: func(c *Config, v string) error { c.CAFile = v; return nil }},
	{Name: "ssl.certificate.location", Example: "/etc/kafka/client.pem", Doc: "PEM client certificate (mutual TLS)",
		set: func(c *Config, v string) error { c.CertFile = v; return nil }},
	{Name: "ssl.key.location", Example: "/etc/kafka/client.key", Doc: "PEM key of the client certificate",
		set: func(c *Config, v string) error { c.KeyFile = v; return nil }},
	{Name: "ssl.endpoint.identification.algorithm", Example: "none", Doc: "https (check the broker's host name, the default) or none",
		set: func(c *Config, v string) error {
			switch strings.ToLower(v) {
			case "https":
				c.VerifyHostname = true
			case "", "none":
				c.VerifyHostname = false
			default:
				return fmt.Errorf("must be https or none")
			}
			return nil
		}},
	{Name: "request.timeout.ms", Example: "30000", Doc: "how long a command waits for the cluster",
		set: func(c *Config, v string) error {
			ms, err := strconv.ParseInt(v, 10, 64)
			if err != nil || ms <= 0 {
				return fmt.Errorf("must be a positive number of milliseconds")
			}
			c.RequestTimeout = time.Duration(ms) * time.Millisecond
			return nil
		}},
}

// Set sets one key by its Kafka client config name.
func (c *Config) Set(key, value string) error {
	for _, k := range configKeys {
		if k.Name == key || slices.Contains(k.Aliases, key) {
			if err := k.set(c, strings.TrimSpace(value)); err != nil {
				return fmt.Errorf("%s: %w", key, err)
			}
			return nil
		}
	}
	return fmt.Errorf("unknown client config key %q (known: %s)", key, strings.Join(keyNames(), ", "))
}

// Validate checks that the keys set agree with each other.
func (c *Config) Validate() error {
	sasl := strings.HasPrefix(c.SecurityProtocol, "SASL_")
	switch {
	case sasl && c.SASLMechanism == "":
		return fmt.Errorf("security.protocol=%s needs sasl.mechanism", c.SecurityProtocol)
	case sasl && c.SASLUsername == "":
		return fmt.Errorf("security.protocol=%s needs sasl.username (or sasl.jaas.config)", c.SecurityProtocol)
	case !sasl && c.SASLMechanism != "":
		return fmt.Errorf("sasl.mechanism=%s needs security.protocol SASL_PLAINTEXT or SASL_SSL", c.SASLMechanism)
	case (c.CertFile == "") != (c.KeyFile == ""):
		return fmt.Errorf("ssl.certificate.location and ssl.key.location go together")
	}
	return nil
}

// TLS reports whether the connection is encrypted.
func (c *Config) TLS() bool { return strings.HasSuffix(c.SecurityProtocol, "SSL") }

func keyNames() []string {
	var out []string
	for _, k := range configKeys {
		out = append(out, k.Name)
	}
	return out
}

func setOneOf(dst *string, v string, allowed ...string) error {
	if !slices.Contains(allowed, v) {
		return fmt.Errorf("must be one of %s", strings.Join(allowed, ", "))
	}
	*dst = v
	return nil
}

var jaasField = regexp.MustCompile(`(username|password)\s*=\s*"([^"]*)"`)

// setJAAS reads username and password from a JAAS line as the Java client
// takes them; the login module name decides nothing here (sasl.mechanism
// does).
func setJAAS(c *Config, v string) error {
	found := 0
	for _, m := range jaasField.FindAllStringSubmatch(v, -1) {
		found++
		if m[1] == "username" {
			c.SASLUsername = m[2]
		} else {
			c.SASLPassword = m[2]
		}
	}
	if found == 0 {
		return fmt.Errorf(`has no username="..." password="..."`)
	}
	return nil
}

// splitList splits a comma-separated list, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

package tlsconf

import (
	"strings"
)

// Kafka's SSL config names (without the listener.name.<l>. prefix).
const (
	KeyKeystoreType           = "ssl.keystore.type"
	KeyKeystoreLocation       = "ssl.keystore.location"
	KeyKeystorePassword       = "ssl.keystore.password"
	KeyKeystoreChain          = "ssl.keystore.certificate.chain"
	KeyKeystoreKey            = "ssl.keystore.key"
	KeyKeyPassword            = "ssl.key.password"
	KeyTruststoreType         = "ssl.truststore.type"
	KeyTruststoreLocation     = "ssl.truststore.location"
	KeyTruststorePassword     = "ssl.truststore.password"
	KeyTruststoreCertificates = "ssl.truststore.certificates"
	KeyClientAuth             = "ssl.client.auth"
	KeyEnabledProtocols       = "ssl.enabled.protocols"
	KeyProtocol               = "ssl.protocol"
	KeyCipherSuites           = "ssl.cipher.suites"
	KeyEndpointIdentification = "ssl.endpoint.identification.algorithm"
	KeyAllowDNChanges         = "ssl.allow.dn.changes"
	KeyAllowSANChanges        = "ssl.allow.san.changes"
)

// Keys lists every SSL config name this package reads.
func Keys() []string {
	return []string{KeyKeystoreType, KeyKeystoreLocation, KeyKeystorePassword, KeyKeystoreChain, KeyKeystoreKey,
		KeyKeyPassword, KeyTruststoreType, KeyTruststoreLocation, KeyTruststorePassword, KeyTruststoreCertificates,
		KeyClientAuth, KeyEnabledProtocols, KeyProtocol, KeyCipherSuites, KeyEndpointIdentification,
		KeyAllowDNChanges, KeyAllowSANChanges}
}

// Sensitive reports the keys whose values are secrets (Kafka's PASSWORD
// type): never log them, and DescribeConfigs returns them as null.
func Sensitive(key string) bool {
	switch key {
	case KeyKeystorePassword, KeyKeyPassword, KeyTruststorePassword, KeyKeystoreKey:
		return true
	}
	return false
}

// Settings are one listener's (or one client's) SSL configs.
type Settings struct {
	KeystoreType             string
	KeystoreLocation         string
	KeystorePassword         string
	KeystoreCertificateChain string
	KeystoreKey              string
	KeyPassword              string
	TruststoreType           string
	TruststoreLocation       string
	TruststorePassword       string
	TruststoreCertificates   string
	ClientAuth               string   // none | requested | required
	EnabledProtocols         []string // default TLSv1.2, TLSv1.3
	Protocol                 string   // ssl.protocol: validated only
	CipherSuites             []string // empty: Go's defaults
	// EndpointIdentification is ssl.endpoint.identification.algorithm for
	// clients: "https" checks the server's host name, "" does not.
	EndpointIdentification string
	AllowDNChanges         bool
	AllowSANChanges        bool
}

// FromConfig reads Settings for a listener from a config lookup. As Kafka
// does (valuesWithPrefixOverride), listener.name.<listener>.ssl.X
// overrides ssl.X key by key; listener is matched lower-case. An empty
// listener reads the plain keys only (clients).
func FromConfig(get func(key string) (string, bool), listener string) Settings {
	prefix := ""
	if listener != "" {
		prefix = "listener.name." + strings.ToLower(listener) + "."
	}
	val := func(key, def string) string {
		if v, ok := get(prefix + key); ok && prefix != "" {
			return v
		}
		if v, ok := get(key); ok {
			return v
		}
		return def
	}
	return Settings{
		KeystoreType:             val(KeyKeystoreType, ""),
		KeystoreLocation:         val(KeyKeystoreLocation, ""),
		KeystorePassword:         val(KeyKeystorePassword, ""),
		KeystoreCertificateChain: val(KeyKeystoreChain, ""),
		KeystoreKey:              val(KeyKeystoreKey, ""),
		KeyPassword:              val(KeyKeyPassword, ""),
		TruststoreType:           val(KeyTruststoreType, ""),
		TruststoreLocation:       val(KeyTruststoreLocation, ""),
		TruststorePassword:       val(KeyTruststorePassword, ""),
		TruststoreCertificates:   val(KeyTruststoreCertificates, ""),
		ClientAuth:               val(KeyClientAuth, "none"),
		EnabledProtocols:         splitList(val(KeyEnabledProtocols, "TLSv1.2,TLSv1.3")),
		Protocol:                 val(KeyProtocol, "TLSv1.3"),
		CipherSuites:             splitList(val(KeyCipherSuites, "")),
		EndpointIdentification:   val(KeyEndpointIdentification, "https"),
		AllowDNChanges:           strings.EqualFold(val(KeyAllowDNChanges, "false"), "true"),
		AllowSANChanges:          strings.EqualFold(val(KeyAllowSANChanges, "false"), "true"),
	}
}

func splitList(s string) []string {
	var out []string
	for item := range strings.SplitSeq(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

package tlsconf

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"strings"
)

// versions maps ssl.enabled.protocols to Go's version range.
func versions(s Settings) (uint16, uint16, error) {
	switch s.Protocol {
	case "", "TLS", "TLSv1.2", "TLSv1.3":
	default:
		return 0, 0, fmt.Errorf("tlsconf: ssl.protocol=%s is not supported (TLS, TLSv1.2, TLSv1.3)", s.Protocol)
	}
	var lo, hi uint16
	for _, p := range s.EnabledProtocols {
		var v uint16
		switch p {
		case "TLSv1.2":
			v = tls.VersionTLS12
		case "TLSv1.3":
			v = tls.VersionTLS13
		default:
			return 0, 0, fmt.Errorf("tlsconf: ssl.enabled.protocols: %s is not supported: kbroker serves TLSv1.2 and TLSv1.3", p)
		}
		if lo == 0 || v < lo {
			lo = v
		}
		hi = max(hi, v)
	}
	if lo == 0 {
		return 0, 0, errors.New("tlsconf: ssl.enabled.protocols is empty")
	}
	return lo, hi, nil
}

// cipherSuites maps ssl.cipher.suites (IANA names as Java prints them; the
// SSL_ aliases too) to Go's suites. Go always enables every TLS 1.3 suite:
// a list naming only TLS 1.2 suites therefore disables TLS 1.3 (as it
// does in Java, where no TLS 1.3 suite would be left), and one naming
// only TLS 1.3 suites disables TLS 1.2.
func cipherSuites(names []string) (ids []uint16, has12, has13 bool, err error) {
	if len(names) == 0 {
		return nil, true, true, nil
	}
	known := map[string]*tls.CipherSuite{}
	for _, cs := range append(tls.CipherSuites(), tls.InsecureCipherSuites()...) {
		known[cs.Name] = cs
	}
	for _, n := range names {
		name := n
		if rest, ok := strings.CutPrefix(name, "SSL_"); ok {
			name = "TLS_" + rest
		}
		if name == "TLS_EMPTY_RENEGOTIATION_INFO_SCSV" {
			continue
		}
		cs, ok := known[name]
		if !ok {
			return nil, false, false, fmt.Errorf("tlsconf: ssl.cipher.suites: %s is not a cipher suite Go's TLS implements", n)
		}
		for _, v := range cs.SupportedVersions {
			if v == tls.VersionTLS13 {
				has13 = true
			} else if v == tls.VersionTLS12 {
				has12 = true
				ids = append(ids, cs.ID)
			}
		}
	}
	return ids, has12, has13, nil
}

// base is the part of the config servers and clients share.
func base(s Settings) (*tls.Config, error) {
	lo, hi, err := versions(s)
	if err != nil {
		return nil, err
	}
	ids, has12, has13, err := cipherSuites(s.CipherSuites)
	if err != nil {
		return nil, err
	}
	if !has13 {
		hi = min(hi, tls.VersionTLS12)
	}
	if !has12 {
		lo = max(lo, tls.VersionTLS13)
	}
	if lo > hi {
		return nil, errors.New("tlsconf: ssl.cipher.suites leaves no suite for the protocols in ssl.enabled.protocols")
	}
	return &tls.Config{MinVersion: lo, MaxVersion: hi, CipherSuites: ids}, nil
}

func clientAuth(s string) (tls.ClientAuthType, error) {
	switch strings.ToLower(s) {
	case "", "none":
		return tls.NoClientCert, nil
	case "requested":
		return tls.VerifyClientCertIfGiven, nil
	case "required":
		return tls.RequireAndVerifyClientCert, nil
	}
	return 0, fmt.Errorf("tlsconf: ssl.client.auth=%s: want none, requested or required", s)
}

// ServerConfig is a listener's tls.Config for m.
func ServerConfig(m *Material, s Settings) (*tls.Config, error) {
	if m.Certificate == nil {
		return nil, errors.New("tlsconf: an SSL listener needs a keystore (ssl.keystore.location or ssl.keystore.key)")
	}
	cfg, err := base(s)
	if err != nil {
		return nil, err
	}
	if cfg.ClientAuth, err = clientAuth(s.ClientAuth); err != nil {
		return nil, err
	}
	cfg.Certificates = []tls.Certificate{*m.Certificate}
	cfg.ClientCAs = m.Roots
	return cfg, nil
}

// ClientConfig is a client's tls.Config (inter-broker, controller) for m,
// dialling serverName. ssl.endpoint.identification.algorithm=https checks
// the host name; "" still verifies the chain against the truststore, but
// not the name (Java's behaviour), through VerifyConnection.
func ClientConfig(m *Material, s Settings, serverName string) (*tls.Config, error) {
	cfg, err := base(s)
	if err != nil {
		return nil, err
	}
	if m.Certificate != nil {
		cfg.Certificates = []tls.Certificate{*m.Certificate}
	}
	cfg.RootCAs, cfg.ServerName = m.Roots, serverName
	switch strings.ToLower(s.EndpointIdentification) {
	case "https":
	case "":
		roots := m.Roots
		cfg.InsecureSkipVerify = true // replaced by the chain check below
		cfg.VerifyConnection = func(cs tls.ConnectionState) error { return verifyChain(cs, roots) }
	default:
		return nil, fmt.Errorf("tlsconf: ssl.endpoint.identification.algorithm=%s: want https or empty", s.EndpointIdentification)
	}
	return cfg, nil
}

func verifyChain(cs tls.ConnectionState, roots *x509.CertPool) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("tlsconf: the server sent no certificate")
	}
	inter := x509.NewCertPool()
	for _, c := range cs.PeerCertificates[1:] {
		inter.AddCert(c)
	}
	_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	return err
}

package broker

import (
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"slices"
	"time"

	"github.com/kbroker/kbroker/admin"
	"github.com/kbroker/kbroker/console"
	"github.com/kbroker/kbroker/security/sasl"
	"github.com/kbroker/kbroker/security/session"
)

// consoleMechanisms are the SASL mechanisms the console can log a viewer in
// with (a password each), in the order it tries them.
var consoleMechanisms = []string{sasl.ScramSHA512, sasl.ScramSHA256, sasl.Plain}

// consoleOptions chooses the client listener this broker's console reads
// the cluster through, as Kafka clients would. A SASL listener with a
// password mechanism comes first: viewers then log in (HTTP Basic, their
// Kafka user and password) and each reads as itself, under the ACLs
// (console/viewers.go). Else a PLAINTEXT listener, read without a login
// (as User:ANONYMOUS when an authorizer is on). A cluster reachable only
// over SSL listeners gets no console: its clients are known by their
// certificates, which a browser's viewer does not hand over.
func (b *Broker) consoleOptions() (console.Options, error) {
	opts := console.Options{Gatherer: b.metrics.throughput(), NodeID: b.cfg.NodeID, Logger: b.logger.With("component", "console")}
	var plain string
	for _, l := range b.cfg.Listeners {
		if b.cfg.IsControllerListener(l.Name) {
			continue
		}
		ls := b.sec.listeners[l.Name]
		if ls == nil {
			continue
		}
		switch {
		case ls.protocol.SASL():
			if mechs := passwordMechanisms(ls.sec.Session.Mechanisms); len(mechs) > 0 {
				cfg, err := consoleLogin(ls)
				if err != nil {
					return opts, fmt.Errorf("listener %s: %w", l.Name, err)
				}
				opts.ClientAddr, opts.Client, opts.Login = l.Address(), &cfg, mechs
				return opts, nil
			}
		case ls.protocol == session.Plaintext && plain == "":
			plain = l.Address()
		}
	}
	if plain == "" {
		return opts, fmt.Errorf("no PLAINTEXT listener, and no SASL listener with %v, to read the cluster through", consoleMechanisms)
	}
	opts.ClientAddr = plain
	return opts, nil
}

// passwordMechanisms are the mechanisms of a listener the console can log
// viewers in with, in the order it tries them.
func passwordMechanisms(reg *sasl.Registry) []string {
	if reg == nil {
		return nil
	}
	enabled := reg.Enabled()
	var out []string
	for _, m := range consoleMechanisms {
		if slices.Contains(enabled, m) {
			out = append(out, m)
		}
	}
	return out
}

// consoleLogin is the console's connection to a SASL listener of this
// broker, without a user (each viewer brings theirs) or an address (the
// console dials the listener's on loopback). Over TLS it trusts the
// listener's truststore and this broker's own certificate chain, and
// checks the chain only: loopback is a name the certificate need not carry.
func consoleLogin(ls *listenerSetup) (admin.Config, error) {
	cfg := admin.DefaultConfig()
	cfg.Brokers = nil
	cfg.ClientID, cfg.RequestTimeout = "kbroker-console", 5*time.Second
	cfg.SecurityProtocol = "SASL_PLAINTEXT"
	if !ls.protocol.TLS() {
		return cfg, nil
	}
	cfg.SecurityProtocol, cfg.VerifyHostname = "SASL_SSL", false
	m := ls.tls.Material()
	pool := x509.NewCertPool()
	if m.Roots != nil {
		pool = m.Roots.Clone()
	}
	if m.Certificate != nil {
		for _, der := range m.Certificate.Certificate {
			c, err := x509.ParseCertificate(der)
			if err != nil {
				return cfg, fmt.Errorf("the keystore's certificate chain: %w", err)
			}
			pool.AddCert(c)
		}
	}
	cfg.RootCAs = pool
	return cfg, nil
}

// mountConsole serves the console under /ui on the metrics listener (at
// addr) and returns its Close; a console that cannot be set up is logged
// and left out, the metrics endpoint still serves.
func (b *Broker) mountConsole(mux *http.ServeMux, addr net.Addr) (closeFn func()) {
	opts, err := b.consoleOptions()
	if err != nil {
		b.logger.Error("web console disabled", "err", err)
		return func() {}
	}
	if tcp, ok := addr.(*net.TCPAddr); len(opts.Login) > 0 && (!ok || !tcp.IP.IsLoopback()) {
		b.logger.Warn("the web console asks viewers for their Kafka password over plain HTTP on metrics.listen: "+
			"keep metrics.listen on loopback or behind a TLS proxy", "addr", addr.String())
	}
	return console.Mount(mux, opts)
}

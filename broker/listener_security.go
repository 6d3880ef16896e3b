package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/kbroker/kbroker/config"
	"github.com/kbroker/kbroker/protocol"
	"github.com/kbroker/kbroker/security/jaas"
	"github.com/kbroker/kbroker/security/principal"
	"github.com/kbroker/kbroker/security/sasl"
	"github.com/kbroker/kbroker/security/sasl/oauthbearer"
	"github.com/kbroker/kbroker/security/sasl/plain"
	"github.com/kbroker/kbroker/security/sasl/scram"
	"github.com/kbroker/kbroker/security/session"
	"github.com/kbroker/kbroker/security/tlsconf"
)

// This file turns the configuration of each listener into what protocol
// serves it with (protocol.ListenerSecurity): its security protocol from
// listener.security.protocol.map, its TLS material (ssl.* with the
// listener.name.<l>. overrides, kept current by a tlsconf.Reloader), the
// principal mapping of client certificates, the SASL mechanisms of
// sasl.enabled.mechanisms with their JAAS configs, connections.max.reauth.ms
// and connection.failed.authentication.delay.ms. Every problem is an error
// naming the listener and the key, and the broker does not start.

// listenerSetup is one listener's security, with the reloader of its
// certificates.
type listenerSetup struct {
	name     string
	protocol session.Protocol
	sec      protocol.ListenerSecurity
	tls      *tlsconf.Reloader // nil without TLS
}

// securitySetupOptions are what building the listeners needs besides the
// config.
type securitySetupOptions struct {
	log   *slog.Logger
	scram scram.Store // the credentials of the metadata image
	now   func() time.Time
	fs    tlsconf.FS
}

// newListenerSetup builds the security of listener name.
func newListenerSetup(ctx context.Context, cfg *config.Config, name string, o securitySetupOptions) (*listenerSetup, error) {
	proto, err := listenerProtocol(cfg, name)
	if err != nil {
		return nil, err
	}
	ls := &listenerSetup{name: name, protocol: proto}
	ls.sec.FailedAuthDelay = cfg.ConnectionFailedAuthDelay
	ls.sec.Session = session.Config{Protocol: proto, Now: o.now}
	if proto.TLS() {
		settings := tlsconf.FromConfig(cfg.Property, name)
		if ls.tls, err = tlsconf.NewReloader(settings, o.fs, o.log.With("listener", name)); err != nil {
			return nil, fmt.Errorf("listener %s: %w", name, err)
		}
		ls.sec.TLS = ls.tls.Config()
		rules, _ := cfg.ListenerProperty(name, "ssl.principal.mapping.rules")
		if rules == "" {
			rules = principal.DefaultMappingRules
		}
		mapper, err := principal.ParseSSLMappingRules(rules)
		if err != nil {
			return nil, fmt.Errorf("listener %s: ssl.principal.mapping.rules: %w", name, err)
		}
		ls.sec.Session.Principals = principal.Builder{SSL: mapper}
	}
	if proto.SASL() {
		if ls.sec.Session.Mechanisms, err = listenerMechanisms(ctx, cfg, name, o); err != nil {
			return nil, fmt.Errorf("listener %s: %w", name, err)
		}
		reauth, _ := cfg.ListenerProperty(name, "connections.max.reauth.ms")
		ms, err := strconv.ParseInt(strings.TrimSpace(reauth), 10, 64)
		if err != nil || ms < 0 {
			return nil, fmt.Errorf("listener %s: connections.max.reauth.ms=%s is not a number of milliseconds >= 0", name, reauth)
		}
		ls.sec.Session.MaxReauth = time.Duration(ms) * time.Millisecond
	}
	return ls, nil
}

// listenerProtocol is a listener's security protocol.
func listenerProtocol(cfg *config.Config, name string) (session.Protocol, error) {
	p, err := session.ParseProtocol(cfg.ListenerProtocol(name))
	if err != nil {
		return 0, fmt.Errorf("listener %s: listener.security.protocol.map: %w", name, err)
	}
	return p, nil
}

// listenerMechanisms builds the enabled SASL mechanisms of a listener.
func listenerMechanisms(ctx context.Context, cfg *config.Config, listener string, o securitySetupOptions) (*sasl.Registry, error) {
	enabled, ok := cfg.ListenerProperty(listener, "sasl.enabled.mechanisms")
	if !ok {
		enabled = sasl.GSSAPI // Kafka's default
	}
	var mechs []sasl.Mechanism
	for _, name := range sasl.ParseEnabledMechanisms(enabled) {
		m, err := serverMechanism(ctx, cfg, listener, name, o)
		if err != nil {
			return nil, err
		}
		mechs = append(mechs, m)
	}
	if len(mechs) == 0 {
		return nil, fmt.Errorf("sasl.enabled.mechanisms is empty: a SASL listener needs at least one mechanism")
	}
	return sasl.NewRegistry(mechs...)
}

func serverMechanism(ctx context.Context, cfg *config.Config, listener, name string, o securitySetupOptions) (sasl.Mechanism, error) {
	switch name {
	case sasl.Plain:
		value, ok := jaasConfig(cfg, listener, name)
		if !ok {
			return nil, fmt.Errorf("PLAIN needs %splain.sasl.jaas.config with the users (user_<name>=\"<password>\")", config.ListenerPrefix(listener))
		}
		pc, err := plain.ParseJAAS(value)
		if err != nil {
			return nil, fmt.Errorf("%splain.sasl.jaas.config: %w", config.ListenerPrefix(listener), err)
		}
		return plain.New(pc.Users), nil
	case sasl.ScramSHA256, sasl.ScramSHA512:
		m, _ := scram.MechanismFromName(name)
		return scram.NewServer(m, o.scram, scram.Options{}), nil
	case sasl.OAuthBearer:
		v, err := oauthValidator(ctx, cfg, listener, o)
		if err != nil {
			return nil, err
		}
		return oauthbearer.New(v), nil
	case sasl.GSSAPI:
		return nil, fmt.Errorf("sasl.enabled.mechanisms: GSSAPI (Kerberos, Kafka's default) is not supported: enable PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER")
	}
	return nil, fmt.Errorf("sasl.enabled.mechanisms: unknown mechanism %q (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER)", name)
}

// jaasConfig is listener.name.<l>.<mechanism>.sasl.jaas.config, else
// sasl.jaas.config.
func jaasConfig(cfg *config.Config, listener, mechanism string) (string, bool) {
	if v, ok := cfg.Property(config.ListenerPrefix(listener) + strings.ToLower(mechanism) + ".sasl.jaas.config"); ok {
		return v, true
	}
	return cfg.Property("sasl.jaas.config")
}

// oauthValidator is the OAUTHBEARER validator of a listener: JWT signatures
// against sasl.oauthbearer.jwks.endpoint.url when it is set (Kafka's
// OAuthBearerValidatorCallbackHandler), else Kafka's unsecured validator
// for development, configured by the JAAS options.
func oauthValidator(ctx context.Context, cfg *config.Config, listener string, o securitySetupOptions) (oauthbearer.Validator, error) {
	get := oauthSetting(cfg, listener)
	if get("sasl.oauthbearer.jwks.endpoint.url", "") == "" {
		return unsecuredValidator(cfg, listener, o)
	}
	return jwtValidator(ctx, get, o)
}

// oauthSetting reads a listener's sasl.oauthbearer.* key, def when unset.
func oauthSetting(cfg *config.Config, listener string) func(key, def string) string {
	return func(key, def string) string {
		if v, ok := cfg.ListenerProperty(listener, key); ok && strings.TrimSpace(v) != "" {
			return strings.TrimSpace(v)
		}
		return def
	}
}

func unsecuredValidator(cfg *config.Config, listener string, o securitySetupOptions) (oauthbearer.Validator, error) {
	var options map[string]string
	if value, ok := jaasConfig(cfg, listener, sasl.OAuthBearer); ok {
		e, err := jaasModule(value, jaas.OAuthBearerLoginModule)
		if err != nil {
			return nil, fmt.Errorf("%soauthbearer.sasl.jaas.config: %w", config.ListenerPrefix(listener), err)
		}
		options = e.Options
	}
	o.log.Warn("OAUTHBEARER accepts unsecured (unsigned) tokens: set sasl.oauthbearer.jwks.endpoint.url to validate signatures", "listener", listener)
	return oauthbearer.UnsecuredFromJAAS(options, o.now)
}

func jaasModule(value, module string) (jaas.Entry, error) {
	jc, err := jaas.Parse(value)
	if err != nil {
		return jaas.Entry{}, err
	}
	return jc.Module(module)
}

func jwtValidator(ctx context.Context, get func(key, def string) string, o securitySetupOptions) (oauthbearer.Validator, error) {
	duration := func(key, def string, unit time.Duration) (time.Duration, error) {
		n, err := strconv.ParseInt(get(key, def), 10, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("%s=%s is not a number >= 0", key, get(key, def))
		}
		return time.Duration(n) * unit, nil
	}
	refresh, err1 := duration("sasl.oauthbearer.jwks.endpoint.refresh.ms", "3600000", time.Millisecond)
	backoff, err2 := duration("sasl.oauthbearer.jwks.endpoint.retry.backoff.ms", "100", time.Millisecond)
	skew, err3 := duration("sasl.oauthbearer.clock.skew.seconds", "30", time.Second)
	if err := errors.Join(err1, err2, err3); err != nil {
		return nil, err
	}
	url := get("sasl.oauthbearer.jwks.endpoint.url", "")
	keys, err := oauthbearer.NewKeySource(ctx, url, oauthbearer.KeySourceOptions{Now: o.now, Refresh: refresh, Backoff: backoff})
	if err != nil {
		return nil, fmt.Errorf("sasl.oauthbearer.jwks.endpoint.url=%s: %w", url, err)
	}
	var audience []string
	for _, a := range strings.Split(get("sasl.oauthbearer.expected.audience", ""), ",") {
		if a = strings.TrimSpace(a); a != "" {
			audience = append(audience, a)
		}
	}
	return oauthbearer.NewJWT(oauthbearer.JWTConfig{
		ExpectedAudience: audience,
		ExpectedIssuer:   get("sasl.oauthbearer.expected.issuer", ""),
		SubClaim:         get("sasl.oauthbearer.sub.claim.name", "sub"),
		ScopeClaim:       get("sasl.oauthbearer.scope.claim.name", "scope"),
		ClockSkew:        skew,
		Now:              o.now,
	}, keys), nil
}

package broker

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	fsasl "github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	fplain "github.com/twmb/franz-go/pkg/sasl/plain"
	fscram "github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/kbroker/kbroker/config"
	"github.com/kbroker/kbroker/protocol"
	"github.com/kbroker/kbroker/security/jaas"
	"github.com/kbroker/kbroker/security/sasl"
	"github.com/kbroker/kbroker/security/session"
	"github.com/kbroker/kbroker/security/tlsconf"
)

// The broker's own clients authenticate like any client (Kafka's
// inter-broker and controller clients): replica fetchers to the
// inter-broker listener of the leader with sasl.mechanism.inter.broker.protocol,
// and every connection to the controller quorum (forwarding, Raft) to the
// controller listener with sasl.mechanism.controller.protocol. Their TLS
// material is the listener's own keystore and truststore; their SASL
// credentials are the username and password of the listener's JAAS config
// for that mechanism, as in Kafka.

// clientSecurity is how this node reaches the listener named listener of
// other nodes, authenticating with mechanism (key names where it came from).
func clientSecurity(cfg *config.Config, listener, mechanism, key string, reloader *tlsconf.Reloader, fs tlsconf.FS) (protocol.ClientSecurity, error) {
	proto, err := listenerProtocol(cfg, listener)
	if err != nil {
		return protocol.ClientSecurity{}, err
	}
	var out protocol.ClientSecurity
	if proto.TLS() {
		if out.TLS, err = clientTLS(cfg, listener, reloader, fs); err != nil {
			return protocol.ClientSecurity{}, err
		}
	}
	if proto.SASL() {
		if out.SASL, err = clientMechanism(cfg, listener, mechanism, key); err != nil {
			return protocol.ClientSecurity{}, err
		}
	}
	return out, nil
}

// clientTLS dials with the listener's TLS settings: the reloader's current
// material when this node serves the listener, else material loaded once
// (a broker-only node's view of the controller listener).
func clientTLS(cfg *config.Config, listener string, reloader *tlsconf.Reloader, fs tlsconf.FS) (func(string) (*tls.Config, error), error) {
	if reloader != nil {
		return reloader.ClientConfig, nil
	}
	settings := tlsconf.FromConfig(cfg.Property, listener)
	m, err := tlsconf.Load(settings, fs)
	if err != nil {
		return nil, fmt.Errorf("listener %s (client): %w", listener, err)
	}
	return func(host string) (*tls.Config, error) { return tlsconf.ClientConfig(m, settings, host) }, nil
}

// clientMechanism is the franz-go mechanism for the broker's credentials
// in the listener's JAAS config.
func clientMechanism(cfg *config.Config, listener, mechanism, key string) (fsasl.Mechanism, error) {
	value, ok := jaasConfig(cfg, listener, mechanism)
	if !ok {
		return nil, fmt.Errorf("%s=%s on listener %s needs %s%s.sasl.jaas.config with this node's username and password",
			key, mechanism, listener, config.ListenerPrefix(listener), strings.ToLower(mechanism))
	}
	module := map[string]string{sasl.Plain: jaas.PlainLoginModule, sasl.ScramSHA256: jaas.ScramLoginModule,
		sasl.ScramSHA512: jaas.ScramLoginModule, sasl.OAuthBearer: jaas.OAuthBearerLoginModule}[mechanism]
	if module == "" {
		return nil, fmt.Errorf("%s=%s is not supported (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER)", key, mechanism)
	}
	e, err := jaasModule(value, module)
	if err != nil {
		return nil, fmt.Errorf("%s%s.sasl.jaas.config: %w", config.ListenerPrefix(listener), strings.ToLower(mechanism), err)
	}
	user, pass := e.Options["username"], e.Options["password"]
	if mechanism != sasl.OAuthBearer && (user == "" || pass == "") {
		return nil, fmt.Errorf("%s%s.sasl.jaas.config has no username and password for this node's own connections (%s)",
			config.ListenerPrefix(listener), strings.ToLower(mechanism), key)
	}
	switch mechanism {
	case sasl.Plain:
		return fplain.Auth{User: user, Pass: pass}.AsMechanism(), nil
	case sasl.ScramSHA256:
		return fscram.Auth{User: user, Pass: pass}.AsSha256Mechanism(), nil
	case sasl.ScramSHA512:
		return fscram.Auth{User: user, Pass: pass}.AsSha512Mechanism(), nil
	}
	return unsecuredLogin(e.Options, listener)
}

// unsecuredLogin is Kafka's OAuthBearerUnsecuredLoginCallbackHandler: the
// node presents an unsigned token for unsecuredLoginStringClaim_sub, for
// development clusters whose OAUTHBEARER listeners use the unsecured
// validator.
func unsecuredLogin(options map[string]string, listener string) (fsasl.Mechanism, error) {
	sub := options["unsecuredLoginStringClaim_sub"]
	if sub == "" {
		return nil, fmt.Errorf("%soauthbearer.sasl.jaas.config: this node's own OAUTHBEARER connections need unsecuredLoginStringClaim_sub "+
			"(signed tokens from an identity provider are not fetched by kbroker; use PLAIN or SCRAM between brokers)", config.ListenerPrefix(listener))
	}
	return oauth.Oauth(func(context.Context) (oauth.Auth, error) {
		now := time.Now()
		claims, err := json.Marshal(map[string]any{"sub": sub, "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()})
		if err != nil {
			return oauth.Auth{}, err
		}
		enc := base64.RawURLEncoding.EncodeToString
		return oauth.Auth{Token: enc([]byte(`{"alg":"none"}`)) + "." + enc(claims) + "."}, nil
	}), nil
}

// controllerListenerName is the listener the controller quorum talks on.
func controllerListenerName(cfg *config.Config) string {
	if len(cfg.ControllerListenerNames) > 0 {
		return cfg.ControllerListenerNames[0]
	}
	return "CONTROLLER"
}

// checkControllerMechanism refuses SCRAM for the controller quorum: its
// credentials live in the metadata log, which the quorum must replicate
// before anyone could authenticate with them (Kafka refuses it too).
func checkControllerMechanism(proto session.Protocol, mechanism string) error {
	if proto.SASL() && strings.HasPrefix(mechanism, "SCRAM-") {
		return fmt.Errorf("sasl.mechanism.controller.protocol=%s: SCRAM credentials live in the metadata log, which the controllers must "+
			"replicate before they could authenticate with them; use PLAIN, OAUTHBEARER or SSL client certificates on the controller listener", mechanism)
	}
	return nil
}

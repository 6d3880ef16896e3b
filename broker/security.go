package broker

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kbroker/kbroker/config"
	"github.com/kbroker/kbroker/protocol"
	"github.com/kbroker/kbroker/replication/controller"
	"github.com/kbroker/kbroker/security/acl"
	"github.com/kbroker/kbroker/security/principal"
	"github.com/kbroker/kbroker/security/sasl/scram"
	"github.com/kbroker/kbroker/security/session"
	"github.com/kbroker/kbroker/security/tlsconf"
)

// brokerSecurity is this node's security, built from the config at start:
// the listeners' TLS and SASL, the clients' credentials, the authorizer and
// the SCRAM credentials of the metadata image. Its fields are set once by
// newBrokerSecurity; the ACLs and credentials follow the image
// (applyImage) without a lock.
type brokerSecurity struct {
	log       *slog.Logger
	listeners map[string]*listenerSetup // by listener name, controller listener included
	// interBroker dials other brokers' inter-broker listener (replica
	// fetchers); controllerClient dials the controller quorum.
	interBroker, controllerClient protocol.ClientSecurity
	authz                         *acl.Authorizer // nil: no authorizer
	image                         atomic.Pointer[controller.Image]

	dynamic dynamicTLS // listener SSL configs set with AlterConfigs
}

// newBrokerSecurity builds the security of every listener of cfg.
func newBrokerSecurity(ctx context.Context, cfg *config.Config, log *slog.Logger, m *metrics, now func() time.Time) (*brokerSecurity, error) {
	s := &brokerSecurity{log: log, listeners: map[string]*listenerSetup{}}
	s.dynamic.init(cfg)
	if cfg.AuthorizerClassName != "" {
		s.authz = acl.NewAuthorizer(acl.Config{SuperUsers: acl.ParseSuperUsers(cfg.SuperUsers), AllowEveryoneIfNoACLFound: cfg.AllowEveryoneIfNoACLFound},
			acl.Options{Log: log.With("logger", "kafka.authorizer.logger"), OnDeny: m.onDeny})
	}
	opts := securitySetupOptions{log: log, scram: imageScramStore{&s.image}, now: now, fs: tlsconf.OSFS{}}
	names := map[string]bool{controllerListenerName(cfg): true}
	for _, l := range cfg.Listeners {
		names[l.Name] = true
	}
	for name := range names {
		ls, err := newListenerSetup(ctx, cfg, name, opts)
		if err != nil {
			return nil, err
		}
		s.listeners[name] = ls
	}
	if err := s.clients(cfg); err != nil {
		return nil, err
	}
	s.warnAnonymousPeers(cfg)
	return s, nil
}

// warnAnonymousPeers says when the authorizer will see this node's peers
// as User:ANONYMOUS (a PLAINTEXT inter-broker or controller listener): as
// in Kafka, they then need CLUSTER_ACTION, or the cluster does not form.
func (s *brokerSecurity) warnAnonymousPeers(cfg *config.Config) {
	if s.authz == nil {
		return
	}
	supers := acl.ParseSuperUsers(cfg.SuperUsers)
	for _, name := range []string{cfg.InterBrokerListenerName, controllerListenerName(cfg)} {
		if ls := s.listeners[name]; ls != nil && ls.protocol == session.Plaintext && !slices.Contains(supers, "User:ANONYMOUS") {
			s.log.Warn("the authorizer is on and this listener is PLAINTEXT: other nodes reach it as User:ANONYMOUS, "+
				"which needs CLUSTER_ACTION on the cluster (an ACL, or super.users=User:ANONYMOUS) or a secured listener",
				"listener", name)
		}
	}
}

// clients sets the credentials of this node's own connections.
func (s *brokerSecurity) clients(cfg *config.Config) error {
	var err error
	if cfg.HasRole(config.RoleBroker) {
		ib := cfg.InterBrokerListenerName
		s.interBroker, err = clientSecurity(cfg, ib, cfg.SaslMechanismInterBrokerProtocol,
			"sasl.mechanism.inter.broker.protocol", s.reloader(ib), tlsconf.OSFS{})
		if err != nil {
			return fmt.Errorf("inter-broker listener %s: %w", ib, err)
		}
	}
	cl := controllerListenerName(cfg)
	if err := checkControllerMechanism(s.listeners[cl].protocol, cfg.SaslMechanismControllerProtocol); err != nil {
		return err
	}
	s.controllerClient, err = clientSecurity(cfg, cl, cfg.SaslMechanismControllerProtocol,
		"sasl.mechanism.controller.protocol", s.reloader(cl), tlsconf.OSFS{})
	if err != nil {
		return fmt.Errorf("controller listener %s: %w", cl, err)
	}
	return nil
}

func (s *brokerSecurity) reloader(listener string) *tlsconf.Reloader {
	if ls := s.listeners[listener]; ls != nil {
		return ls.tls
	}
	return nil
}

// serverListeners is what protocol serves the client listeners with.
func (s *brokerSecurity) serverListeners() map[string]protocol.ListenerSecurity {
	out := make(map[string]protocol.ListenerSecurity, len(s.listeners))
	for name, ls := range s.listeners {
		out[name] = ls.sec
	}
	return out
}

// controllerSecurity secures this node's share of the metadata quorum.
func (s *brokerSecurity) controllerSecurity(cfg *config.Config, onFailure func(protocol.AuthFailure)) controller.Security {
	ls := s.listeners[controllerListenerName(cfg)]
	out := controller.Security{Listener: ls.sec, Client: s.controllerClient, TLS: ls.sec.TLS, OnAuthFailure: onFailure}
	if s.authz != nil {
		out.AuthorizeCaller = s.authorizeController
	}
	return out
}

// authorizeController lets brokers and controllers (CLUSTER_ACTION on the
// cluster, or super users) use the controller listener; DescribeQuorum
// also takes DESCRIBE, as in Kafka.
func (s *brokerSecurity) authorizeController(p principal.Principal, remote net.Addr, key int16) bool {
	req := acl.Request{Principal: p, Host: remoteHost(remote), API: "Raft"}
	if key >= 0 {
		req.API = apiName(key)
	}
	act := acl.Action{Operation: acl.OpClusterAction, Type: acl.ResourceCluster, Name: acl.ClusterName, RefCount: 1, LogIfDenied: true}
	if key == 55 { // DescribeQuorum
		act.LogIfDenied = false
		if s.authz.Allowed(req, act) {
			return true
		}
		act.Operation, act.LogIfDenied = acl.OpDescribe, true
	}
	return s.authz.Allowed(req, act)
}

// applyImage follows the metadata image: the authorizer's ACLs, the SCRAM
// credentials, and listener SSL configs changed with AlterConfigs.
func (s *brokerSecurity) applyImage(prev, next *controller.Image, nodeID int32) {
	s.image.Store(next)
	if s.authz != nil && (next.ACLSet != prev.ACLSet || s.authz.ACLs() == nil) {
		set := next.ACLSet
		if set == nil {
			set = acl.NewSet(nil)
		}
		s.authz.SetACLs(set)
	}
	s.dynamic.apply(s, next, nodeID)
}

// runReloads checks the listeners' store files every interval until ctx
// ends, so that a renewed certificate is served without a restart.
func (s *brokerSecurity) runReloads(ctx context.Context, wg *sync.WaitGroup, interval time.Duration) {
	for name, ls := range s.listeners {
		if ls.tls == nil || interval <= 0 {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := time.NewTicker(interval)
			defer t.Stop()
			ls.tls.Run(ctx, t.C)
			s.log.Debug("certificate reloads stopped", "listener", name)
		}()
	}
}

// imageScramStore reads SCRAM credentials from the latest image.
type imageScramStore struct {
	img *atomic.Pointer[controller.Image]
}

func (st imageScramStore) Credential(m scram.Mechanism, user string) (scram.Credential, bool) {
	img := st.img.Load()
	if img == nil {
		return scram.Credential{}, false
	}
	return img.Credential(m, user)
}

// startSecurity builds the listeners' security and starts the certificate
// reloads; the broker does not start when a listener is misconfigured.
func (b *Broker) startSecurity(ctx context.Context) error {
	sec, err := newBrokerSecurity(ctx, b.cfg, b.logger.With("component", "security"), b.metrics, b.now)
	if err != nil {
		return fmt.Errorf("security: %w", err)
	}
	b.sec, b.authz = sec, sec.authz
	rctx, cancel := context.WithCancel(context.Background())
	b.stopSec = cancel
	sec.runReloads(rctx, &b.wg, b.cfg.SSLStoreReloadInterval)
	return nil
}

// applySecurityImage is the image subscriber of brokerSecurity.
func (b *Broker) applySecurityImage(prev, next *controller.Image) {
	b.sec.applyImage(prev, next, b.cfg.NodeID)
}

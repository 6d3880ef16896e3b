package broker

import (
	"crypto/x509/pkix"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kbroker/kbroker/config"
	"github.com/kbroker/kbroker/replication/controller"
	"github.com/kbroker/kbroker/security/devca"
	"github.com/kbroker/kbroker/security/session"
	"github.com/kbroker/kbroker/security/tlsconf"
)

// AlterConfigs of a listener's SSL keystore (per broker or cluster-wide)
// installs the new certificate for the next handshakes; a refused one
// (another subject) keeps the old.
func TestDynamicListenerKeystore(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	ca, err := devca.NewCA("ca", now, time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}
	keystore := func(name, cn string) string {
		kp, err := ca.Issue(devca.Leaf{Subject: pkix.Name{CommonName: cn}, IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, Server: true, Validity: time.Hour}, now)
		if err != nil {
			t.Fatal(err)
		}
		ks, _ := kp.KeystorePEM("")
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, ks, 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	first, second, other := keystore("a.pem", "broker"), keystore("b.pem", "broker"), keystore("c.pem", "someone-else")
	cfg := config.Defaults()
	cfg.Security = map[string]string{"ssl.keystore.location": first}
	r, err := tlsconf.NewReloader(tlsconf.FromConfig(cfg.Property, "SSL"), tlsconf.OSFS{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := &brokerSecurity{log: slog.New(slog.DiscardHandler), listeners: map[string]*listenerSetup{
		"SSL": {name: "SSL", protocol: session.SSL, tls: r},
	}}
	s.dynamic.init(cfg)
	serial := func() string { return r.Material().Certificate.Leaf.SerialNumber.String() }
	before := serial()
	img := &controller.Image{BrokerConfigs: map[string]map[string]string{"1": {"listener.name.ssl.ssl.keystore.location": second}}}
	s.dynamic.apply(s, img, 1)
	if serial() == before {
		t.Fatal("the dynamic keystore was not installed")
	}
	installed := serial()
	img = &controller.Image{BrokerConfigs: map[string]map[string]string{"": {"ssl.keystore.location": other}}}
	s.dynamic.apply(s, img, 1)
	if serial() != installed {
		t.Fatal("a keystore with another subject replaced the certificate (ssl.allow.dn.changes is false)")
	}
}

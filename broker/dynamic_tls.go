package broker

import (
	"reflect"
	"strconv"

	"github.com/kbroker/kbroker/config"
	"github.com/kbroker/kbroker/replication/controller"
	"github.com/kbroker/kbroker/security/tlsconf"
)

// dynamicTLS is Kafka's dynamic listener reconfiguration for SSL: when
// AlterConfigs (or IncrementalAlterConfigs) sets listener.name.<l>.ssl.* or
// ssl.* on this broker (resource "<node.id>") or cluster-wide (resource
// ""), the listener's reloader installs the new keystore or truststore for
// the next handshakes, with tlsconf's checks (a new certificate keeps the
// subject and SANs unless ssl.allow.dn.changes / ssl.allow.san.changes).
// A per-broker value overrides a cluster-wide one, which overrides the
// static config. A refused update keeps the current material and is
// logged. It runs on the image goroutine only.
type dynamicTLS struct {
	cfg  *config.Config
	last map[string]tlsconf.Settings // by listener: what the reloader has
}

func (d *dynamicTLS) init(cfg *config.Config) {
	d.cfg, d.last = cfg, map[string]tlsconf.Settings{}
}

// apply updates the reloaders whose settings the image changes.
func (d *dynamicTLS) apply(s *brokerSecurity, img *controller.Image, nodeID int32) {
	dyn := map[string]string{}
	for _, resource := range []string{"", strconv.Itoa(int(nodeID))} {
		for k, v := range img.BrokerConfigs[resource] {
			dyn[k] = v
		}
	}
	get := func(key string) (string, bool) {
		if v, ok := dyn[key]; ok {
			return v, true
		}
		return d.cfg.Property(key)
	}
	for name, ls := range s.listeners {
		if ls.tls == nil {
			continue
		}
		want := tlsconf.FromConfig(get, name)
		last, ok := d.last[name]
		if !ok {
			last = tlsconf.FromConfig(d.cfg.Property, name)
		}
		if reflect.DeepEqual(want, last) {
			d.last[name] = last
			continue
		}
		if err := ls.tls.Update(want); err != nil {
			s.log.Warn("dynamic SSL config refused; the listener keeps its certificates", "listener", name, "err", err)
		} else {
			s.log.Info("listener SSL config updated dynamically", "listener", name)
		}
		d.last[name] = want // do not retry a refused change on every image
	}
}

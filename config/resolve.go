package config

import (
	"errors"
	"fmt"
	"time"
)

// build makes a Config from the keys that were set (nil: none) over the
// table's defaults. Every set key is parsed, so a bad value is reported
// even when a synonym wins; range checks of keys that own a field are left
// to Validate, which checks the fields. hostname names this machine for
// advertised.listeners' default.
func build(set map[string]origin, hostname func() string) (*Config, error) {
	c := &Config{origin: set, Security: map[string]string{}}
	for name, o := range set {
		if classify(name) == classSecurity {
			c.Security[name] = o.raw
		}
	}
	var errs []error
	parsed := map[string]any{}
	for i := range keyTable {
		k := &keyTable[i]
		o, ok := set[k.Name]
		if !ok {
			continue
		}
		v, err := k.parse(o.raw)
		if err == nil && k.SynonymOf != "" {
			err = k.validate(o.raw, v)
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		parsed[k.Name] = v
	}
	for i := range keyTable {
		if k := &keyTable[i]; k.SynonymOf == "" {
			errs = append(errs, c.applyGroup(k, set, parsed))
		}
	}
	errs = append(errs, sameIfBothSet(set, parsed, "node.id", "broker.id"))
	if c.LogRetentionMs < 0 {
		c.LogRetentionMs = -time.Millisecond // any negative retention means unlimited, as in Kafka
	}
	c.deriveDefaults(set, hostname)
	return c, errors.Join(errs...)
}

// applyGroup sets the field of key k from the highest-precedence name of
// its group (k, then its synonyms) that was set, or else from the first
// default in the group. A set value that failed to parse (already
// reported) leaves the default, so that Validate does not report it again.
func (c *Config) applyGroup(k *Key, set map[string]origin, parsed map[string]any) error {
	group := append([]*Key{k}, synonymsOf(k.Name)...)
	for _, g := range group {
		if _, ok := set[g.Name]; !ok {
			continue
		}
		if v, ok := parsed[g.Name]; ok {
			setValue(g.field(c), v, g.unit())
			return nil
		}
		break
	}
	for _, g := range group {
		if !g.NoDefault {
			return g.setRaw(c, g.Default)
		}
	}
	return nil
}

// synonymsOf returns the table's synonyms of name, highest precedence first.
func synonymsOf(name string) []*Key {
	var out []*Key
	for i := range keyTable {
		if keyTable[i].SynonymOf == name {
			out = append(out, &keyTable[i])
		}
	}
	return out
}

// groupSource is where the value of key k's field came from: the source of
// the name of its group that won, or SourceDefault.
func (c *Config) groupSource(k *Key) Source {
	for _, name := range append([]string{k.Name}, k.synonymNames()...) {
		if o, ok := c.origin[name]; ok {
			return o.source
		}
	}
	return SourceDefault
}

func (k *Key) synonymNames() []string {
	var out []string
	for _, s := range synonymsOf(k.Name) {
		out = append(out, s.Name)
	}
	return out
}

// sameIfBothSet refuses two names of one setting set to different values
// (Kafka: node.id and broker.id must match).
func sameIfBothSet(set map[string]origin, parsed map[string]any, a, b string) error {
	va, okA := parsed[a]
	vb, okB := parsed[b]
	if okA && okB && va != vb {
		return fmt.Errorf("config: %s=%s and %s=%s differ: they name the same setting, set only one",
			a, set[a].raw, b, set[b].raw)
	}
	return nil
}

// deriveDefaults fills the fields whose default depends on other keys,
// unless set names the key.
func (c *Config) deriveDefaults(set map[string]origin, hostname func() string) {
	if _, ok := set["log.flush.interval.ms"]; !ok {
		c.LogFlushIntervalMs = c.LogFlushSchedulerInterval
	}
	_, ibl := set["inter.broker.listener.name"]
	if _, sibp := set["security.inter.broker.protocol"]; sibp && !ibl {
		// Kafka: without inter.broker.listener.name, the inter-broker
		// listener is the one named like security.inter.broker.protocol.
		c.InterBrokerListenerName = c.SecurityInterBrokerProtocol
	}
	if _, ok := set["advertised.listeners"]; !ok {
		c.AdvertisedListeners = c.deriveAdvertised(hostname)
	}
}

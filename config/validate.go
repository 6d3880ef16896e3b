package config

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Validate checks every field against its key's range, and the rules that
// tie keys together (listeners, the quorum, timeouts). All problems are
// reported, joined; each names the key, the bad value and what is allowed.
func (c *Config) Validate() error {
	var errs []error
	for i := range keyTable {
		k := &keyTable[i]
		if k.SynonymOf != "" {
			continue // checked when parsed; the field belongs to its main key
		}
		v := k.current(c)
		errs = append(errs, k.validate(formatValue(v), v))
	}
	errs = append(errs, c.validateListeners()...)
	errs = append(errs, c.validateQuorum()...)
	errs = append(errs, c.validateTimeouts()...)
	errs = append(errs, c.validateSecurity()...)
	if len(c.LogDirs) == 0 {
		errs = append(errs, errors.New("config: log.dirs is empty: at least one data directory is required"))
	}
	return errors.Join(errs...)
}

func (c *Config) validateListeners() []error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf("config: "+format, args...)) }
	listeners := formatValue(c.Listeners)
	if len(c.Listeners) == 0 {
		add("listeners is empty: at least one NAME://host:port is required")
	}
	for proto := range c.ListenerSecurityProtocolMap {
		if p := c.ListenerSecurityProtocolMap[proto]; !slices.Contains(securityProtocols, p) {
			add("listener.security.protocol.map=%s is invalid: %q is not one of %s",
				formatValue(c.ListenerSecurityProtocolMap), p, strings.Join(securityProtocols, ", "))
		}
	}
	seenName, seenAddr := map[string]bool{}, map[string]bool{}
	for _, l := range c.Listeners {
		if l.Port < 0 || l.Port > 65535 {
			add("listeners=%s is invalid: port %d of %s is not in [0, 65535]", listeners, l.Port, l.Name)
		}
		if seenName[l.Name] {
			add("listeners=%s is invalid: listener name %s appears twice", listeners, l.Name)
		}
		if seenAddr[l.Address()] && l.Port != 0 {
			add("listeners=%s is invalid: two listeners use %s", listeners, l.Address())
		}
		seenName[l.Name], seenAddr[l.Address()] = true, true
		if _, ok := c.ListenerSecurityProtocolMap[l.Name]; !ok {
			add("listener.security.protocol.map has no entry for listener %s (listeners=%s)", l.Name, listeners)
		}
	}
	for _, a := range c.AdvertisedListeners {
		if !seenName[a.Name] {
			add("advertised.listeners=%s is invalid: %s is not a listener name (listeners=%s)", formatValue(c.AdvertisedListeners), a.Name, listeners)
		}
		if a.wildcard() {
			add("advertised.listeners=%s is invalid: %s has host %q, which clients cannot connect to; give a routable host",
				formatValue(c.AdvertisedListeners), a.Name, a.Host)
		}
	}
	return append(errs, c.validateListenerRoles(listeners)...)
}

// validateListenerRoles checks the listeners each role needs.
func (c *Config) validateListenerRoles(listeners string) []error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf("config: "+format, args...)) }
	_, hasController := c.ControllerListener()
	if c.HasRole(RoleBroker) {
		if c.ClientListener() == (Listener{}) {
			add("listeners=%s has no listener outside controller.listener.names=%s, which a broker needs",
				listeners, formatValue(c.ControllerListenerNames))
		}
		if !slices.ContainsFunc(c.Listeners, func(l Listener) bool { return l.Name == c.InterBrokerListenerName }) {
			add("inter.broker.listener.name=%s does not name a listener (listeners=%s)", c.InterBrokerListenerName, listeners)
		} else if c.IsControllerListener(c.InterBrokerListenerName) {
			add("inter.broker.listener.name=%s is a controller listener; brokers must talk on another one", c.InterBrokerListenerName)
		}
	}
	if c.HasRole(RoleController) && len(c.ControllerListenerNames) == 0 {
		add("controller.listener.names is empty: a controller needs a listener name")
	}
	if !c.HasRole(RoleController) && hasController {
		add("listeners=%s is invalid: a node whose process.roles has no controller must not listen on a controller listener (%s)",
			listeners, formatValue(c.ControllerListenerNames))
	}
	return errs
}

func (c *Config) validateQuorum() []error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf("config: "+format, args...)) }
	voters := formatValue(c.ControllerQuorumVoters)
	ids := map[int32]bool{}
	for _, v := range c.ControllerQuorumVoters {
		if ids[v.ID] {
			add("controller.quorum.voters=%s is invalid: voter id %d appears twice", voters, v.ID)
		}
		ids[v.ID] = true
		if v.Host == "" || v.Port <= 0 || v.Port > 65535 {
			add("controller.quorum.voters=%s is invalid: voter %d needs a host and a port in [1, 65535]", voters, v.ID)
		}
	}
	switch {
	case len(ids) > 0 && c.HasRole(RoleController) && !c.HasRole(RoleBroker) && !ids[c.NodeID]:
		add("node.id=%d is not in controller.quorum.voters=%s: a controller must be one of the voters", c.NodeID, voters)
	case len(ids) > 0 && c.HasRole(RoleController) && !ids[c.NodeID] && !c.hasExplicitControllerListener():
		// A combined node outside the voters joins the quorum as a non-voter
		// and needs a listener of its own for the metadata log.
		add("node.id=%d is not in controller.quorum.voters=%s: a broker that joins the quorum as a non-voter needs a listener named in controller.listener.names=%s",
			c.NodeID, voters, formatValue(c.ControllerListenerNames))
	case len(ids) == 0 && !c.HasRole(RoleController) && c.HasRole(RoleBroker):
		add("controller.quorum.voters is empty: a node whose process.roles=%s has no controller needs it to find the controllers",
			formatValue(c.ProcessRoles))
	}
	if l, implicit, ok := c.controllerEndpoint(); ok && implicit {
		client := c.ClientListener()
		switch {
		case client == (Listener{}):
			add("listeners=%s has no controller listener: a controller needs one named in controller.listener.names=%s",
				formatValue(c.Listeners), formatValue(c.ControllerListenerNames))
		case client.Port == 0 || l.Port > 65535:
			add("listeners=%s has no controller listener, and the implicit one (client port %d + %d) is not usable: add a %s listener or set controller.quorum.voters",
				formatValue(c.Listeners), client.Port, implicitControllerPortOffset, l.Name)
		}
	}
	return errs
}

// validateTimeouts checks the order Kafka requires between related timeouts.
func (c *Config) validateTimeouts() []error {
	var errs []error
	less := func(a string, av time.Duration, b string, bv time.Duration, orEqual bool) {
		if av > bv || (av == bv && !orEqual) {
			rel := "less than"
			if orEqual {
				rel = "at most"
			}
			errs = append(errs, fmt.Errorf("config: %s=%d must be %s %s=%d", a, av.Milliseconds(), rel, b, bv.Milliseconds()))
		}
	}
	less("broker.heartbeat.interval.ms", c.BrokerHeartbeatInterval, "broker.session.timeout.ms", c.BrokerSessionTimeout, false)
	less("replica.fetch.wait.max.ms", c.ReplicaFetchWaitMax, "replica.lag.time.max.ms", c.ReplicaLagTimeMax, true)
	less("group.min.session.timeout.ms", c.GroupMinSessionTimeout, "group.max.session.timeout.ms", c.GroupMaxSessionTimeout, true)
	less("group.consumer.min.session.timeout.ms", c.GroupConsumerMinSessionTimeout, "group.consumer.session.timeout.ms", c.GroupConsumerSessionTimeout, true)
	less("group.consumer.session.timeout.ms", c.GroupConsumerSessionTimeout, "group.consumer.max.session.timeout.ms", c.GroupConsumerMaxSessionTimeout, true)
	less("group.consumer.min.heartbeat.interval.ms", c.GroupConsumerMinHeartbeatInterval, "group.consumer.heartbeat.interval.ms", c.GroupConsumerHeartbeatInterval, true)
	less("group.consumer.heartbeat.interval.ms", c.GroupConsumerHeartbeatInterval, "group.consumer.max.heartbeat.interval.ms", c.GroupConsumerMaxHeartbeatInterval, true)
	less("group.consumer.heartbeat.interval.ms", c.GroupConsumerHeartbeatInterval, "group.consumer.session.timeout.ms", c.GroupConsumerSessionTimeout, false)
	less("group.share.min.session.timeout.ms", c.GroupShareMinSessionTimeout, "group.share.session.timeout.ms", c.GroupShareSessionTimeout, true)
	less("group.share.session.timeout.ms", c.GroupShareSessionTimeout, "group.share.max.session.timeout.ms", c.GroupShareMaxSessionTimeout, true)
	less("group.share.min.heartbeat.interval.ms", c.GroupShareMinHeartbeatInterval, "group.share.heartbeat.interval.ms", c.GroupShareHeartbeatInterval, true)
	less("group.share.heartbeat.interval.ms", c.GroupShareHeartbeatInterval, "group.share.max.heartbeat.interval.ms", c.GroupShareMaxHeartbeatInterval, true)
	less("group.share.heartbeat.interval.ms", c.GroupShareHeartbeatInterval, "group.share.session.timeout.ms", c.GroupShareSessionTimeout, false)
	less("group.share.min.record.lock.duration.ms", c.GroupShareMinRecordLockDuration, "group.share.record.lock.duration.ms", c.GroupShareRecordLockDuration, true)
	less("group.share.record.lock.duration.ms", c.GroupShareRecordLockDuration, "group.share.max.record.lock.duration.ms", c.GroupShareMaxRecordLockDuration, true)
	errs = append(errs, c.validateShareCounts()...)
	return errs
}

// hasExplicitControllerListener reports whether listeners names a controller
// listener.
func (c *Config) hasExplicitControllerListener() bool {
	for _, l := range c.Listeners {
		if c.IsControllerListener(l.Name) {
			return true
		}
	}
	return false
}

// validateShareCounts checks that each share-group count default lies in
// its bounds, as Kafka's ShareGroupConfig does.
func (c *Config) validateShareCounts() []error {
	var errs []error
	within := func(name string, v int32, minName string, lo int32, maxName string, hi int32) {
		if v < lo || v > hi {
			errs = append(errs, fmt.Errorf("config: %s=%d must be between %s=%d and %s=%d", name, v, minName, lo, maxName, hi))
		}
	}
	within("group.share.delivery.count.limit", c.GroupShareDeliveryCountLimit,
		"group.share.min.delivery.count.limit", c.GroupShareMinDeliveryCountLimit, "group.share.max.delivery.count.limit", c.GroupShareMaxDeliveryCountLimit)
	within("group.share.partition.max.record.locks", c.GroupSharePartitionMaxRecordLocks,
		"group.share.min.partition.max.record.locks", c.GroupShareMinPartitionMaxRecordLocks, "group.share.max.partition.max.record.locks", c.GroupShareMaxPartitionMaxRecordLocks)
	return errs
}

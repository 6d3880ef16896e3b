package shareconfig

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The group-level config names (Kafka's GroupConfig.SHARE_*_CONFIG).
const (
	SessionTimeoutMs        = "share.session.timeout.ms"
	HeartbeatIntervalMs     = "share.heartbeat.interval.ms"
	RecordLockDurationMs    = "share.record.lock.duration.ms"
	DeliveryCountLimit      = "share.delivery.count.limit"
	PartitionMaxRecordLocks = "share.partition.max.record.locks"
	AutoOffsetReset         = "share.auto.offset.reset"
	IsolationLevel          = "share.isolation.level"
	RenewAcknowledgeEnable  = "share.renew.acknowledge.enable"
)

// Isolation levels, as share.isolation.level spells them.
const (
	ReadUncommitted = "read_uncommitted"
	ReadCommitted   = "read_committed"
)

// ErrInvalid wraps every validation failure; the broker answers it with
// INVALID_CONFIG and the error's text.
var ErrInvalid = errors.New("invalid share group config")

// Range is an inclusive integer bound with the broker config names that
// set it, for error messages.
type Range struct {
	Min, Max         int32
	MinName, MaxName string
}

func (r Range) clamp(v int32) int32 { return min(max(v, r.Min), r.Max) }

// Bounds are the broker-level share-group configs: the defaults a group
// without its own value gets and the range a group value must lie in.
type Bounds struct {
	SessionTimeoutMs        int32 // group.share.session.timeout.ms
	HeartbeatIntervalMs     int32 // group.share.heartbeat.interval.ms
	RecordLockDurationMs    int32 // group.share.record.lock.duration.ms
	DeliveryCountLimit      int32 // group.share.delivery.count.limit
	PartitionMaxRecordLocks int32 // group.share.partition.max.record.locks

	SessionTimeout, HeartbeatInterval, RecordLockDuration, DeliveryCount, RecordLocks Range
}

// DefaultBounds returns Kafka 4.2's broker defaults.
func DefaultBounds() Bounds {
	return Bounds{
		SessionTimeoutMs:        45000,
		HeartbeatIntervalMs:     5000,
		RecordLockDurationMs:    30000,
		DeliveryCountLimit:      5,
		PartitionMaxRecordLocks: 2000,
		SessionTimeout:          Range{45000, 60000, "group.share.min.session.timeout.ms", "group.share.max.session.timeout.ms"},
		HeartbeatInterval:       Range{5000, 15000, "group.share.min.heartbeat.interval.ms", "group.share.max.heartbeat.interval.ms"},
		RecordLockDuration:      Range{15000, 60000, "group.share.min.record.lock.duration.ms", "group.share.max.record.lock.duration.ms"},
		DeliveryCount:           Range{2, 10, "group.share.min.delivery.count.limit", "group.share.max.delivery.count.limit"},
		RecordLocks:             Range{100, 10000, "group.share.min.partition.max.record.locks", "group.share.max.partition.max.record.locks"},
	}
}

// Config is a share group's effective configuration.
type Config struct {
	SessionTimeout          time.Duration
	HeartbeatInterval       time.Duration
	RecordLockDuration      time.Duration
	DeliveryCountLimit      int16
	PartitionMaxRecordLocks int32
	AutoOffsetReset         Reset
	ReadCommitted           bool
	RenewAcknowledge        bool
}

// Defaults is the configuration of a group that set nothing.
func (b Bounds) Defaults() Config {
	return Config{
		SessionTimeout:          msDuration(b.SessionTimeoutMs),
		HeartbeatInterval:       msDuration(b.HeartbeatIntervalMs),
		RecordLockDuration:      msDuration(b.RecordLockDurationMs),
		DeliveryCountLimit:      int16(b.DeliveryCountLimit),
		PartitionMaxRecordLocks: b.PartitionMaxRecordLocks,
		AutoOffsetReset:         Reset{Strategy: Latest},
		RenewAcknowledge:        true,
	}
}

// intConfig describes one integer config: its default and bound in b.
type intConfig struct {
	def func(Bounds) int32
	rng func(Bounds) Range
	min int32 // Kafka's ConfigDef atLeast
}

var intConfigs = map[string]intConfig{
	SessionTimeoutMs:        {func(b Bounds) int32 { return b.SessionTimeoutMs }, func(b Bounds) Range { return b.SessionTimeout }, 1},
	HeartbeatIntervalMs:     {func(b Bounds) int32 { return b.HeartbeatIntervalMs }, func(b Bounds) Range { return b.HeartbeatInterval }, 1},
	RecordLockDurationMs:    {func(b Bounds) int32 { return b.RecordLockDurationMs }, func(b Bounds) Range { return b.RecordLockDuration }, 1000},
	DeliveryCountLimit:      {func(b Bounds) int32 { return b.DeliveryCountLimit }, func(b Bounds) Range { return b.DeliveryCount }, 2},
	PartitionMaxRecordLocks: {func(b Bounds) int32 { return b.PartitionMaxRecordLocks }, func(b Bounds) Range { return b.RecordLocks }, 100},
}

// Names lists every share.* group config, sorted.
func Names() []string {
	names := []string{AutoOffsetReset, IsolationLevel, RenewAcknowledgeEnable}
	for n := range intConfigs {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// IsShareConfig reports whether name is one of this package's configs.
func IsShareConfig(name string) bool {
	_, ok := intConfigs[name]
	return ok || name == AutoOffsetReset || name == IsolationLevel || name == RenewAcknowledgeEnable
}

// Validate checks a group's share.* configs (the stored ones merged with
// the change) the way Kafka's GroupConfig.validate does: known names,
// parsable values within the broker bounds, and a session timeout greater
// than the heartbeat interval. Names that are not share configs are the
// caller's (consumer.*, streams.*) and are ignored.
func Validate(props map[string]string, b Bounds) error {
	for name, v := range props {
		if err := validateOne(name, v, b); err != nil {
			return err
		}
	}
	session := intValue(props, SessionTimeoutMs, b.SessionTimeoutMs)
	heartbeat := intValue(props, HeartbeatIntervalMs, b.HeartbeatIntervalMs)
	if session <= heartbeat {
		return fmt.Errorf("%w: %s must be greater than %s", ErrInvalid, SessionTimeoutMs, HeartbeatIntervalMs)
	}
	return nil
}

func validateOne(name, v string, b Bounds) error {
	if ic, ok := intConfigs[name]; ok {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
		switch {
		case err != nil:
			return fmt.Errorf("%w: invalid value %q for configuration %s: not a number", ErrInvalid, v, name)
		case int32(n) < ic.min:
			return fmt.Errorf("%w: invalid value %d for configuration %s: value must be at least %d", ErrInvalid, n, name, ic.min)
		}
		r := ic.rng(b)
		if int32(n) < r.Min {
			return fmt.Errorf("%w: %s must be greater than or equal to %s", ErrInvalid, name, r.MinName)
		}
		if int32(n) > r.Max {
			return fmt.Errorf("%w: %s must be less than or equal to %s", ErrInvalid, name, r.MaxName)
		}
		return nil
	}
	switch name {
	case AutoOffsetReset:
		if _, err := ParseAutoOffsetReset(v); err != nil {
			return fmt.Errorf("%w: invalid value %q for configuration %s: %v", ErrInvalid, v, name, err)
		}
	case IsolationLevel:
		if v != ReadCommitted && v != ReadUncommitted {
			return fmt.Errorf("%w: invalid value %q for configuration %s: string must be one of: %s, %s", ErrInvalid, v, name, ReadCommitted, ReadUncommitted)
		}
	case RenewAcknowledgeEnable:
		if _, err := parseBool(v); err != nil {
			return fmt.Errorf("%w: invalid value %q for configuration %s: expected value to be either true or false", ErrInvalid, v, name)
		}
	}
	return nil
}

// Effective returns a group's configuration: its stored values clamped into
// the broker bounds (Kafka's GroupConfig.evaluate), the broker defaults for
// the rest. A stored value that no longer parses falls back to the default:
// Validate kept it out when it was stored.
func Effective(props map[string]string, b Bounds) Config {
	c := b.Defaults()
	c.SessionTimeout = msDuration(b.SessionTimeout.clamp(intValue(props, SessionTimeoutMs, b.SessionTimeoutMs)))
	c.HeartbeatInterval = msDuration(b.HeartbeatInterval.clamp(intValue(props, HeartbeatIntervalMs, b.HeartbeatIntervalMs)))
	c.RecordLockDuration = msDuration(b.RecordLockDuration.clamp(intValue(props, RecordLockDurationMs, b.RecordLockDurationMs)))
	c.DeliveryCountLimit = int16(b.DeliveryCount.clamp(intValue(props, DeliveryCountLimit, b.DeliveryCountLimit)))
	c.PartitionMaxRecordLocks = b.RecordLocks.clamp(intValue(props, PartitionMaxRecordLocks, b.PartitionMaxRecordLocks))
	if r, err := ParseAutoOffsetReset(props[AutoOffsetReset]); err == nil && props[AutoOffsetReset] != "" {
		c.AutoOffsetReset = r
	}
	c.ReadCommitted = props[IsolationLevel] == ReadCommitted
	if v, err := parseBool(props[RenewAcknowledgeEnable]); err == nil {
		c.RenewAcknowledge = v
	}
	return c
}

func intValue(props map[string]string, name string, def int32) int32 {
	v, ok := props[name]
	if !ok {
		return def
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
	if err != nil {
		return def
	}
	return int32(n)
}

func parseBool(v string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, errors.New("not a boolean")
}

// Entry is one config as DescribeConfigs shows it.
type Entry struct {
	Name, Value string
	IsDefault   bool // not set on the group: the broker default
}

// Describe lists every share config of a group with its value, as
// DescribeConfigs of the GROUP resource shows them (source
// GROUP_CONFIG when set, DEFAULT_CONFIG otherwise).
func Describe(props map[string]string, b Bounds) []Entry {
	defaults := map[string]string{
		AutoOffsetReset:        "latest",
		IsolationLevel:         ReadUncommitted,
		RenewAcknowledgeEnable: "true",
	}
	for n, ic := range intConfigs {
		defaults[n] = strconv.Itoa(int(ic.def(b)))
	}
	out := make([]Entry, 0, len(defaults))
	for _, n := range Names() {
		if v, ok := props[n]; ok {
			out = append(out, Entry{Name: n, Value: v})
			continue
		}
		out = append(out, Entry{Name: n, Value: defaults[n], IsDefault: true})
	}
	return out
}

func msDuration(ms int32) time.Duration { return time.Duration(ms) * time.Millisecond }

package config

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Kafka's dynamic broker configs (DynamicBrokerConfig.AllDynamicConfigs
// and the quota configs of DynamicConfig.Broker): IncrementalAlterConfigs
// and AlterConfigs may set them on one broker (resource "<node.id>") or
// cluster-wide (resource ""), and DescribeConfigs reports them. The keys of
// the key table marked Dynamic are the ones kbroker acts on; dynamicKeys
// below are the rest of Kafka's set: thread pools, the log cleaner's
// throughput knobs, connection limits, metric reporters, the log-dir move
// throttle. kbroker stores and reports them as Kafka does (operators and
// tools set them), and has no thread pools or cleaner I/O budget for them
// to resize.
//
// To add one: a line in dynamicKeys (Kafka's name, type, default and
// range); the controller accepts it and DescribeConfigs lists it.

// dynamicKey is one config of Kafka's dynamic set with no field in Config.
type dynamicKey struct {
	Name      string
	Type      Type
	Default   string
	NoDefault bool
	check     validator // on the value parsed by Type; nil: any
	Doc       string
}

// dynamicKeys: Kafka 4.0's names, types, defaults and ranges.
var dynamicKeys = []dynamicKey{
	// Thread pools (DynamicThreadPool).
	{Name: "num.io.threads", Type: TypeInt, Default: "8", check: atLeast(1),
		Doc: "Kafka's request handler threads; kbroker runs a goroutine per connection and stores the value."},
	{Name: "num.network.threads", Type: TypeInt, Default: "3", check: atLeast(1),
		Doc: "Kafka's network threads; stored."},
	{Name: "background.threads", Type: TypeInt, Default: "10", check: atLeast(1),
		Doc: "Kafka's background task threads; stored."},
	{Name: "num.replica.alter.log.dirs.threads", Type: TypeInt, NoDefault: true, check: atLeast(1),
		Doc: "Kafka's threads moving replicas between log directories; stored."},
	// The log cleaner (LogCleaner.ReconfigurableConfigs).
	{Name: "log.cleaner.threads", Type: TypeInt, Default: "1", check: atLeast(0),
		Doc: "Kafka's log cleaner threads; stored."},
	{Name: "log.cleaner.dedupe.buffer.size", Type: TypeLong, Default: "134217728", check: atLeast(0),
		Doc: "Kafka's memory for log deduplication across cleaner threads; stored."},
	{Name: "log.cleaner.io.buffer.size", Type: TypeInt, Default: "524288", check: atLeast(0),
		Doc: "Kafka's cleaner I/O buffer size; stored."},
	{Name: "log.cleaner.io.buffer.load.factor", Type: TypeDouble, Default: "0.9",
		Doc: "Kafka's cleaner dedupe buffer load factor; stored."},
	{Name: "log.cleaner.io.max.bytes.per.second", Type: TypeDouble, Default: "1.7976931348623157E308",
		Doc: "Kafka's cleaner I/O throttle; stored."},
	// Connection limits (SocketServer.ReconfigurableConfigs).
	{Name: "max.connections.per.ip", Type: TypeInt, Default: maxInt32, check: atLeast(0),
		Doc: "Kafka's connection limit per client address; stored."},
	{Name: "max.connections.per.ip.overrides", Type: TypeString, Default: "",
		Doc: "Kafka's per-address connection limits (host:count,...); stored."},
	{Name: "max.connection.creation.rate", Type: TypeInt, Default: maxInt32, check: atLeast(0),
		Doc: "Kafka's connection creation rate limit; stored."},
	// Metrics.
	{Name: "metric.reporters", Type: TypeList, Default: "",
		Doc: "Kafka's metrics reporter classes; kbroker serves Prometheus metrics and stores the value."},
	// Producer state (DynamicProducerStateManagerConfig).
	{Name: "transaction.partition.verification.enable", Type: TypeBoolean, Default: "true",
		Doc: "KIP-890 partition verification for transactional produce; stored."},
	// Replication throttles (DynamicConfig.Broker, KIP-73): the leader and
	// follower rates are typed keys (keys.go), which the throttles use.
	{Name: "replica.alter.log.dirs.io.max.bytes.per.second", Type: TypeLong, Default: maxInt64, check: atLeast(0),
		Doc: "Bytes/s for moving replicas between log directories."},
}

func dynamicKeyByName(name string) *dynamicKey {
	for i := range dynamicKeys {
		if dynamicKeys[i].Name == name {
			return &dynamicKeys[i]
		}
	}
	return nil
}

// parse parses raw by the key's Kafka type.
func (k *dynamicKey) parse(raw string) (any, error) {
	var p any
	switch k.Type {
	case TypeBoolean:
		p = new(bool)
	case TypeShort:
		p = new(int16)
	case TypeInt:
		p = new(int32)
	case TypeLong:
		p = new(int64)
	case TypeDouble:
		p = new(float64)
	case TypeList:
		p = new([]string)
	default:
		p = new(string)
	}
	v, problem := parseValue(p, k.Type, raw)
	if problem == "" && k.check != nil {
		problem = k.check(v)
	}
	if problem != "" {
		return nil, &ValueError{Key: k.Name, Value: raw, Problem: problem}
	}
	return v, nil
}

// dynamicEntries are dynamicKeys for Entries, at their defaults.
func dynamicEntries() []Entry {
	out := make([]Entry, 0, len(dynamicKeys))
	for _, k := range dynamicKeys {
		out = append(out, Entry{Name: k.Name, Value: k.Default, Null: k.NoDefault, Source: SourceDefault, Type: k.Type, Doc: k.Doc})
	}
	return out
}

// perBrokerOnly are dynamic keys Kafka refuses at the cluster-wide level
// (DynamicBrokerConfig.PerBrokerConfigs): a listener belongs to one broker.
var perBrokerOnly = []string{"listeners", "advertised.listeners", "listener.security.protocol.map"}

// clusterLevelListenerConfigs may be set cluster-wide even with a listener
// prefix (DynamicBrokerConfig.ClusterLevelListenerConfigs).
var clusterLevelListenerConfigs = []string{"max.connections", "max.connection.creation.rate", "num.network.threads"}

// reconfigurableSSL are the SSL configs Kafka reloads at run time
// (SslConfigs.RECONFIGURABLE_CONFIGS); dynamically only with a listener
// prefix.
var reconfigurableSSL = []string{
	"ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password", "ssl.key.password",
	"ssl.truststore.type", "ssl.truststore.location", "ssl.truststore.password",
	"ssl.keystore.certificate.chain", "ssl.keystore.key", "ssl.truststore.certificates",
}

// ErrPerBrokerOnly is returned, wrapped, for a key Kafka lets change only
// on one broker, asked for cluster-wide.
var ErrPerBrokerOnly = errors.New("config: Cannot update these configs at default cluster level, broker id must be specified")

// listenerBase splits listener.name.<l>.<key> into <key>.
func listenerBase(name string) (string, bool) {
	rest, ok := strings.CutPrefix(name, "listener.name.")
	if !ok {
		return "", false
	}
	_, base, ok := strings.Cut(rest, ".")
	return base, ok && base != ""
}

// ValidateBrokerConfig checks one dynamic broker config (IncrementalAlterConfigs
// or AlterConfigs on a BROKER resource; perBroker: resource "<node.id>",
// else the cluster-wide default ""), as Kafka's DynamicBrokerConfig does: a
// key of Kafka's dynamic set with a value of its type in its range;
// listener-prefixed keys (listener.name.<l>.ssl.*, .<mechanism>.sasl.jaas.config,
// ...) and the listeners themselves on one broker only; the reloadable SSL
// keys only with a listener prefix.
func ValidateBrokerConfig(name, value string, perBroker bool) error {
	if base, ok := listenerBase(name); ok {
		if !perBroker && !slices.Contains(clusterLevelListenerConfigs, base) {
			return fmt.Errorf("%w: %s", ErrPerBrokerOnly, name)
		}
		if k := keyByName(base); k != nil {
			return validateKnown(k, name, value)
		}
		return nil
	}
	if slices.Contains(reconfigurableSSL, name) {
		return fmt.Errorf("config: %s: these security configs can be dynamically updated only per-listener using the listener prefix (listener.name.<listener>.%s)", name, name)
	}
	if k := keyByName(name); k != nil {
		if !k.Dynamic {
			return fmt.Errorf("%w: %s (a restart with the new value is needed)", ErrNotDynamic, name)
		}
		if !perBroker && slices.Contains(perBrokerOnly, name) {
			return fmt.Errorf("%w: %s", ErrPerBrokerOnly, name)
		}
		return validateKnown(k, name, value)
	}
	if k := dynamicKeyByName(name); k != nil {
		_, err := k.parse(value)
		return err
	}
	if classify(name) == classUnknown {
		return fmt.Errorf("config: unknown broker config %s", name)
	}
	return fmt.Errorf("%w: %s (a restart with the new value is needed)", ErrNotDynamic, name)
}

func validateKnown(k *Key, name, value string) error {
	v, err := k.parse(value)
	if err != nil {
		return err
	}
	if err := k.validate(value, v); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// IsDynamicOnly reports whether name is a dynamic broker config that the
// static configuration does not list (dynamicKeys are listed by Entries;
// listener-prefixed keys are not): DescribeConfigs reports such a key only
// when it is set dynamically.
func IsDynamicOnly(name string) bool {
	_, ok := listenerBase(name)
	return ok
}

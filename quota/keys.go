package quota

import (
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Quota config keys (Kafka's QuotaConfig).
const (
	ProducerByteRate       = "producer_byte_rate"       // bytes/s a producer may send
	ConsumerByteRate       = "consumer_byte_rate"       // bytes/s a consumer may fetch
	RequestPercentage      = "request_percentage"       // % of one request-handler thread, per window
	ControllerMutationRate = "controller_mutation_rate" // partitions created or deleted per second
	ConnectionCreationRate = "connection_creation_rate" // new connections per second from an IP
)

// valueType is a quota key's ConfigDef type, which decides its validation.
type valueType int

const (
	typeLong valueType = iota
	typeDouble
	typeInt
)

// userAndClientKeys are QuotaConfig.userAndClientQuotaConfigs; ipKeys
// QuotaConfig.ipConfigs.
var (
	userAndClientKeys = map[string]valueType{
		ProducerByteRate:       typeLong,
		ConsumerByteRate:       typeLong,
		RequestPercentage:      typeDouble,
		ControllerMutationRate: typeDouble,
	}
	ipKeys = map[string]valueType{ConnectionCreationRate: typeInt}
)

// keysFor returns the keys an entity may set (ClientQuotaControlManager.
// configKeysForEntityType).
func keysFor(e Entity) (map[string]valueType, *Error) {
	switch {
	case e.IP.Present && (e.User.Present || e.ClientID.Present):
		return nil, invalid("Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId")
	case e.IP.Present:
		if !e.IP.Default && !validIP(e.IP.Value) {
			return nil, invalid("%s is not a valid IP or resolvable host.", e.IP.Value)
		}
		return ipKeys, nil
	case e.User.Present || e.ClientID.Present:
		return userAndClientKeys, nil
	}
	return nil, invalid("Invalid empty client quota entity")
}

// validateValue is ClientQuotaControlManager.validateQuotaKeyValue.
func validateValue(keys map[string]valueType, key string, value float64) *Error {
	typ, ok := keys[key]
	switch {
	case !ok:
		return invalid("Invalid configuration key %s", key)
	case !(value > 0): // NaN too
		return invalid("Quota %s must be greater than 0", key)
	}
	switch typ {
	case typeInt:
		if value > math.MaxInt32 {
			return invalid("Proposed value for %s is too large for an INT.", key)
		}
	case typeLong:
		if value > math.MaxInt64 {
			return invalid("Proposed value for %s is too large for a LONG.", key)
		}
	case typeDouble:
		if math.IsInf(value, 0) {
			return &Error{Code: kerr.InvalidRequest.Code, Message: "Quota " + key + " must be finite"}
		}
		return nil
	}
	if math.Abs(math.Mod(value, 1.0)) > 1e-6 {
		return invalid("%s cannot be a fractional value.", key)
	}
	return nil
}

package config

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Type is a config's type as Kafka declares it. The numbers are
// DescribeConfigs' ConfigType codes (KIP-569), so the broker can send them
// as they are.
type Type int8

// Kafka's config types.
const (
	TypeUnknown  Type = 0
	TypeBoolean  Type = 1
	TypeString   Type = 2
	TypeInt      Type = 3
	TypeShort    Type = 4
	TypeLong     Type = 5
	TypeDouble   Type = 6
	TypeList     Type = 7
	TypeClass    Type = 8
	TypePassword Type = 9
)

var typeNames = [...]string{"UNKNOWN", "BOOLEAN", "STRING", "INT", "SHORT", "LONG", "DOUBLE", "LIST", "CLASS", "PASSWORD"}

func (t Type) String() string {
	if t < 0 || int(t) >= len(typeNames) {
		return "Type(" + strconv.Itoa(int(t)) + ")"
	}
	return typeNames[t]
}

// Source is where a value came from.
type Source int8

// Sources, lowest precedence first.
const (
	SourceDefault Source = iota // the key table
	SourceFile                  // the --config file
	SourceEnv                   // a KBROKER_ environment variable
	SourceFlag                  // a command-line flag
)

func (s Source) String() string {
	switch s {
	case SourceDefault:
		return "default"
	case SourceFile:
		return "file"
	case SourceEnv:
		return "env"
	case SourceFlag:
		return "flag"
	}
	return "Source(" + strconv.Itoa(int(s)) + ")"
}

// DescribeConfigs ConfigSource codes.
const (
	KafkaSourceStaticBroker int8 = 4 // STATIC_BROKER_CONFIG
	KafkaSourceDefault      int8 = 5 // DEFAULT_CONFIG
)

// KafkaSource is the DescribeConfigs ConfigSource code: DEFAULT_CONFIG for
// a default, STATIC_BROKER_CONFIG for a file, environment or flag value.
func (s Source) KafkaSource() int8 {
	if s == SourceDefault {
		return KafkaSourceDefault
	}
	return KafkaSourceStaticBroker
}

// ValueError is a bad value for one key. Its message names the key, the
// value and what is allowed:
//
//	config: min.insync.replicas=0 is out of range: must be >= 1
type ValueError struct {
	Key     string
	Value   string
	Problem string // "is out of range: must be >= 1"
}

func (e *ValueError) Error() string {
	return "config: " + e.Key + "=" + e.Value + " " + e.Problem
}

// A validator checks a parsed value (see parseValue for the kinds) and
// returns the problem, or "" if the value is fine.
type validator func(v any) string

func atLeast(min int64) validator {
	return func(v any) string {
		if v.(int64) < min {
			return fmt.Sprintf("is out of range: must be >= %d", min)
		}
		return ""
	}
}

func between(lo, hi int64) validator {
	return func(v any) string {
		if n := v.(int64); n < lo || n > hi {
			return fmt.Sprintf("is out of range: must be between %d and %d", lo, hi)
		}
		return ""
	}
}

func betweenFloat(lo, hi float64) validator {
	return func(v any) string {
		if f := v.(float64); f < lo || f > hi || math.IsNaN(f) {
			return fmt.Sprintf("is out of range: must be between %g and %g", lo, hi)
		}
		return ""
	}
}

// oneOf accepts a string among values, or for a list, a non-empty list of
// such strings.
func oneOf(values ...string) validator {
	allowed := strings.Join(values, ", ")
	return func(v any) string {
		switch v := v.(type) {
		case string:
			if !slices.Contains(values, v) {
				return "is invalid: must be one of " + allowed
			}
		case []string:
			if len(v) == 0 {
				return "is invalid: must list at least one of " + allowed
			}
			for _, s := range v {
				if !slices.Contains(values, s) {
					return fmt.Sprintf("is invalid: %q is not one of %s", s, allowed)
				}
			}
		}
		return ""
	}
}

// onlyValue accepts one value, for configs kbroker takes but cannot honour
// (remote.storage.enable=true).
func onlyValue(want any, why string) validator {
	return func(v any) string {
		if v != want {
			return fmt.Sprintf("is not supported: must be %v (%s)", want, why)
		}
		return ""
	}
}

// hostPortOrEmpty accepts "" or host:port.
func hostPortOrEmpty(v any) string {
	if s := v.(string); s != "" {
		if _, _, err := splitHostPort(s); err != nil {
			return "is invalid: must be host:port or empty (" + err.Error() + ")"
		}
	}
	return ""
}

// hostPorts accepts a list of host:port with non-empty hosts.
func hostPorts(v any) string {
	if _, err := parseHostPorts(strings.Join(v.([]string), ",")); err != nil {
		return "is invalid: " + err.Error()
	}
	return ""
}

// gzipLevel is Kafka's compression.gzip.level range: -1 (the codec's
// default) or 1 to 9.
func gzipLevel(v any) string {
	if n := v.(int64); n != -1 && (n < 1 || n > 9) {
		return "is out of range: must be -1 or between 1 and 9"
	}
	return ""
}

// The kinds of parsed values. A field's Go type decides its kind:
//
//	*int16, *int32, *int64       int64
//	*time.Duration               int64, in the key's unit
//	*bool                        bool
//	*string                      string
//	*float64                     float64
//	*[]string                    []string (comma-separated list)
//	*[]Listener, *[]Voter        []Listener, []Voter
//	*map[string]string           map[string]string (NAME:VALUE list)

// parseValue parses raw for a field of p's type; typ bounds integers
// (INT to 32 bits, SHORT to 16). It returns the problem if raw is bad.
func parseValue(p any, typ Type, raw string) (any, string) {
	raw = strings.TrimSpace(raw)
	switch p.(type) {
	case *int16, *int32, *int64, *time.Duration:
		return parseInt(raw, intBits(p, typ))
	case *bool:
		switch strings.ToLower(raw) {
		case "true":
			return true, ""
		case "false":
			return false, ""
		}
		return nil, "is invalid: must be true or false"
	case *string:
		return raw, ""
	case *float64:
		f, err := strconv.ParseFloat(raw, 64)
		if err != nil {
			return nil, "is invalid: must be a number"
		}
		return f, ""
	case *[]string:
		return splitList(raw), ""
	case *[]Listener:
		return wrapProblem(ParseListeners(raw))
	case *[]Voter:
		return wrapProblem(ParseVoters(raw))
	case *map[string]string:
		return wrapProblem(parseProtocolMap(raw))
	}
	panic(fmt.Sprintf("config: field of unsupported type %T", p))
}

func wrapProblem[T any](v T, err error) (any, string) {
	if err != nil {
		return nil, "is invalid: " + err.Error()
	}
	return v, ""
}

func parseInt(raw string, bits int) (any, string) {
	n, err := strconv.ParseInt(raw, 10, 64)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return nil, "is out of range: must fit in 64 bits"
		}
		return nil, "is invalid: must be an integer"
	}
	if bits < 64 {
		lo, hi := -int64(1)<<(bits-1), int64(1)<<(bits-1)-1
		if n < lo || n > hi {
			return nil, fmt.Sprintf("is out of range: must be between %d and %d", lo, hi)
		}
	}
	return n, ""
}

// intBits is the width an integer field accepts: the narrower of its Go
// type and its Kafka type.
func intBits(p any, typ Type) int {
	bits := 64
	switch p.(type) {
	case *int16:
		bits = 16
	case *int32:
		bits = 32
	}
	switch typ {
	case TypeShort:
		bits = min(bits, 16)
	case TypeInt:
		bits = min(bits, 32)
	}
	return bits
}

// getValue reads the field p as a parsed value; unit is the key's unit for
// durations.
func getValue(p any, unit time.Duration) any {
	switch p := p.(type) {
	case *int16:
		return int64(*p)
	case *int32:
		return int64(*p)
	case *int64:
		return *p
	case *time.Duration:
		return unitsOf(*p, unit)
	case *bool:
		return *p
	case *string:
		return *p
	case *float64:
		return *p
	case *[]string:
		return *p
	case *[]Listener:
		return *p
	case *[]Voter:
		return *p
	case *map[string]string:
		return *p
	}
	panic(fmt.Sprintf("config: field of unsupported type %T", p))
}

// setValue stores a parsed value v (already range-checked by parseValue)
// into the field p.
func setValue(p any, v any, unit time.Duration) {
	switch p := p.(type) {
	case *int16:
		*p = int16(v.(int64))
	case *int32:
		*p = int32(v.(int64))
	case *int64:
		*p = v.(int64)
	case *time.Duration:
		*p = durationOf(v.(int64), unit)
	case *bool:
		*p = v.(bool)
	case *string:
		*p = v.(string)
	case *float64:
		*p = v.(float64)
	case *[]string:
		*p = v.([]string)
	case *[]Listener:
		*p = v.([]Listener)
	case *[]Voter:
		*p = v.([]Voter)
	case *map[string]string:
		*p = v.(map[string]string)
	default:
		panic(fmt.Sprintf("config: field of unsupported type %T", p))
	}
}

// formatValue is the Kafka string form of a parsed value.
func formatValue(v any) string {
	switch v := v.(type) {
	case int64:
		return strconv.FormatInt(v, 10)
	case bool:
		return strconv.FormatBool(v)
	case string:
		return v
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case []string:
		return strings.Join(v, ",")
	case []Listener:
		return joinStrings(v)
	case []Voter:
		return joinStrings(v)
	case map[string]string:
		return formatProtocolMap(v)
	}
	panic(fmt.Sprintf("config: value of unsupported type %T", v))
}

func joinStrings[T fmt.Stringer](items []T) string {
	s := make([]string, len(items))
	for i, it := range items {
		s[i] = it.String()
	}
	return strings.Join(s, ",")
}

// durationOf converts n units to a duration, saturating at ±Forever.
func durationOf(n int64, unit time.Duration) time.Duration {
	if n > int64(Forever/unit) {
		return Forever
	}
	if n < -int64(Forever/unit) {
		return -Forever
	}
	return time.Duration(n) * unit
}

// unitsOf converts a duration to whole units; Forever stays Long.MAX_VALUE.
func unitsOf(d, unit time.Duration) int64 {
	switch d {
	case Forever:
		return math.MaxInt64
	case -Forever:
		return math.MinInt64
	}
	return int64(d / unit)
}

package config

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// FlagConfig is the name of the flag that gives the config file.
const FlagConfig = "config"

// FlagOverride is the name of the repeatable key=value flag that sets any
// key, as kafka-server-start.sh --override does: the only way besides the
// config file to set listener.name.<l>.* properties.
const FlagOverride = "override"

// RegisterFlags adds --config and one flag per key under its Kafka name
// (--log.dirs=/x, --min.insync.replicas=2), plus the keys' aliases
// (--log-format, --log-level). Flags take their value as Kafka text and are
// parsed by Load, so a bad value is reported like one from a file. A list
// flag given twice appends (--log.dirs=/a --log.dirs=/b); a boolean flag
// alone means true.
func RegisterFlags(fs *pflag.FlagSet) {
	fs.String(FlagConfig, "", "a config `file`: YAML (.yaml, .yml), TOML (.toml), JSON (.json), or Kafka properties (.properties or no extension)")
	fs.StringArray(FlagOverride, nil, "set any config `key=value` (repeatable), e.g. --override listener.name.sasl_ssl.plain.sasl.jaas.config='...'")
	for i := range keyTable {
		k := &keyTable[i]
		v := &flagValue{value: k.Default, typ: flagType(k), list: k.isList()}
		register := func(name, usage string) {
			f := fs.VarPF(v, name, "", usage)
			if !k.NoDefault {
				f.DefValue = k.Default
			}
			if k.Type == TypeBoolean {
				f.NoOptDefVal = "true"
			}
		}
		register(k.Name, k.Doc)
		if k.FlagAlias != "" {
			register(k.FlagAlias, "Same as --"+k.Name+".")
		}
	}
}

// flagValues reads the keys set by flags in fs: name -> value.
func flagValues(fs *pflag.FlagSet) map[string]string {
	out := map[string]string{}
	if fs == nil {
		return out
	}
	for _, k := range keyTable {
		for _, name := range []string{k.Name, k.FlagAlias} {
			if f := fs.Lookup(name); name != "" && f != nil && f.Changed {
				out[k.Name] = f.Value.String()
			}
		}
	}
	return out
}

// overrideValues reads the --override key=value flags in fs.
func overrideValues(fs *pflag.FlagSet) (map[string]string, error) {
	out := map[string]string{}
	if fs == nil || fs.Lookup(FlagOverride) == nil {
		return out, nil
	}
	items, err := fs.GetStringArray(FlagOverride)
	if err != nil {
		return nil, err
	}
	for _, item := range items {
		key, value, ok := strings.Cut(item, "=")
		if key = strings.TrimSpace(key); !ok || key == "" {
			return nil, fmt.Errorf("config: --override %q is not key=value", item)
		}
		out[key] = value
	}
	return out, nil
}

// flagValue holds a flag's text; Load parses it.
type flagValue struct {
	value string
	typ   string
	list  bool // repeated flags append
	set   bool
}

func (f *flagValue) String() string { return f.value }
func (f *flagValue) Type() string   { return f.typ }

func (f *flagValue) Set(s string) error {
	if f.list && f.set {
		f.value += "," + s
	} else {
		f.value = s
	}
	f.set = true
	return nil
}

// flagType is the value name help shows: the unit of a duration, else the
// Kafka type.
func flagType(k *Key) string {
	if k.isDuration() {
		return unitNames[k.unit()]
	}
	if k.Type == TypeBoolean {
		return "bool" // pflag shows no value name for bool
	}
	return strings.ToLower(k.Type.String())
}

var unitNames = map[time.Duration]string{
	time.Millisecond: "ms", time.Second: "seconds", time.Minute: "minutes", time.Hour: "hours",
}

// isList reports whether the key takes a comma-separated list.
func (k *Key) isList() bool {
	switch k.field(new(Config)).(type) {
	case *[]string, *[]Listener, *[]Voter, *map[string]string:
		return true
	}
	return false
}

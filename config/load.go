package config

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"
)

// LoadArgs are Load's inputs.
type LoadArgs struct {
	// File is the config file; "" = the --config flag in Flags, if set.
	File string
	// Env is the environment as KEY=VALUE; nil = os.Environ().
	Env []string
	// Flags is a flag set prepared with RegisterFlags and parsed; nil =
	// no flags.
	Flags *pflag.FlagSet
	// Hostname names this machine for advertised.listeners' default; nil =
	// os.Hostname.
	Hostname func() string
}

// Load builds the configuration from defaults < file < environment <
// flags (see the package doc) and validates it. Every bad value is
// reported, joined into one error; each names the key, the value and what
// is allowed. Keys Kafka has but kbroker ignores, and unknown keys, are
// accepted and listed in Config.Ignored and Config.Unknown.
func Load(args LoadArgs) (*Config, error) {
	set := map[string]origin{}
	var ignored, unknown []string
	note := func(name string, o origin, label string) {
		switch classify(name) {
		case classKnown, classSecurity:
			set[name] = o
		case classIgnored:
			ignored = append(ignored, name)
		default:
			unknown = append(unknown, label)
		}
	}

	file := args.File
	if f := lookupFlag(args.Flags, FlagConfig); file == "" && f != nil {
		file = f.Value.String()
	}
	if file != "" {
		values, err := readFile(file)
		if err != nil {
			return nil, err
		}
		for name, raw := range values {
			note(name, origin{source: SourceFile, raw: raw}, name)
		}
	}
	env := args.Env
	if env == nil {
		env = os.Environ()
	}
	for name, kv := range envValues(env) {
		note(name, origin{source: SourceEnv, raw: kv[1]}, kv[0])
	}
	for name, raw := range flagValues(args.Flags) {
		set[name] = origin{source: SourceFlag, raw: raw}
	}
	overrides, err := overrideValues(args.Flags)
	if err != nil {
		return nil, err
	}
	for name, raw := range overrides {
		note(name, origin{source: SourceFlag, raw: raw}, name)
	}

	hostname := args.Hostname
	if hostname == nil {
		hostname = osHostname
	}
	c, err := build(set, hostname)
	if err = errors.Join(err, c.Validate()); err != nil {
		return nil, err
	}
	c.Ignored, c.Unknown = sortedUnique(ignored), sortedUnique(unknown)
	return c, nil
}

func lookupFlag(fs *pflag.FlagSet, name string) *pflag.Flag {
	if fs == nil {
		return nil
	}
	return fs.Lookup(name)
}

// envValues picks the KBROKER_ variables of env: key name -> {variable,
// value}. KBROKER_LOG_DIRS is log.dirs. Empty values count as unset.
func envValues(env []string) map[string][2]string {
	out := map[string][2]string{}
	for _, kv := range env {
		name, value, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, envPrefix) || value == "" {
			continue
		}
		key := strings.ToLower(strings.ReplaceAll(strings.TrimPrefix(name, envPrefix), "_", "."))
		out[key] = [2]string{name, value}
	}
	return out
}

// keyDelimiter separates nested keys in viper. Kafka names contain dots, so
// dots cannot be viper's delimiter.
const keyDelimiter = "::"

// readFile reads a config file with viper, the format chosen by its
// extension, into flat Kafka key names -> value text.
func readFile(path string) (map[string]string, error) {
	format, err := fileFormat(path)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: read config file: %w", err)
	}
	v := viper.NewWithOptions(viper.KeyDelimiter(keyDelimiter), viper.WithDecoderRegistry(decoders{}))
	v.SetConfigType(format)
	if err := v.ReadConfig(bytes.NewReader(data)); err != nil {
		return nil, fmt.Errorf("config: parse %s as %s: %w", path, format, err)
	}
	out := map[string]string{}
	if err := flatten("", v.AllSettings(), out); err != nil {
		return nil, fmt.Errorf("config: %s: %w", path, err)
	}
	return out, nil
}

// fileFormat is the viper format for a config file's extension.
func fileFormat(path string) (string, error) {
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case ".yaml", ".yml":
		return "yaml", nil
	case ".toml":
		return "toml", nil
	case ".json":
		return "json", nil
	case ".properties", "":
		return "properties", nil
	default:
		return "", fmt.Errorf("config: %s: unknown config file extension %q (use .yaml, .yml, .toml, .json, or .properties / none for Kafka properties)", path, ext)
	}
}

// decoders is viper's built-in decoders plus Java properties.
type decoders struct{}

func (decoders) Decoder(format string) (viper.Decoder, error) {
	if format == "properties" {
		return propertiesCodec{}, nil
	}
	return viper.NewCodecRegistry().Decoder(format)
}

// flatten turns nested tables (YAML log: {dirs: x}, TOML [log]) into
// dotted Kafka names. A table under a key that takes a map
// (listener.security.protocol.map) becomes that key's NAME:VALUE list.
func flatten(prefix string, m map[string]any, out map[string]string) error {
	for k, v := range m {
		name := k
		if prefix != "" {
			name = prefix + "." + k
		}
		if sub, ok := v.(map[string]any); ok && !takesMap(name) {
			if err := flatten(name, sub, out); err != nil {
				return err
			}
			continue
		}
		if v == nil {
			continue // YAML "key:" with no value: unset
		}
		if _, dup := out[name]; dup {
			return fmt.Errorf("%s is set twice (once nested, once with dots)", name)
		}
		s, err := valueText(v)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		out[name] = s
	}
	return nil
}

func takesMap(name string) bool {
	k := keyByName(name)
	if k == nil {
		return false
	}
	_, ok := k.field(new(Config)).(*map[string]string)
	return ok
}

// valueText is the Kafka text of a decoded YAML/TOML/JSON value: lists
// are comma-separated, tables NAME:VALUE lists.
func valueText(v any) (string, error) {
	switch v := v.(type) {
	case string:
		return v, nil
	case bool:
		return strconv.FormatBool(v), nil
	case int:
		return strconv.Itoa(v), nil
	case int64:
		return strconv.FormatInt(v, 10), nil
	case uint64:
		return strconv.FormatUint(v, 10), nil
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64), nil
	case []any:
		items := make([]string, len(v))
		for i, it := range v {
			s, err := valueText(it)
			if err != nil {
				return "", err
			}
			items[i] = s
		}
		return strings.Join(items, ","), nil
	case map[string]any:
		items := make([]string, 0, len(v))
		for name, it := range v {
			s, err := valueText(it)
			if err != nil {
				return "", err
			}
			items = append(items, name+":"+s)
		}
		sort.Strings(items)
		return strings.Join(items, ","), nil
	}
	return "", fmt.Errorf("unsupported value %v of type %T", v, v)
}

func sortedUnique(s []string) []string {
	sort.Strings(s)
	out := s[:0]
	for i, x := range s {
		if i == 0 || x != s[i-1] {
			out = append(out, x)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

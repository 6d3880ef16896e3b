package config

import (
	"sort"
	"strings"
)

// Entry is one broker config as DescribeConfigs reports it.
type Entry struct {
	Name string
	// Value is the Kafka string form (ms for durations, comma-separated
	// lists, NAME://host:port listeners); "" with Null for a key that has
	// no value, or a Sensitive one.
	Value     string
	Null      bool
	Source    Source // Source.KafkaSource gives DescribeConfigs' code
	ReadOnly  bool   // not dynamic
	Sensitive bool
	Type      Type
	Doc       string
}

// Entries lists every broker key with its value and source, sorted by
// name. A key that sets a field reports the field's value, with the source
// of whichever of its names set it; a synonym (log.retention.hours)
// reports the value it was given, else its own default.
func (c *Config) Entries() []Entry {
	out := make([]Entry, 0, len(keyTable))
	for i := range keyTable {
		k := &keyTable[i]
		e := Entry{Name: k.Name, ReadOnly: !k.Dynamic, Sensitive: k.Sensitive, Type: k.Type, Doc: k.Doc}
		switch o, set := c.origin[k.Name]; {
		case k.SynonymOf == "":
			e.Value, e.Source = formatValue(k.current(c)), c.groupSource(k)
			e.Null = e.Value == "" && e.Source == SourceDefault && k.NoDefault
		case set:
			e.Value, e.Source = strings.TrimSpace(o.raw), o.source
		default:
			e.Value, e.Null = k.Default, k.NoDefault
		}
		if k.Sensitive {
			e.Value, e.Null = "", true
		}
		out = append(out, e)
	}
	out = append(out, c.securityEntries()...)
	out = append(out, dynamicEntries()...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

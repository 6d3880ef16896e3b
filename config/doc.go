// Package config holds kbroker's one typed configuration, [Config].
//
// # Sources
//
// A value comes from, lowest precedence first:
//
//  1. the default in the key table ([Keys]);
//  2. a file given with --config: YAML (.yaml, .yml), TOML (.toml), JSON
//     (.json), or a Kafka server.properties (.properties or no extension);
//  3. the environment: KBROKER_ followed by the key in upper case with dots
//     as underscores (KBROKER_LOG_DIRS for log.dirs); an empty variable
//     counts as unset;
//  4. command-line flags, one per key under its Kafka name (--log.dirs=/x).
//
// Keys are Kafka's own names, which contain dots, so files are read with a
// viper instance whose key delimiter is "::": "log.dirs: /x" in YAML stays
// the flat key log.dirs. Nested YAML or TOML (log: {dirs: /x}) is flattened
// to the same key.
//
// Some settings have several names (Kafka synonyms): log.retention.ms,
// log.retention.minutes and log.retention.hours all set
// [Config.LogRetentionMs]. As in Kafka, the most precise name that is set
// wins (ms > minutes > hours), whatever source set each name; each name's
// own value is taken from its highest source.
//
// Keys Kafka has but kbroker does not use (num.network.threads,
// log.cleaner.threads, ...) are accepted and listed in [Config.Ignored];
// keys nobody knows are accepted with a warning in [Config.Unknown], as
// Kafka does. A mistyped flag is an error.
//
// # Tables
//
// Every broker key is declared once in the table behind [Keys]: name, type,
// default, doc, validator, whether it is dynamic, and which typed field it
// sets. Defaults, environment names, flags, validation and DescribeConfigs
// data ([Config.Entries]) all come from it. Topic-level configs have their
// own table ([TopicKeys]); their defaults come from the broker keys that are
// their synonyms ([Config.TopicDefaults]).
package config

// Package cli holds kbroker's admin commands, in the spirit of rpk and
// Kafka's shell tools: topic, group, cluster, produce, consume, reassign,
// acl (kafka-acls.sh), user (SCRAM credentials: kafka-configs.sh
// --entity-type users) and completion. Each command parses its flags,
// calls package admin and prints the result as an aligned table or as JSON
// (--format json).
//
// Connection settings come, lowest precedence first, from defaults
// (127.0.0.1:9092, plaintext), a profile file (a Kafka client .properties
// file: --profile, $KBROKER_PROFILE, or ~/.config/kbroker/profile.properties
// if present), $KBROKER_BROKERS, -X key=value (Kafka's client config
// names) and --brokers.
//
// Every error is printed once, on one line, prefixed "kbroker: ", and the
// command returns an *ExitError: status 2 for bad input (flags, offsets,
// times, moves), 1 for a failed operation, an unreachable cluster or an
// unhealthy one (cluster health). No stack traces.
package cli

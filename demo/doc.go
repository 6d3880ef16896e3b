// Package demo walks through the durability lessons of Kafka's replication
// model on a throw-away local kbroker cluster: acks=1 against acks=all,
// min.insync.replicas, and unclean leader election; and what a share group
// (KIP-932, a queue) promises when one of its consumers dies mid-batch.
//
// Each Scenario starts its own brokers as child processes of a kbroker
// binary (free loopback ports, a temporary directory, timeouts of seconds),
// injects faults the way real clusters meet them (SIGSTOP for a stalled
// broker, SIGKILL for a crash), narrates what the cluster does (leader, ISR,
// high watermark, each replica's log end offset, records acknowledged and
// records lost) and returns an Outcome that tests can assert on. Run always
// kills its processes and removes its directory, also when ctx is cancelled.
//
// Replica log end offsets are read from the segment files in the node's data
// directory (Kafka's on-disk batch format): no Kafka API exposes a replica's
// log end offset to clients, and the demo owns those directories.
package demo

// Package chaos is kbroker's fault-injection suite, in the style of
// Jepsen's Kafka analyses: real kbroker processes (each optionally in its own
// network namespace), idempotent producers and consumers recording a
// history, nemeses (kill -9, SIGSTOP, network partitions, slow links,
// restarts) on a seeded schedule, and a pure checker of that history
// (Check). See chaos_test.go for how to run it.
package chaos

// Package chaos is kbroker's fault-injection suite, in the style of
// Jepsen's Kafka analyses.
//
// It drives the built binary only ($KBROKER_BIN, or built by TestMain):
//
//   - a harness runs each broker as a real process, on loopback or each in
//     its own network namespace with its own address (ip netns, a veth pair
//     per node on one bridge; partitions are iptables DROP rules inside the
//     namespaces, or a veth set down where iptables is missing; slow links
//     are tc tbf qdiscs). Processes die with the test binary (Pdeathsig);
//     namespaces and links carry the creating pid and a later run removes
//     those of dead runs.
//   - nemeses (nemesis_test.go) kill -9 a partition leader, a random broker
//     or the active controller, SIGSTOP a broker for less or more than the
//     session and lag timeouts, cut a leader off, split the nodes into a
//     minority and a majority, slow a follower's link, restart every broker
//     at once or one at a time, make a stale replica the only survivor
//     (unclean election), and cut the power of one broker (back in every
//     ISR before the next cut) or of every broker at once: kill -9, then
//     each log dir keeps only what the broker had synced, per the fsync
//     bookkeeping journal it wrote (internal/powercut). Schedule draws
//     kinds, holds, gaps and targets from a seed that every run prints.
//   - a workload of idempotent acks=all franz-go producers (or acks=1) writes
//     unique values "p<N>-<seq>" to every partition while consumers read;
//     after healing, a final read of every partition. Every step is an Event
//     of a History, written to history.jsonl.
//   - Check, a pure function of the history, counts acknowledged values lost
//     or moved, duplicates, values out of producer order, values a consumer
//     saw that vanished or changed, gaps, values nobody wrote, unacknowledged
//     values that appeared (allowed), and availability during faults; a
//     Policy says which anomalies a configuration may show (none for acks=all,
//     min.insync.replicas=2, unclean election off).
//
// Also: storage faults on a stopped broker's files (torn or garbage segment
// tails, deleted or corrupted indexes, truncated checkpoints, a full
// tmpfs), hostile clients next to a canary client, and the minimal
// reproduction of a broker bug the suite found (repro_test.go).
//
// How to run:
//
//	make chaos                      # every scenario, minutes (KBROKER_CHAOS=full)
//	make chaos CHAOS_RUN=TestScenarios/leader-kill CHAOS_SEED=42   # one scenario, one seed
//	make chaos-short                # the run inside make test (KBROKER_CHAOS=short)
//	go test ./compat-tests/chaos/   # without KBROKER_CHAOS: unit tests of the checker only
//
// KBROKER_CHAOS_DURATION (or -chaos.duration) sets how long each scenario's
// nemesis runs; KBROKER_CHAOS_LOG_LEVEL=debug the brokers' log level;
// KBROKER_CHAOS_OUT where histories, summaries and broker logs go (default
// $TMPDIR/kbroker-chaos/<scenario>-<seed>/).
package chaos

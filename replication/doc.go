// Package replication holds the per-partition replica state of Kafka's
// replication model: the leader and follower roles, the leader epoch, the
// in-sync replica set (ISR), the high watermark (HW), each follower's log end
// offset (LEO) as the leader sees it, and the replica fetchers that pull a
// leader's log to its followers.
//
// Rules (Kafka's, see KIP-101, KIP-279, KIP-497, KIP-966):
//
//   - Followers pull with the Fetch API, v16: topics by id, ReplicaState
//     with the replica id and broker epoch (KIP-903), CurrentLeaderEpoch,
//     LastFetchedEpoch. The leader learns a follower's LEO from its fetch
//     offset, and its broker epoch from ReplicaState.
//
//   - HW = min LEO over the maximal ISR (the committed ISR plus an expansion in
//     flight). It never moves backwards, and it does not advance while the
//     committed ISR is smaller than the effective min.insync.replicas (capped
//     at the replica count): KIP-966's strict min ISR, which makes every
//     replica that leaves a short ISR an eligible leader (hwm.go).
//
//   - A follower that has not caught up within replica.lag.time.max.ms leaves
//     the ISR; one whose LEO reaches the HW (and the current epoch's start
//     offset) joins again. Changes go to the controller through AlterPartition
//     with the partition epoch (and each member's broker epoch, KIP-903); a
//     shrink applies once committed, an expansion at once for HW purposes. A
//     change whose answer is lost stays pending and is sent again.
//
//   - A follower's incremental fetch session skips its idle partitions (at the
//     leader's log end, in the ISR, nothing to answer) until they move; the
//     session's fetch times stand as their caught-up times, so the ISR rule
//     above holds per partition at a cost per session (idle.go).
//
//   - After a leader change a follower truncates where its log diverges from the
//     leader's (DivergingEpoch), never blindly to its HW.
//
//   - A new leader's HW (its own, or its checkpoint after a restart) can lag
//     the one its predecessor served: consumers (Fetch, ListOffsets) get
//     OFFSET_NOT_AVAILABLE, retriable, until the HW reaches the offset the
//     epoch started at, so no consumer sees the HW or the LSO move back
//     (Kafka refuses ListOffsets so; kbroker refuses fetches too).
//
//   - Replication throttles (KIP-73, throttle.go): a leader answers an
//     out-of-sync follower's fetch of a throttled partition without records,
//     and a follower leaves its throttled out-of-sync partitions out of its
//     fetches, while the side's rate (SimpleRate over replication.quota.
//     window.*) is above leader/follower.replication.throttled.rate. In-sync
//     replicas are never held back.
//
// Transactions (issue 14): the log keeps each producer's open transaction
// and the last stable offset (LSO = min(first offset of an open or not yet
// replicated transaction, HW), storage/producer_txn.go). Followers apply
// the markers they replicate like any batch, so a new leader has the same
// LSO and aborted index. A read_committed consumer reads below the LSO and
// gets the aborted transactions overlapping what it read
// (ReadForConsumerAt; a follower serving a consumer, KIP-392, reads from
// its own LSO and index: ReadForConsumerOnFollowerAt); ListOffsetAt
// answers the LSO as its latest offset. The simulator's in-memory log has no transactions (its LSO is the HW).
//
// Decisions (HW, ISR shrink/expand) are pure functions over a snapshot
// (hwm.go, isr.go); the truncation point (Partition.TruncationPoint in
// follower.go) compares the leader's answer with this replica's epoch
// history. Partition gathers inputs under its lock and applies outputs.
//
// Files: partition.go (the replica's state and its lock rules), state.go and
// roles.go (roles and their transitions), leader.go and follower.go (each
// role's operations), offsets.go (ListOffsets, DeleteRecords), log.go (the
// ReplicaLog interface a Partition reads and writes, implemented by
// storage.Log), fetcher.go and leaderclient.go (replica fetchers and their
// connection to the leader), idle.go (a follower session's idle
// partitions on the leader), throttle.go and fetcher_throttle.go
// (replication throttles), manager.go (this broker's partitions, fetchers
// and AlterPartition sender).
//
// Lock order: Manager.mu, a fetcher's mu, Partition.roleMu, Partition.mu,
// then storage's log locks. Partition.mu is never held across network I/O,
// an fsync, or a call into the manager (partition.go has the details).
//
// Tests: besides unit tests, sim_*_test.go is a deterministic simulator of
// three replicas, a controller and the network between them, checking
// Kafka's replication invariants over thousands of seeded schedules and the
// KIP-101, KIP-279, KIP-497 and KIP-903 scenarios (go test -run TestSim
// ./replication/ -sim.seed=S replays one). Its messages pass through the
// Kafka wire encoding at the versions kbroker sends, and its controller
// checks AlterPartition with replication/controller's own
// CheckAlterPartition.
package replication

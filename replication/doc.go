// Package replication holds the per-partition replica state of Kafka's
// replication model: the leader and follower roles, the leader epoch, the
// in-sync replica set (ISR), the high watermark (HW), each follower's log end
// offset (LEO) as the leader sees it, and the replica fetchers that pull a
// leader's log to its followers.
//
// Rules (Kafka's, see KIP-101, KIP-279, KIP-497, KIP-966):
//
//   - Followers pull with the Fetch API (replica id set, CurrentLeaderEpoch,
//     LastFetchedEpoch). The leader learns a follower's LEO from its fetch offset.
//   - HW = min LEO over the maximal ISR (the committed ISR plus an expansion in
//     flight). It never moves backwards, and it does not advance while the ISR
//     is smaller than min.insync.replicas.
//   - A follower that has not caught up within replica.lag.time.max.ms leaves
//     the ISR; one whose LEO reaches the HW (and the current epoch's start
//     offset) joins again. Changes go to the controller through AlterPartition
//     with the partition epoch; a shrink applies once committed, an expansion at
//     once for HW purposes.
//   - After a leader change a follower truncates where its log diverges from the
//     leader's (DivergingEpoch), never blindly to its HW.
//
// Decisions (HW, ISR shrink/expand) are pure functions over a snapshot
// (hwm.go, isr.go); the truncation point (Partition.TruncationPoint in
// follower.go) compares the leader's answer with this replica's epoch
// history. Partition gathers inputs under its lock and applies outputs.
//
// Lock order: Partition.mu before storage's log locks. Never hold Partition.mu
// across network I/O or while calling AlterPartition.
package replication

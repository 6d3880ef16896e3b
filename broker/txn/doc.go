// Package txn is kbroker's transaction coordinator, as Apache Kafka 4.x's
// TransactionCoordinator: InitProducerId with a transactional id (epoch
// bumps, fencing, KIP-360 recovery, producer id rotation),
// AddPartitionsToTxn (v0-v3 from producers, v4+ batched from brokers with
// KIP-890's VerifyOnly), AddOffsetsToTxn, EndTxn v0-v5 (transaction
// version 2: an epoch bump per transaction), the writing of transaction
// markers, timeouts, transactional id expiry, ListTransactions and
// DescribeTransactions.
//
// # Model
//
// The coordinator of a transactional id is the leader of its
// __transaction_state partition, abs(javaHashCode(id)) %
// transaction.state.log.num.partitions (PartitionFor). The broker tells the
// Coordinator which partitions it leads (BecomeLeader with the partition's
// leader epoch, which is the coordinator epoch of the markers; Resign).
// Every state change is written to that partition through a StateLog
// (acks=all) before it takes effect; a new leader rebuilds the state by
// replaying the partition, then finishes what its predecessor left in
// PrepareCommit or PrepareAbort. There is no network, storage or
// replication code here: the broker implements StateLog, MarkerWriter and
// ProducerIDAllocator.
//
// Each id's metadata (txnMetadata, Kafka's TransactionMetadata) has one
// lock owner, its entry's mutex, held only to decide and to prepare a
// transition, never across I/O. A prepared transition is pending until its
// record commits; meanwhile other requests on the id get
// CONCURRENT_TRANSACTIONS, as in Kafka, and a failed write drops it (the
// client retries). EndTxn answers once PrepareCommit/PrepareAbort is
// committed; CompleteCommit/CompleteAbort is then pending while a
// goroutine of the partition's shard writes the markers (MarkerWriter,
// retrying retriable errors every MarkerRetryBackoff) and then the
// completion. Two periodic scans (Options.AfterFunc) abort transactions
// open longer than their timeout, fencing their producer, and expire idle
// ids with tombstones. Resign and Close cancel and wait for every
// goroutine; the lock order is entry.mu, then Coordinator.mu.
//
// # States
//
// See State for the diagram and Kafka's table of legal transitions.
// PrepareEpochFence is only ever pending: InitProducerId or the timeout
// scan fence the producer and turn it into PrepareAbort in the same step.
// Under TV0/TV1 the fence bumps the epoch in memory at once (and keeps it
// if the write fails, Kafka's hasFailedEpochFence); under TV2 the abort's
// own epoch bump is the fence (Kafka 4.1, one bump).
//
// # Records (__transaction_state)
//
// kbroker writes Kafka's formats (kmsg's TxnMetadataKey/TxnMetadataValue),
// so Kafka's tools read the topic and compaction keeps the right records.
// Big endian; the value's version is v1 unless Options.TransactionVersion gives 0.
//
//	key (TransactionLogKey v0; other key versions are other record types, skipped):
//	  | int16 version=0 | int16 len | transactional_id |
//
//	value v0 (TransactionLogValue, not flexible):
//	  | int16 0 | int64 producer_id | int16 producer_epoch |
//	  | int32 transaction_timeout_ms | int8 transaction_status |
//	  | int32 count (-1: null) | count x ( int16 len | topic | int32 n | n x int32 partition ) |
//	  | int64 transaction_last_update_timestamp_ms | int64 transaction_start_timestamp_ms |
//
//	value v1 (flexible): the same fields, arrays and strings compact
//	  (uvarint length+1; 0 is null), each topic entry closed by a tagged-field
//	  section, and the value closed by tagged fields (uvarint count, then per
//	  field uvarint tag, uvarint size, bytes), written when not default:
//	    tag 0 previous_producer_id int64 (-1)   tag 1 next_producer_id int64 (-1)
//	    tag 2 client_transaction_version int16 (0)
//	    tag 3 next_producer_epoch int16 (-1; KIP-939, read and never written)
//
//	transaction_status: Empty 0, Ongoing 1, PrepareCommit 2, PrepareAbort 3,
//	CompleteCommit 4, CompleteAbort 5, Dead 6, PrepareEpochFence 7.
//
// An Empty id has a null partition list. A nil value is a tombstone (an
// expired id). Loading keeps the last value per key, so it gives the same
// result before and after compaction; lastProducerEpoch is not persisted
// (-1 after a load, as in Kafka).
//
// # Wiring into the broker
//
//   - broker/txns.go: one coordinator per broker, its partitions fed by the
//     metadata image (broker/coordinator_partitions.go, shared with the group
//     coordinator: BecomeLeader with the partition's leader epoch as the
//     coordinator epoch, Resign), the StateLog the same acks=all adapter the
//     group coordinator writes with (offsetsStore), producer ids from the
//     controller's blocks. __transaction_state is created on the first
//     FindCoordinator of a transaction: transaction.state.log.num.partitions,
//     compacted, transaction.state.log.replication.factor and .min.isr,
//     lowered only when the cluster has fewer brokers. FindCoordinator type
//     1, InitProducerId with an id (api_22), AddPartitionsToTxn (api_24),
//     AddOffsetsToTxn (api_25), EndTxn (api_26), DescribeTransactions
//     (api_65) and ListTransactions (api_66) call the handlers here, after
//     the transactional-id ACLs.
//   - MarkerWriter (broker/txn_markers.go): the partitions of a marker are
//     grouped by leader; this broker's are appended locally, the others' go
//     in one WriteTxnMarkers v1 per leader. The partition leader (api_27)
//     appends the control batch through the normal replication path with
//     acks=all; its producer state refuses an older coordinator epoch
//     (TRANSACTION_COORDINATOR_FENCED) or producer epoch
//     (INVALID_PRODUCER_EPOCH). Markers committed on __consumer_offsets
//     complete the group coordinator's pending TxnOffsetCommit offsets
//     (api_28, broker/group/txn_offsets.go).
//   - Produce (api_00, broker/produce_txn.go, broker/txn_verify.go): a
//     transactional batch that would open a transaction on its partition
//     is verified with this coordinator (AddPartitionsToTxn v5, VerifyOnly;
//     Produce v12 and TxnOffsetCommit v5 add the partition, transaction
//     version 2, retrying CONCURRENT_TRANSACTIONS for
//     add.partitions.to.txn.retry.backoff.max.ms) and appended with the
//     partition log's verification guard.
//   - storage/producer_txn.go and storage/txnindex.go keep each producer's
//     open transaction, the last stable offset and the .txnindex;
//     replication serves read_committed up to the LSO with the aborted
//     transactions of the records read.
package txn

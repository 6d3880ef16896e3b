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
// Big endian; the value's version is v1 unless Options.LegacyValueFormat.
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
// # Wiring into the broker (the next step)
//
//   - broker/: one coordinator per broker (NewCoordinator with a
//     MarkerWriter and the controller's producer id blocks through
//     ProducerIDFunc); applyImage feeds BecomeLeader/Resign for
//     __transaction_state partitions as groups.go does for
//     __consumer_offsets (the same Store adapter type serves StateLog:
//     Record is group.Record); the topic is created from
//     Options.StateTopic(live brokers). FindCoordinator key type 1 answers
//     the leader of PartitionFor(id). api_22 (InitProducerId with an id),
//     api_24, api_25, api_26, api_65, api_66 call the handlers; api_27
//     WriteTxnMarkers and api_28 TxnOffsetCommit are partition-leader and
//     group-coordinator APIs, not this package's.
//   - MarkerWriter: group a Marker's partitions by leader, send
//     WriteTxnMarkers (v1, or v2 with TransactionVersion) or append locally;
//     the partition leader appends a control batch (attributes: control
//     and transactional bits; one record, key | int16 version 0 | int16
//     type 0 abort / 1 commit |, value | int16 version 0 | int32
//     coordinator epoch |) through the normal replication path with
//     acks=all, refuses a coordinator epoch older than the one it saw
//     (TRANSACTION_COORDINATOR_FENCED) and a producer epoch older than the
//     producer's (INVALID_PRODUCER_EPOCH), and answers per partition. The
//     group coordinator takes markers on __consumer_offsets to make
//     TxnOffsetCommit offsets visible.
//   - storage/replication (the record package's control batches): producer
//     state per partition keeps each producer's open transaction's first
//     offset (in snapshots too); the last stable offset = min(first offset
//     of any open transaction, HW), never moving back; a COMMIT/ABORT
//     marker closes the producer's transaction and an ABORT appends
//     (producer id, first offset, last offset, LSO) to the segment's
//     .txnindex (34-byte entries), rebuilt on recovery. Fetch
//     read_committed reads up to the LSO and returns the aborted
//     transactions overlapping the range (Kafka's collectAbortedTxns);
//     ListOffsets latest read_committed answers the LSO. Produce of a
//     transactional batch asks this coordinator (AddPartitionsToTxn v4+,
//     VerifyOnly under TV0/TV1, adding under TV2) before the append.
package txn

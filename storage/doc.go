// Package storage is the partition log of kbroker: segments of record
// batches in Kafka's exact on-disk format, sparse offset and time indexes,
// crash recovery, retention, the per-log-dir checkpoint files, the leader
// epoch cache and idempotent-producer state. The replication layer drives
// it; it knows nothing of requests.
//
// # Directory layout (as Kafka)
//
//	<log.dir>/
//	  recovery-point-offset-checkpoint   offsets below which data is on disk
//	  replication-offset-checkpoint      high watermarks
//	  log-start-offset-checkpoint        log start offsets
//	  cleaner-offset-checkpoint          first dirty offset of compacted logs
//	  .kafka_cleanshutdown               present only after a clean shutdown:
//	                                     {"version":0,"brokerEpoch":N} (KIP-966);
//	                                     written last by Manager.Close, after one
//	                                     syncfs of the dir made the logs' closing
//	                                     writes durable and the checkpoints
//	  __cluster_metadata-0/              not ours (controller); never touched
//	  <topic>-<partition>/
//	    00000000000000000000.log         batches exactly as on the wire
//	    00000000000000000000.index       offset index of that segment
//	    00000000000000000000.timeindex   time index of that segment
//	    00000000000000000000.snapshot    producer state as of that offset
//	    00000000000000000000.txnindex    aborted transactions whose marker is in that segment
//	    leader-epoch-checkpoint
//	    partition.metadata               "version: 0\ntopic_id: <base64url>"
//	    <base>.log.cleaned, .log.swap,   a compaction in progress (see Log
//	    and their .index/.timeindex      compaction below)
//
// File names are the segment's base offset (or the snapshot's offset) as
// %020d. A deleted partition is renamed to "<topic>-<partition>.<hex>-delete"
// before removal; leftovers are removed at startup.
//
// # Segment data (.log)
//
// Batches exactly as on the wire, in the record batch v2 format that
// package record owns; its doc draws the batch and record layouts.
//
// The append path never decodes records, and a leader append never parses
// a header: AppendAsLeader takes record.Batch values that the broker
// validated once (record.ParseProduce) or that the record package built,
// and writes baseOffset and partitionLeaderEpoch in place (outside the CRC)
// and, for LogAppendTime, the attributes and maxTimestamp with a new CRC,
// through the Batch setters, which keep the parsed header in step. A
// follower append and recovery frame raw bytes and check each batch's
// length, magic and CRC (record.VerifiedBatches). Records are decoded in
// two places here: ListOffsets by timestamp and -3 (max timestamp) decode
// the batches that may hold the answer, and the log cleaner decodes every
// batch it maps or rewrites (keys for the offset map; kept records to
// re-encode).
//
// # Offset index (.index): 8-byte entries
//
//	offset size field
//	     0    4 relativeOffset   last offset of a batch - segment base offset
//	     4    4 position         byte position of that batch in the .log
//
// An entry is added for a batch when more than index.interval.bytes of log
// were appended since the previous entry (Kafka's LogSegment.append), so
// entries are strictly increasing in both fields. Lookup(target) binary
// searches the largest entry with offset <= target and scans batches from
// its position.
//
// # Time index (.timeindex): 12-byte entries
//
//	offset size field
//	     0    8 timestamp        largest batch maxTimestamp so far in the segment
//	     8    4 relativeOffset   last offset of the batch that carried it
//
// Added with the offset index entries when the largest timestamp grew, and
// once more when a segment is rolled or closed (Kafka's TimeIndex
// .maybeAppend), so timestamps strictly increase and the last entry holds
// the segment's largest timestamp.
//
// Both indexes of the active segment are preallocated to segment.index.bytes
// with ftruncate (sparse, like Kafka), mapped read-write, and given disk
// blocks with fallocate ahead of the entries, in steps that double from a
// page to 64 KiB; a segment rolls when an index is full. On roll or close
// they are trimmed to their entries. No index keeps its descriptor: it is
// closed right after mmap, and reserve and trim open the file for the call.
// Indexes are not checksummed: they are validated and rebuilt from the log.
//
// # Segment data and memory mapping
//
// The active segment's .log is mapped read-write over its whole
// segment.bytes (rounded to a page) once, so the mapping never moves; the
// file grows under it by fallocate(mode 0) in steps that double from 64 KiB
// up to a chunk (min(segment.bytes, 8 MiB) or PreallocateChunkBytes), so
// that disk full is ErrDiskFull from the append, never a SIGBUS (with
// ftruncate growth as a fallback where fallocate is unsupported), and an
// idle partition reserves 64 KiB, not a chunk. Appends of 8 KiB or more write(2) the batches
// into the file at the segment's end (the mapping shares the same page-cache
// pages, and the write skips the page fault a copy into the mapping takes per
// 4 KiB); smaller ones copy into the mapping, whose pages are populated a
// megabyte ahead (a syscall per small append costs more than the copy).
// Then the segment size and the log end offset are published, so readers
// never see a half-written batch. On roll or close the file is truncated to its logical size.
// Inactive segments are mapped read-only on first read; a log keeps at most
// MaxMappedSegments of them mapped, and a Manager's logs together at most
// MaxMappedSegmentsTotal (least recently used first out). Readers hold a reference on a segment
// for as long as they use a slice of its mapping (ReadResult.Release);
// unmapping, closing and deleting happen at the last release, and
// truncation waits for the references to drop.
//
// # Descriptors and mappings per partition
//
// A partition holds one open descriptor, its active segment's .log (for
// write(2), fallocate and sendfile), and three mappings (that .log and its
// two indexes); an inactive segment holds no descriptor and, while mapped
// for reading, three mappings, within the budgets above. So a broker needs
// about one descriptor and three mappings per partition: CheckResourceLimits
// compares that with RLIMIT_NOFILE and vm.max_map_count at start.
//
// # Checkpoint files (text, as Kafka)
//
//	0\n                      version
//	<count>\n
//	<topic> <partition> <offset>\n   (per-dir offset checkpoints)
//	<epoch> <startOffset>\n          (leader-epoch-checkpoint)
//
// Every checkpoint, snapshot and partition.metadata is written atomically:
// write <name>.tmp, fsync, rename, fsync the directory. A file that does not
// parse (wrong version, count mismatch, no final newline) is treated as
// missing, with a log line: an unreadable recovery point checkpoint means a
// full recovery of the dir's logs.
//
// # Transaction index (.txnindex) and the last stable offset
//
// Kafka's TransactionIndex, 34-byte entries (version int16 0, producerId,
// firstOffset, lastOffset, lastStableOffset: int64s), one per aborted
// transaction whose ABORT marker the segment holds; txnindex.go has the
// layout and its recovery, producer_txn.go the transaction rules of
// producer state, the last stable offset and Kafka's collectAbortedTxns
// (Log.AbortedTransactions).
//
// # Producer state snapshot (.snapshot), version 1, big-endian
//
//	offset size field
//	     0    4 magic "KBPS"
//	     4    2 version (1)
//	     6    4 crc32c of everything after this field
//	    10    4 count
//	    14    - count entries:
//	              producerId i64, epoch i16, lastTimestamp i64,
//	              coordinatorEpoch i32, currentTxnFirstOffset i64,
//	              nbatches u8, then nbatches x (firstSeq i32, lastSeq i32,
//	              firstOffset i64, lastOffset i64, maxTimestamp i64)
//
// A snapshot named N holds the state after every batch below offset N. One
// is written at every roll (N = the log end offset) and at close.
//
// # Recovery rules (OpenLog)
//
//  1. Interrupted compaction swaps are completed: a <base>.log.swap
//     replaces the segments with base offsets in [base, its next offset),
//     then it and its index .swap files are renamed into place (an index
//     .swap alone is renamed if its .log exists). Then stray files
//     (*.cleaned, other *.swap, *.deleted, *.tmp) and index files without a
//     .log are deleted.
//  2. After an unclean shutdown, every segment that may hold offsets at or
//     after the recovery point is recovered: each batch's length, magic and
//     CRC are checked and its offsets must increase within the segment's
//     range; the file is truncated after the last valid batch and both
//     indexes are rebuilt. A zero-filled preallocated tail of the last
//     segment is simply trimmed; any other invalid data (torn write,
//     garbage, bad CRC, or any tail at all in a rolled segment, which was
//     trimmed at the roll: its end was lost) also deletes every later
//     segment, so that the log never has a hole. Batches below the recovery point were
//     fsynced and are never dropped unless corrupt.
//  3. Other segments get Kafka's cheap sanity check: index files present
//     with whole entries, the last offset index entry pointing at a batch
//     boundary whose last offset it names, the last time index entry inside
//     the segment. Failing segments are recovered as in 2. The last segment
//     also has the batches after its last index entry CRC-checked and its
//     indexes fully validated; other segments' indexes are fully validated
//     when first mapped, and rebuilt from the log if corrupt.
//  4. The log end offset is the end of the last valid batch; the log start
//     offset is max(checkpoint, first segment); the high watermark is
//     clamped into [log start, log end], and so is the recovery point
//     (nothing below the log start is left to recover; Kafka's UnifiedLog
//     raises it at load too). If the checkpointed log start is beyond the
//     log end, the log restarts empty there.
//  5. The leader epoch cache is loaded (rebuilt from the batch headers if
//     missing or corrupt) and truncated to [log start, log end].
//  6. Transaction indexes are read; entries whose marker lies beyond their
//     segment's valid data or at or after the recovery point, and torn
//     tails, are dropped (the replay of 7 writes those of the log again).
//  7. Producer state: snapshots above the log end are deleted, the newest
//     valid one at or below the log end (after an unclean shutdown: at or
//     below the recovery point) is loaded (corrupt ones are deleted) and the
//     batches after it are replayed from their headers and markers, which
//     opens and completes transactions and writes again the transaction
//     index entries a crash lost. (Snapshots are only written once the data
//     below them is in the log, and truncation removes later ones, so the
//     newest one at or below the log end is consistent.) When retention
//     moved the log start to a segment's base, the snapshot taken at that
//     segment's roll holds the transactions open there: with the recovery
//     point raised to the log start (4), the replay starts from it and
//     completes the transactions whose data retention deleted while their
//     ABORT markers remain.
//
// Progress is logged every RecoveryProgressEvery segments.
//
// # Log compaction (cleanup.policy=compact; cleaner.go)
//
// Kafka's LogCleaner semantics, per log:
//
//   - The dirty section runs from the cleaner checkpoint (the log start
//     offset if unknown or outside the log) to the first uncleanable
//     offset: the start of the segment holding min(HW, active segment base,
//     first dirty segment whose largest timestamp is within
//     min.compaction.lag.ms of now). The active segment and everything
//     from the segment holding the last stable offset on are never touched.
//   - When: the Manager's cleaner goroutine, every LogCleanerBackoff, cleans
//     the compacted logs whose dirty ratio (dirty section bytes / bytes of
//     the dirty and clean sections) exceeds min.cleanable.dirty.ratio, or
//     whose dirty section has a first batch older than
//     max.compaction.lag.ms, dirtiest first. Log.Compact cleans at once.
//     max.compaction.lag.ms also caps segment.ms for the active segment.
//   - The offset map holds key -> last offset over the dirty section (keys
//     compared byte for byte), bounded by CleanerDedupeBufferBytes; if it
//     fills, the cleaning covers the mapped offsets and the next one goes
//     on from there. The checkpoint moves to the end of the mapped range
//     once every group was swapped.
//   - Every segment from the first one to the end of the mapped range is
//     rewritten, in groups of consecutive segments of at most segment.bytes
//     of input (and an offset span that fits the index), each into one
//     segment with the group's first base offset (possibly empty), the last
//     segment's modification time, and rebuilt indexes.
//   - A record is kept if it lies after the mapped range, or has a key and
//     is the latest of its key, and has a value or is a tombstone (null
//     value) whose batch has no delete horizon or one not yet reached.
//     Keyless records are dropped. A batch keeping a tombstone gets a delete
//     horizon of now + delete.retention.ms the first time (KIP-534: bit 6,
//     stored in baseTimestamp): tombstones go at the first cleaning after
//     delete.retention.ms past the cleaning that first kept them.
//   - Transactions (cleaner_txn.go, Kafka's CleanedTransactionMetadata):
//     batches of aborted transactions (known from the .txnindex files) are
//     dropped and their keys never enter the offset map; an ABORT marker
//     stays while its transaction's data is being removed (its index entry
//     moves to the cleaned segment), a COMMIT marker while the cleaning
//     sees data of its transaction; otherwise a marker gets a delete
//     horizon and goes at the first cleaning after it. The last batch or
//     marker of an active producer stays as an empty header.
//   - Batches: a batch whose records all stay, and that needs no new horizon, is
//     copied byte for byte. Otherwise its kept records are re-encoded
//     into a batch with the original baseOffset, lastOffsetDelta,
//     partition leader epoch, attributes, producer id, epoch and base
//     sequence, recompressed with the original codec (snappy keeps the Java
//     client's xerial framing if it had it); each record keeps its offset,
//     timestamp, key, value and headers (baseTimestamp becomes the horizon
//     or the first record's timestamp, maxTimestamp the largest kept one
//     for CreateTime). A batch left without records is dropped, except the
//     last batch of an active idempotent producer, kept as an empty
//     header-only batch (no records, baseTimestamp -1, no compression) so
//     that its sequence survives and a retry of it is still a duplicate.
//   - Swap, crash-safe as Kafka: write <base>.log/.index/.timeindex.cleaned
//     and fsync them (without the append lock); then, under it, rename
//     .log.cleaned to .log.swap (the commit point), the indexes to .swap,
//     fsync the dir, delete the other segments of the group, fsync the dir,
//     rename the .swap files over <base>.*, publish the new segment list.
//     Readers holding old segments keep their mappings; old segments stay
//     mapped during the swap so nobody opens a replaced path. A truncation,
//     close or retention that changes the group aborts the cleaning before
//     the commit. Recovery rule 1 finishes a committed swap.
//   - The produce path (the broker, before the append) refuses a keyless
//     record on a compacted topic with INVALID_RECORD.
//   - cleanup.policy=compact,delete: the cleaner and time/size retention
//     both apply.
//
// # Truncation order
//
// A truncation (TruncateTo) first flushes the segments before its target
// (the target's fsync must not make later offsets durable while an earlier
// rolled segment's end is not), deletes the later segments newest first (a
// crash between two unlinks leaves a shorter log, never a hole), syncs the
// directory, cuts the target and syncs it, and, when the recovery point
// moved down, writes the recovery point checkpoint at once (Kafka's
// LogManager.truncateTo): offsets past the cut are written again, unflushed,
// and a stale checkpoint would tell recovery they were on disk. The
// power-loss journal suite (powercut_test.go) found all three.
//
// # Log dir failures
//
// An I/O error in a flush (group commit or flush.ms), a checkpoint write or
// opening a log takes the whole log dir offline (Kafka's
// LogDirFailureChannel): every log in it refuses writes (ErrLogDirOffline)
// and ManagerOptions.OnLogDirFailure is told once; the broker halts.
//
// # Files
//
// Every file of a log dir is reached through a vfs.FS (LogOptions.FS,
// ManagerOptions.FS; vfs.Default is the operating system): opens, writes,
// fsyncs, msyncs of mapped ranges, directory syncs, renames and removals.
// That is what lets tests cut power (vfs.CrashFS keeps only what was
// synced) and inject I/O errors. Only the format-time helpers of
// logdirs.go use the os package directly.
//
// # Concurrency
//
// Log methods are safe for concurrent use. Mutations serialise on the
// log's append lock; reads take no log lock (see Log). A cleaning copies
// without the append lock and takes it only to swap. Do not call
// TruncateTo from a goroutine that holds an unreleased ReadResult of the
// same log: it waits for that reader.
package storage

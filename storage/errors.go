package storage

import (
	"errors"
	"fmt"
	"syscall"
)

// Sentinel errors. Callers match them with errors.Is; every error returned by
// this package that has one of these causes wraps it (usually with context).
// Errors about the bytes of a batch (corrupt, truncated, zeroed, wrong
// magic, invalid) wrap the record package's sentinels instead:
// record.ErrCorruptBatch and its siblings. On the append path nothing is
// written after one; recovery treats a truncated or zeroed batch as a torn
// write.
var (
	// ErrRecordBatchTooLarge: an append is larger than the segment size
	// (Kafka's RecordBatchTooLargeException).
	ErrRecordBatchTooLarge = errors.New("storage: record batch larger than segment size")
	// ErrOffsetOutOfRange: an offset below the log start offset or above the
	// log end offset.
	ErrOffsetOutOfRange = errors.New("storage: offset out of range")
	// ErrInvalidOffset: a follower append does not start at the log end offset,
	// or carries offsets that go backwards.
	ErrInvalidOffset = errors.New("storage: invalid append offset")
	// ErrDiskFull: the filesystem is out of space (ENOSPC). The log stays
	// usable; nothing of the failed append was written. Errors with this cause
	// also match syscall.ENOSPC.
	ErrDiskFull = errors.New("storage: disk full")
	// ErrLogClosed: the log was closed or deleted.
	ErrLogClosed = errors.New("storage: log closed")
	// ErrDuplicateSequence: an idempotent producer resent a batch that is
	// already in the log. Returned as a *DuplicateBatchError which carries the
	// offsets of the original.
	ErrDuplicateSequence = errors.New("storage: duplicate producer sequence")
	// ErrOutOfOrderSequence: an idempotent producer's sequence has a gap.
	ErrOutOfOrderSequence = errors.New("storage: out of order producer sequence")
	// ErrInvalidProducerEpoch: a producer epoch older than the current one.
	ErrInvalidProducerEpoch = errors.New("storage: invalid producer epoch")
	// ErrInvalidTxnState: a transactional batch the transaction coordinator
	// did not verify, or a non-transactional batch of a producer whose
	// transaction is open (Kafka's InvalidTxnStateException).
	ErrInvalidTxnState = errors.New("storage: invalid transaction state")
	// ErrTransactionCoordinatorFenced: a transaction marker from a
	// coordinator epoch older than one the producer's markers came from.
	ErrTransactionCoordinatorFenced = errors.New("storage: transaction coordinator fenced")
	// ErrCorruptIndex: an offset or time index failed its sanity check.
	// Recovery rebuilds the index from the log.
	ErrCorruptIndex = errors.New("storage: corrupt index")
	// ErrCorruptCheckpoint: a checkpoint or snapshot file could not be parsed.
	ErrCorruptCheckpoint = errors.New("storage: corrupt checkpoint file")
	// ErrInconsistentTopicID: partition.metadata names another topic id.
	ErrInconsistentTopicID = errors.New("storage: inconsistent topic id")
	// ErrLogFailed: an earlier flush failed; the state of the page cache is
	// unknown, so the log refuses further writes (Kafka marks the log dir
	// offline). The original error is wrapped too.
	ErrLogFailed = errors.New("storage: log failed")
	// ErrResourceLimit: the process ran out of a kernel resource a log
	// needs, open file descriptors (ErrTooManyOpenFiles) or memory mappings
	// (ErrTooManyMappings). Nothing is wrong with the data or the disk: the
	// log opens once the limit is raised or other logs are closed, so this
	// is never a log dir failure.
	ErrResourceLimit = errors.New("storage: process resource limit reached")
	// ErrTooManyOpenFiles: EMFILE or ENFILE (RLIMIT_NOFILE or fs.file-max).
	// It matches ErrResourceLimit and the errno.
	ErrTooManyOpenFiles = fmt.Errorf("%w: too many open files", ErrResourceLimit)
	// ErrTooManyMappings: mmap failed with ENOMEM: vm.max_map_count (or the
	// address space) is exhausted. It matches ErrResourceLimit and ENOMEM.
	ErrTooManyMappings = fmt.Errorf("%w: too many memory mappings", ErrResourceLimit)
	// ErrLogDirOffline: the log dir failed (an I/O error: EIO, EROFS) and
	// takes no new logs until the broker restarts, as Kafka's offline log
	// dirs. The original error is wrapped too.
	ErrLogDirOffline = errors.New("storage: log dir offline")
)

// DuplicateBatchError reports that an idempotent producer's batch is a
// duplicate of one already appended (same producer id, epoch and sequence
// range). Kafka answers such a produce with success and the original offsets.
// It matches ErrDuplicateSequence with errors.Is.
type DuplicateBatchError struct {
	ProducerID  int64
	FirstOffset int64 // base offset of the original batch
	LastOffset  int64 // last offset of the original batch
	Timestamp   int64 // max timestamp of the original batch
}

func (e *DuplicateBatchError) Error() string {
	return fmt.Sprintf("storage: duplicate batch from producer %d (original offsets %d-%d)",
		e.ProducerID, e.FirstOffset, e.LastOffset)
}

// Is makes errors.Is(err, ErrDuplicateSequence) true.
func (e *DuplicateBatchError) Is(target error) bool { return target == ErrDuplicateSequence }

// diskError classifies an error from a file syscall (open, write,
// fallocate, mmap, ...) and wraps it with the operation for context: ENOSPC
// and EDQUOT become ErrDiskFull, EMFILE and ENFILE ErrTooManyOpenFiles,
// ENOMEM ErrTooManyMappings; the errno still matches.
func diskError(op string, err error) error {
	if err == nil {
		return nil
	}
	if kind := errorKind(err); kind != nil {
		return fmt.Errorf("%w: %s: %w", kind, op, err)
	}
	return fmt.Errorf("storage: %s: %w", op, err)
}

// errorKind is the sentinel an errno maps to, or nil.
func errorKind(err error) error {
	switch {
	case errors.Is(err, ErrDiskFull), errors.Is(err, ErrResourceLimit):
		return nil // classified already
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return ErrDiskFull
	case errors.Is(err, syscall.EMFILE), errors.Is(err, syscall.ENFILE):
		return ErrTooManyOpenFiles
	case errors.Is(err, syscall.ENOMEM):
		return ErrTooManyMappings
	}
	return nil
}

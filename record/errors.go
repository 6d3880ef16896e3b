package record

import "errors"

// Sentinel errors. Callers match them with errors.Is; every error this
// package returns wraps one of them, with the position or field that failed.
var (
	// ErrCorruptBatch: a batch failed validation (length, CRC, offset
	// deltas, a record or the compressed data that does not decode).
	ErrCorruptBatch = errors.New("record: corrupt record batch")
	// ErrTruncatedBatch: the buffer ends inside a batch. In a log this is
	// a torn write.
	ErrTruncatedBatch = errors.New("record: truncated record batch")
	// ErrZeroedBatch: the bytes where a batch header should be are zeros,
	// which is what a preallocated segment tail looks like after a crash.
	ErrZeroedBatch = errors.New("record: zeroed record batch header")
	// ErrUnsupportedMagic: the batch is not in the v2 format (magic 2).
	ErrUnsupportedMagic = errors.New("record: unsupported record batch magic")
	// ErrInvalidRecord: a batch or record is well formed but breaks a rule
	// of its use (a produce batch whose recordCount is not
	// lastOffsetDelta+1, a control record that is not one). Kafka answers
	// INVALID_RECORD.
	ErrInvalidRecord = errors.New("record: invalid record")
)

package record

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// sizeAt reads the total size of the batch starting at b[0] from its length
// field, checking only the bounds every later step relies on (the size may
// exceed len(b)). It tells a zero-filled header (a preallocated tail) from
// garbage.
func sizeAt(b []byte) (int, error) {
	if len(b) < LogOverhead {
		return 0, fmt.Errorf("%w: %d bytes left, need %d for offset and length", ErrTruncatedBatch, len(b), LogOverhead)
	}
	length := int32(binary.BigEndian.Uint32(b[offBatchLength:]))
	if length == 0 && binary.BigEndian.Uint64(b) == 0 {
		return 0, ErrZeroedBatch
	}
	if length < BatchHeaderSize-LogOverhead || int64(length) > maxBatchSize {
		return 0, fmt.Errorf("%w: batch length %d", ErrCorruptBatch, length)
	}
	return int(length) + LogOverhead, nil
}

// checkStructure checks what makes a batch walkable once its size is known
// to fit: magic and lastOffsetDelta. b is exactly the batch.
func checkStructure(b []byte) (BatchHeader, error) {
	h, err := ParseBatchHeader(b)
	if err != nil {
		return h, err
	}
	return h, checkHeader(h)
}

// checkHeader checks the header fields a walk over the batch relies on.
func checkHeader(h BatchHeader) error {
	if h.Magic != Magic {
		return fmt.Errorf("%w: magic %d", ErrUnsupportedMagic, h.Magic)
	}
	if h.LastOffsetDelta < 0 {
		return fmt.Errorf("%w: lastOffsetDelta %d", ErrCorruptBatch, h.LastOffsetDelta)
	}
	return nil
}

// Frame parses the batch at the start of b, which may hold more after it:
// its header and size, with the structure checked (length within b, magic
// 2, lastOffsetDelta not negative) but not the CRC. Errors wrap
// ErrTruncatedBatch, ErrZeroedBatch, ErrCorruptBatch or ErrUnsupportedMagic.
func Frame(b []byte) (BatchHeader, int, error) {
	size, err := sizeAt(b)
	if err == nil && size > len(b) {
		err = fmt.Errorf("%w: batch of %d bytes, only %d present", ErrTruncatedBatch, size, len(b))
	}
	if err != nil {
		return BatchHeader{}, 0, err
	}
	h, err := checkStructure(b[:size])
	return h, size, err
}

// FrameOK is Frame for callers that need no reason: ok is false exactly
// where Frame returns an error, and no error is built. A log reader's walk
// ends at the first position without a whole batch (the log end, the end
// of what it may see) on nearly every fetch: formatting an error there was
// an allocation per read.
func FrameOK(b []byte) (h BatchHeader, size int, ok bool) {
	if len(b) < LogOverhead {
		return BatchHeader{}, 0, false
	}
	length := int32(binary.BigEndian.Uint32(b[offBatchLength:]))
	if length < BatchHeaderSize-LogOverhead || int64(length) > maxBatchSize {
		return BatchHeader{}, 0, false // a zeroed header too
	}
	size = int(length) + LogOverhead
	if size > len(b) {
		return BatchHeader{}, 0, false
	}
	h, err := checkStructure(b[:size])
	if err != nil {
		return BatchHeader{}, 0, false
	}
	return h, size, true
}

// WholeBatches returns the prefix of b that ends after its last whole batch:
// a fetch response may cut its last batch at the byte limit. It looks only at
// the length fields; a malformed batch is left in for the validation that
// follows to refuse.
func WholeBatches(b []byte) []byte {
	n := 0
	for n < len(b) {
		size, err := sizeAt(b[n:])
		if errors.Is(err, ErrTruncatedBatch) || (err == nil && size > len(b)-n) {
			break
		}
		if err != nil {
			return b
		}
		n += size
	}
	return b[:n]
}

// BatchIter walks a buffer of concatenated batches. It stops at the end of
// the buffer, or at the first batch that is cut short or malformed; Err then
// says why. Use it as
//
//	it := record.Batches(b)
//	for it.Next() { h := it.Header(); raw := it.Batch() ... }
//	if err := it.Err(); err != nil { ... torn or corrupt at it.Pos() ... }
//
// It is a value type and allocates nothing: it runs on the read and recovery
// paths for every batch.
type BatchIter struct {
	buf      []byte
	pos      int  // start of the current batch (after Next) or of the next one
	next     int  // start of the following batch
	checkCRC bool // also verify each batch's CRC
	hdr      BatchHeader
	err      error
}

// Batches iterates b checking each batch's structure (length, magic,
// lastOffsetDelta) but not its CRC.
func Batches(b []byte) BatchIter { return BatchIter{buf: b} }

// VerifiedBatches iterates b checking CRCs too: recovery and follower
// appends use it.
func VerifiedBatches(b []byte) BatchIter { return BatchIter{buf: b, checkCRC: true} }

// Next advances to the next batch. It returns false at the end of the buffer
// or when the next batch is invalid (Err is then non-nil).
func (it *BatchIter) Next() bool {
	if it.err != nil {
		return false
	}
	it.pos = it.next
	rest := it.buf[it.pos:]
	if len(rest) == 0 {
		return false
	}
	h, size, err := Frame(rest)
	if err == nil && it.checkCRC {
		err = checkCRC(rest[:size], h)
	}
	if err != nil {
		it.err = fmt.Errorf("batch at byte %d: %w", it.pos, err)
		return false
	}
	it.hdr, it.next = h, it.pos+size
	return true
}

// Header is the current batch's header.
func (it *BatchIter) Header() BatchHeader { return it.hdr }

// Batch is the current batch's bytes (a sub-slice of the buffer).
func (it *BatchIter) Batch() []byte { return it.buf[it.pos:it.next:it.next] }

// Pos is the byte position of the current batch, or after a failed Next the
// position where the invalid batch starts (the valid prefix length).
func (it *BatchIter) Pos() int { return it.pos }

// Err is nil after a clean end, else why the walk stopped; it wraps one of
// ErrTruncatedBatch, ErrZeroedBatch, ErrCorruptBatch or ErrUnsupportedMagic.
func (it *BatchIter) Err() error { return it.err }

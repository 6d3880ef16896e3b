package storage

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
)

// Byte offsets of the record batch v2 header fields (see doc.go).
const (
	offBaseOffset           = 0
	offBatchLength          = 8
	offPartitionLeaderEpoch = 12
	offMagic                = 16
	offCRC                  = 17
	offAttributes           = 21
	offLastOffsetDelta      = 23
	offBaseTimestamp        = 27
	offMaxTimestamp         = 35
	offProducerID           = 43
	offProducerEpoch        = 51
	offBaseSequence         = 53
	offRecordCount          = 57

	// BatchHeaderSize is the size of the v2 batch header; records follow it.
	BatchHeaderSize = 61
	// batchLogOverhead is the part of the header not counted by batchLength.
	batchLogOverhead = 12
	// maxBatchSize bounds batchLength so that a garbage length cannot make
	// the iterator look past any real buffer.
	maxBatchSize = math.MaxInt32 - batchLogOverhead
)

// Attribute bits of a v2 batch.
const (
	attrCompressionMask = 0x07
	attrTimestampType   = 0x08
	attrTransactional   = 0x10
	attrControl         = 0x20
)

// Compression codecs as stored in attribute bits 0-2.
type Compression int8

const (
	CompressionNone   Compression = 0
	CompressionGzip   Compression = 1
	CompressionSnappy Compression = 2
	CompressionLZ4    Compression = 3
	CompressionZstd   Compression = 4
)

func (c Compression) String() string {
	switch c {
	case CompressionNone:
		return "none"
	case CompressionGzip:
		return "gzip"
	case CompressionSnappy:
		return "snappy"
	case CompressionLZ4:
		return "lz4"
	case CompressionZstd:
		return "zstd"
	}
	return fmt.Sprintf("compression(%d)", int8(c))
}

// TimestampType says who set a batch's timestamps.
type TimestampType int8

const (
	CreateTime    TimestampType = 0 // set by the producer
	LogAppendTime TimestampType = 1 // set by the broker at append
)

// castagnoli is the CRC-32C table; read-only after package initialisation.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// BatchHeader is the decoded fixed header of a record batch v2.
type BatchHeader struct {
	BaseOffset           int64
	BatchLength          int32 // bytes after the batchLength field
	PartitionLeaderEpoch int32
	Magic                int8
	CRC                  uint32
	Attributes           int16
	LastOffsetDelta      int32
	BaseTimestamp        int64
	MaxTimestamp         int64
	ProducerID           int64
	ProducerEpoch        int16
	BaseSequence         int32
	RecordCount          int32
}

// LastOffset is the offset of the last record the batch covers.
func (h BatchHeader) LastOffset() int64 { return h.BaseOffset + int64(h.LastOffsetDelta) }

// NextOffset is the offset after the batch.
func (h BatchHeader) NextOffset() int64 { return h.LastOffset() + 1 }

// Size is the whole batch size in bytes, header included.
func (h BatchHeader) Size() int { return int(h.BatchLength) + batchLogOverhead }

// Compression is the codec of the records section.
func (h BatchHeader) Compression() Compression {
	return Compression(h.Attributes & attrCompressionMask)
}

// TimestampType tells whether MaxTimestamp was set by the broker.
func (h BatchHeader) TimestampType() TimestampType {
	if h.Attributes&attrTimestampType != 0 {
		return LogAppendTime
	}
	return CreateTime
}

// IsTransactional reports the transactional attribute bit.
func (h BatchHeader) IsTransactional() bool { return h.Attributes&attrTransactional != 0 }

// IsControl reports the control attribute bit (transaction markers).
func (h BatchHeader) IsControl() bool { return h.Attributes&attrControl != 0 }

// LastSequence is the sequence number of the last record, with Kafka's int32
// wrap-around (DefaultRecordBatch.lastSequence).
func (h BatchHeader) LastSequence() int32 {
	if h.BaseSequence < 0 {
		return -1
	}
	return incrementSequence(h.BaseSequence, h.LastOffsetDelta)
}

// incrementSequence adds inc to seq wrapping past MaxInt32 to 0.
func incrementSequence(seq, inc int32) int32 {
	if seq > math.MaxInt32-inc {
		return inc - (math.MaxInt32 - seq) - 1
	}
	return seq + inc
}

// ParseBatchHeader decodes the fixed header at the start of b. It checks only
// that the header is present; use ValidateBatch for a full check.
func ParseBatchHeader(b []byte) (BatchHeader, error) {
	if len(b) < BatchHeaderSize {
		return BatchHeader{}, fmt.Errorf("%w: %d header bytes, need %d", ErrTruncatedBatch, len(b), BatchHeaderSize)
	}
	be := binary.BigEndian
	return BatchHeader{
		BaseOffset:           int64(be.Uint64(b[offBaseOffset:])),
		BatchLength:          int32(be.Uint32(b[offBatchLength:])),
		PartitionLeaderEpoch: int32(be.Uint32(b[offPartitionLeaderEpoch:])),
		Magic:                int8(b[offMagic]),
		CRC:                  be.Uint32(b[offCRC:]),
		Attributes:           int16(be.Uint16(b[offAttributes:])),
		LastOffsetDelta:      int32(be.Uint32(b[offLastOffsetDelta:])),
		BaseTimestamp:        int64(be.Uint64(b[offBaseTimestamp:])),
		MaxTimestamp:         int64(be.Uint64(b[offMaxTimestamp:])),
		ProducerID:           int64(be.Uint64(b[offProducerID:])),
		ProducerEpoch:        int16(be.Uint16(b[offProducerEpoch:])),
		BaseSequence:         int32(be.Uint32(b[offBaseSequence:])),
		RecordCount:          int32(be.Uint32(b[offRecordCount:])),
	}, nil
}

// batchSizeAt reads the total size of the batch starting at b[0] from its
// length field, checking only the bounds every later step relies on. It
// distinguishes a zero-filled header (the preallocated tail) from garbage.
func batchSizeAt(b []byte) (int, error) {
	if len(b) < batchLogOverhead {
		return 0, fmt.Errorf("%w: %d bytes left, need %d for offset and length", ErrTruncatedBatch, len(b), batchLogOverhead)
	}
	length := int32(binary.BigEndian.Uint32(b[offBatchLength:]))
	if length == 0 && binary.BigEndian.Uint64(b) == 0 {
		return 0, ErrZeroedBatch
	}
	if length < BatchHeaderSize-batchLogOverhead || int64(length) > maxBatchSize {
		return 0, fmt.Errorf("%w: batch length %d", ErrCorruptBatch, length)
	}
	return int(length) + batchLogOverhead, nil
}

// checkBatchStructure checks what makes a batch walkable: length, magic and
// lastOffsetDelta. b must be exactly one batch.
func checkBatchStructure(b []byte) (BatchHeader, error) {
	size, err := batchSizeAt(b)
	if err != nil {
		return BatchHeader{}, err
	}
	if size != len(b) {
		if size > len(b) {
			return BatchHeader{}, fmt.Errorf("%w: batch of %d bytes, only %d present", ErrTruncatedBatch, size, len(b))
		}
		return BatchHeader{}, fmt.Errorf("%w: batch length %d does not match buffer of %d bytes", ErrCorruptBatch, size, len(b))
	}
	h, _ := ParseBatchHeader(b)
	if h.Magic != 2 {
		return h, fmt.Errorf("%w: magic %d", ErrUnsupportedMagic, h.Magic)
	}
	if h.LastOffsetDelta < 0 {
		return h, fmt.Errorf("%w: lastOffsetDelta %d", ErrCorruptBatch, h.LastOffsetDelta)
	}
	return h, nil
}

// ValidateBatch checks one whole batch as stored in a log: length matches the
// buffer, magic is 2, the CRC-32C over attributes..end is correct and
// lastOffsetDelta is not negative. Compacted batches may hold fewer records
// than their offset range, so recordCount is not checked here; see
// ValidateProduceBatch.
func ValidateBatch(b []byte) error {
	_, err := validateBatch(b)
	return err
}

func validateBatch(b []byte) (BatchHeader, error) {
	h, err := checkBatchStructure(b)
	if err != nil {
		return h, err
	}
	if crc := crc32.Checksum(b[offAttributes:], castagnoli); crc != h.CRC {
		return h, fmt.Errorf("%w: crc %08x, computed %08x", ErrCorruptBatch, h.CRC, crc)
	}
	return h, nil
}

// ValidateProduceBatch is ValidateBatch plus the checks Kafka applies to
// batches from producers: recordCount == lastOffsetDelta+1 and at least one
// record.
func ValidateProduceBatch(b []byte) error {
	_, err := validateProduceBatch(b)
	return err
}

func validateProduceBatch(b []byte) (BatchHeader, error) {
	h, err := validateBatch(b)
	if err != nil {
		return h, err
	}
	if h.RecordCount <= 0 || int64(h.RecordCount) != int64(h.LastOffsetDelta)+1 {
		return h, fmt.Errorf("%w: recordCount %d with lastOffsetDelta %d", ErrInvalidRecord, h.RecordCount, h.LastOffsetDelta)
	}
	return h, nil
}

// SetBaseOffset writes baseOffset in place. The field lies outside the CRC.
func SetBaseOffset(b []byte, offset int64) {
	binary.BigEndian.PutUint64(b[offBaseOffset:], uint64(offset))
}

// SetPartitionLeaderEpoch writes partitionLeaderEpoch in place. The field
// lies outside the CRC.
func SetPartitionLeaderEpoch(b []byte, epoch int32) {
	binary.BigEndian.PutUint32(b[offPartitionLeaderEpoch:], uint32(epoch))
}

// SetLogAppendTime marks the batch's timestamps as LogAppendTime with ts
// (milliseconds) as maxTimestamp, like Kafka's setMaxTimestamp, and recomputes
// the CRC. baseTimestamp and the records are left alone: readers use
// maxTimestamp for every record of a LogAppendTime batch.
func SetLogAppendTime(b []byte, ts int64) {
	attrs := binary.BigEndian.Uint16(b[offAttributes:]) | attrTimestampType
	binary.BigEndian.PutUint16(b[offAttributes:], attrs)
	binary.BigEndian.PutUint64(b[offMaxTimestamp:], uint64(ts))
	binary.BigEndian.PutUint32(b[offCRC:], crc32.Checksum(b[offAttributes:], castagnoli))
}

// BatchIter walks a buffer of concatenated batches. It stops at the end of
// the buffer, or at the first batch that is cut short or malformed; Err then
// says why. Use it as
//
//	it := Batches(b)
//	for it.Next() { h := it.Header(); raw := it.Batch() ... }
//	if err := it.Err(); err != nil { ... torn or corrupt at it.Pos() ... }
//
// The zero-allocation value type is deliberate: it runs on the read and
// recovery paths for every batch.
type BatchIter struct {
	buf      []byte
	pos      int  // start of the current batch (after Next) or of the next one
	next     int  // start of the following batch
	checkCRC bool // also verify each batch's CRC
	hdr      BatchHeader
	err      error
}

// Batches iterates b checking structure (length, magic, lastOffsetDelta) but
// not CRCs.
func Batches(b []byte) BatchIter { return BatchIter{buf: b} }

// VerifiedBatches iterates b checking CRCs too; recovery uses it.
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
	size, err := batchSizeAt(rest)
	if err == nil && size > len(rest) {
		err = fmt.Errorf("%w: batch of %d bytes, only %d present", ErrTruncatedBatch, size, len(rest))
	}
	if err == nil {
		if it.checkCRC {
			it.hdr, err = validateBatch(rest[:size])
		} else {
			it.hdr, err = checkBatchStructure(rest[:size])
		}
	}
	if err != nil {
		it.err = fmt.Errorf("batch at byte %d: %w", it.pos, err)
		return false
	}
	it.next = it.pos + size
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

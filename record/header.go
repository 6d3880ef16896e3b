package record

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Byte offsets of the batch header fields (see the layout in doc.go).
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
)

const (
	// BatchHeaderSize is the size of the v2 batch header; the records
	// section follows it (Kafka's RECORD_BATCH_OVERHEAD).
	BatchHeaderSize = 61
	// LogOverhead is the part of a batch its batchLength does not count:
	// baseOffset and batchLength itself (Kafka's LOG_OVERHEAD).
	LogOverhead = 12
	// Magic is the only batch format version this package reads.
	Magic = 2
	// maxBatchSize bounds batchLength so that a garbage length cannot send
	// a reader past any real buffer.
	maxBatchSize = math.MaxInt32 - LogOverhead
)

// Attribute bits of a v2 batch.
const (
	AttrCompressionMask = 0x07
	AttrTimestampType   = 0x08 // set: LogAppendTime
	AttrTransactional   = 0x10
	AttrControl         = 0x20 // the batch holds one control record
	// AttrDeleteHorizon (KIP-534) is set by the log cleaner: baseTimestamp
	// holds the delete horizon, after which the batch's tombstones may go.
	// Record timestamps stay baseTimestamp + timestampDelta.
	AttrDeleteHorizon = 0x40
)

// Compression is a codec as stored in attribute bits 0-2.
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

// BatchHeader is the decoded fixed header of a v2 batch.
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
func (h BatchHeader) Size() int { return int(h.BatchLength) + LogOverhead }

// Compression is the codec of the records section.
func (h BatchHeader) Compression() Compression {
	return Compression(h.Attributes & AttrCompressionMask)
}

// TimestampType tells whether MaxTimestamp was set by the broker.
func (h BatchHeader) TimestampType() TimestampType {
	if h.Attributes&AttrTimestampType != 0 {
		return LogAppendTime
	}
	return CreateTime
}

// IsTransactional reports the transactional attribute bit.
func (h BatchHeader) IsTransactional() bool { return h.Attributes&AttrTransactional != 0 }

// IsControl reports the control attribute bit (transaction markers).
func (h BatchHeader) IsControl() bool { return h.Attributes&AttrControl != 0 }

// DeleteHorizon returns the batch's delete horizon (ms), if it has one.
func (h BatchHeader) DeleteHorizon() (int64, bool) {
	return h.BaseTimestamp, h.Attributes&AttrDeleteHorizon != 0
}

// LastSequence is the sequence number of the last record, with Kafka's int32
// wrap-around (DefaultRecordBatch.lastSequence); -1 without a sequence.
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
// that the header is there (ErrTruncatedBatch otherwise): Frame, Validate and
// ParseProduce check the rest.
func ParseBatchHeader(b []byte) (BatchHeader, error) {
	if len(b) < BatchHeaderSize {
		return BatchHeader{}, fmt.Errorf("%w: %d header bytes, need %d", ErrTruncatedBatch, len(b), BatchHeaderSize)
	}
	countParse(b)
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

// putHeader writes every field of h into b[:BatchHeaderSize], CRC included
// as it is in h.
func putHeader(b []byte, h *BatchHeader) {
	be := binary.BigEndian
	be.PutUint64(b[offBaseOffset:], uint64(h.BaseOffset))
	be.PutUint32(b[offBatchLength:], uint32(h.BatchLength))
	be.PutUint32(b[offPartitionLeaderEpoch:], uint32(h.PartitionLeaderEpoch))
	b[offMagic] = byte(h.Magic)
	be.PutUint32(b[offCRC:], h.CRC)
	be.PutUint16(b[offAttributes:], uint16(h.Attributes))
	be.PutUint32(b[offLastOffsetDelta:], uint32(h.LastOffsetDelta))
	be.PutUint64(b[offBaseTimestamp:], uint64(h.BaseTimestamp))
	be.PutUint64(b[offMaxTimestamp:], uint64(h.MaxTimestamp))
	be.PutUint64(b[offProducerID:], uint64(h.ProducerID))
	be.PutUint16(b[offProducerEpoch:], uint16(h.ProducerEpoch))
	be.PutUint32(b[offBaseSequence:], uint32(h.BaseSequence))
	be.PutUint32(b[offRecordCount:], uint32(h.RecordCount))
}

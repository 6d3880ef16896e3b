package record

import (
	"encoding/binary"
	"fmt"
)

// Batch is one whole v2 batch that passed validation (ParseProduce) or was
// built here (NewBatch, NewEndTxnMarkerBatch), with its parsed header. The
// bytes are the caller's: the setters change them in place and keep the
// header in step, so code below the validation never parses them again.
// The zero Batch is not valid.
type Batch struct {
	header BatchHeader
	bytes  []byte
}

// Header is the batch's header as of the last setter.
func (b Batch) Header() BatchHeader { return b.header }

// Bytes is the whole batch, header included.
func (b Batch) Bytes() []byte { return b.bytes }

// ParseProduce validates the records of one produce partition as Kafka does
// for a producer's batch: exactly one batch (ErrInvalidRecord otherwise),
// magic 2 (ErrUnsupportedMagic), whole and with a correct CRC
// (ErrTruncatedBatch, ErrCorruptBatch), and at least one record with
// recordCount == lastOffsetDelta+1 (ErrInvalidRecord). The header is parsed
// once, here. Size limits, timestamps and keys are the caller's policy,
// checked against the result.
func ParseProduce(records []byte) (Batch, error) {
	h, err := ParseBatchHeader(records)
	if err != nil {
		return Batch{}, err
	}
	if h.Size() != len(records) {
		return Batch{}, fmt.Errorf("%w: a produce must carry exactly one record batch (batch of %d bytes in %d)",
			ErrInvalidRecord, h.Size(), len(records))
	}
	if err := checkHeader(h); err != nil {
		return Batch{}, err
	}
	if err := checkCRC(records, h); err != nil {
		return Batch{}, err
	}
	if h.RecordCount <= 0 || int64(h.RecordCount) != int64(h.LastOffsetDelta)+1 {
		return Batch{}, fmt.Errorf("%w: recordCount %d with lastOffsetDelta %d", ErrInvalidRecord, h.RecordCount, h.LastOffsetDelta)
	}
	return Batch{header: h, bytes: records}, nil
}

// Clone is b with bytes of its own: a produce that waits (a transactional
// verification) outlives the request buffer its batch came from.
func (b Batch) Clone() Batch {
	return Batch{header: b.header, bytes: append([]byte(nil), b.bytes...)}
}

// SetBaseOffset writes baseOffset (outside the CRC).
func (b *Batch) SetBaseOffset(offset int64) {
	binary.BigEndian.PutUint64(b.bytes[offBaseOffset:], uint64(offset))
	b.header.BaseOffset = offset
}

// SetPartitionLeaderEpoch writes partitionLeaderEpoch (outside the CRC).
func (b *Batch) SetPartitionLeaderEpoch(epoch int32) {
	binary.BigEndian.PutUint32(b.bytes[offPartitionLeaderEpoch:], uint32(epoch))
	b.header.PartitionLeaderEpoch = epoch
}

// SetLogAppendTime marks the batch's timestamps as LogAppendTime with ts
// (ms) as maxTimestamp, like Kafka's setMaxTimestamp, and recomputes the
// CRC. baseTimestamp and the records stay: readers take maxTimestamp as the
// timestamp of every record of a LogAppendTime batch.
func (b *Batch) SetLogAppendTime(ts int64) {
	b.header.Attributes |= AttrTimestampType
	b.header.MaxTimestamp = ts
	binary.BigEndian.PutUint16(b.bytes[offAttributes:], uint16(b.header.Attributes))
	binary.BigEndian.PutUint64(b.bytes[offMaxTimestamp:], uint64(ts))
	b.header.CRC = updateCRC(b.bytes)
}

// SetProducer writes producerId, producerEpoch and baseSequence and
// recomputes the CRC (a transaction coordinator's markers, tests).
func (b *Batch) SetProducer(id int64, epoch int16, baseSequence int32) {
	b.header.ProducerID, b.header.ProducerEpoch, b.header.BaseSequence = id, epoch, baseSequence
	binary.BigEndian.PutUint64(b.bytes[offProducerID:], uint64(id))
	binary.BigEndian.PutUint16(b.bytes[offProducerEpoch:], uint16(epoch))
	binary.BigEndian.PutUint32(b.bytes[offBaseSequence:], uint32(baseSequence))
	b.header.CRC = updateCRC(b.bytes)
}

// NewBatch encodes h followed by records, an encoded records section
// (AppendRecord), already compressed with h's codec if it has one. It sets
// the header's batchLength, magic and CRC; the counts, deltas and
// timestamps are the caller's and are not checked.
func NewBatch(h BatchHeader, records []byte) Batch {
	b := make([]byte, BatchHeaderSize, BatchHeaderSize+len(records))
	h.BatchLength = int32(BatchHeaderSize + len(records) - LogOverhead)
	h.Magic = Magic
	putHeader(b, &h)
	b = append(b, records...)
	h.CRC = updateCRC(b)
	return Batch{header: h, bytes: b}
}

// EmptyBatch is the header-only batch Kafka keeps in place of h's batch when
// the cleaner removed all its records but the producer state still needs it
// (DefaultRecordBatch.writeEmptyHeader): the same offsets, producer fields,
// epochs, maxTimestamp and timestamp type, transactional and control bits;
// no records, no compression, baseTimestamp -1.
func EmptyBatch(h BatchHeader) Batch {
	h.Attributes &= AttrTimestampType | AttrTransactional | AttrControl
	h.BaseTimestamp, h.RecordCount = -1, 0
	return NewBatch(h, nil)
}

package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// attrDeleteHorizon is batch attribute bit 6 (KIP-534): baseTimestamp holds
// the delete horizon, the time after which the cleaner may drop the
// batch's tombstones. Record timestamps stay baseTimestamp + delta.
const attrDeleteHorizon = 0x40

// deleteHorizon returns the batch's delete horizon, if it has one.
func deleteHorizon(h BatchHeader) (int64, bool) {
	return h.BaseTimestamp, h.Attributes&attrDeleteHorizon != 0
}

// rawRecord is one decoded v2 record. The cleaner re-encodes retained
// records with a new timestampDelta and the rest copied verbatim, so key,
// value and headers are preserved byte for byte.
type rawRecord struct {
	attributes byte
	tsDelta    int64
	offDelta   int64
	key        []byte // nil if the key is null
	nullKey    bool
	nullValue  bool   // a tombstone
	tail       []byte // keyLength through the headers, verbatim
}

// timestamp is the record's stored timestamp. For a LogAppendTime batch
// readers use the batch maxTimestamp instead; the stored value is kept.
func (r *rawRecord) timestamp(h BatchHeader) int64 { return h.BaseTimestamp + r.tsDelta }

// decodeBatchRecords decompresses batch and decodes its records strictly,
// as Kafka's DefaultRecord.readFrom: every field in bounds, each record
// exactly its declared length, recordCount records and nothing after them,
// offset deltas within the batch. Errors wrap ErrCorruptBatch.
func decodeBatchRecords(batch []byte) (BatchHeader, []rawRecord, error) {
	h, err := ParseBatchHeader(batch)
	if err != nil {
		return h, nil, fmt.Errorf("%w: %w", ErrCorruptBatch, err)
	}
	if h.RecordCount < 0 || int64(h.RecordCount) > int64(h.LastOffsetDelta)+1 {
		return h, nil, fmt.Errorf("%w: batch %d: recordCount %d with lastOffsetDelta %d",
			ErrCorruptBatch, h.BaseOffset, h.RecordCount, h.LastOffsetDelta)
	}
	data, err := decompressRecords(h.Compression(), batch[BatchHeaderSize:])
	if err != nil {
		return h, nil, fmt.Errorf("%w: batch %d: %w", ErrCorruptBatch, h.BaseOffset, err)
	}
	recs := make([]rawRecord, 0, h.RecordCount)
	for i := int32(0); i < h.RecordCount; i++ {
		r, rest, err := decodeRecord(data)
		if err == nil && (r.offDelta < 0 || r.offDelta > int64(h.LastOffsetDelta)) {
			err = fmt.Errorf("offset delta %d outside the batch", r.offDelta)
		}
		if err != nil {
			return h, nil, fmt.Errorf("%w: batch %d record %d: %w", ErrCorruptBatch, h.BaseOffset, i, err)
		}
		recs = append(recs, r)
		data = rest
	}
	if len(data) != 0 {
		return h, nil, fmt.Errorf("%w: batch %d: %d bytes after its %d records", ErrCorruptBatch, h.BaseOffset, len(data), h.RecordCount)
	}
	return h, recs, nil
}

// recordReader decodes the varint fields of one record body.
type recordReader struct {
	b   []byte
	err error
}

func (r *recordReader) varint() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.err = errors.New("bad varint")
		return 0
	}
	r.b = r.b[n:]
	return v
}

// bytesField reads a varint length and that many bytes; -1 (if nullable)
// is null. It reports whether the field was null.
func (r *recordReader) bytesField(nullable bool) ([]byte, bool) {
	n := r.varint()
	switch {
	case r.err != nil:
		return nil, false
	case n == -1 && nullable:
		return nil, true
	case n < 0 || n > int64(len(r.b)):
		r.err = fmt.Errorf("field length %d with %d bytes left", n, len(r.b))
		return nil, false
	}
	v := r.b[:n:n]
	r.b = r.b[n:]
	return v, false
}

// decodeRecord decodes the record at the start of data and returns the
// bytes after it.
func decodeRecord(data []byte) (rawRecord, []byte, error) {
	length, n := binary.Varint(data)
	if n <= 0 || length < 1 || length > int64(len(data)-n) {
		return rawRecord{}, nil, fmt.Errorf("bad record length %d", length)
	}
	body, rest := data[n:n+int(length)], data[n+int(length):]
	r := rawRecord{attributes: body[0]}
	rd := recordReader{b: body[1:]}
	r.tsDelta = rd.varint()
	r.offDelta = rd.varint()
	r.tail = rd.b
	r.key, r.nullKey = rd.bytesField(true)
	_, r.nullValue = rd.bytesField(true)
	headers := rd.varint()
	if rd.err == nil && (headers < 0 || headers > int64(len(rd.b))) {
		rd.err = fmt.Errorf("header count %d", headers)
	}
	for i := int64(0); i < headers && rd.err == nil; i++ {
		rd.bytesField(false) // header key: never null
		rd.bytesField(true)
	}
	if rd.err == nil && len(rd.b) != 0 {
		rd.err = fmt.Errorf("%d bytes after the headers", len(rd.b))
	}
	return r, rest, rd.err
}

// appendRecord encodes r with timestamp delta tsDelta.
func appendRecord(dst []byte, r *rawRecord, tsDelta int64) []byte {
	var hdr [1 + 2*binary.MaxVarintLen64]byte
	hdr[0] = r.attributes
	n := 1 + binary.PutVarint(hdr[1:], tsDelta)
	n += binary.PutVarint(hdr[n:], r.offDelta)
	dst = binary.AppendVarint(dst, int64(n+len(r.tail)))
	dst = append(dst, hdr[:n]...)
	return append(dst, r.tail...)
}

// encodeBatch writes h (its BatchLength and CRC are computed) followed by
// records, an already encoded (and compressed) records section.
func encodeBatch(h BatchHeader, records []byte) []byte {
	b := make([]byte, BatchHeaderSize, BatchHeaderSize+len(records))
	be := binary.BigEndian
	be.PutUint64(b[offBaseOffset:], uint64(h.BaseOffset))
	be.PutUint32(b[offBatchLength:], uint32(BatchHeaderSize+len(records)-batchLogOverhead))
	be.PutUint32(b[offPartitionLeaderEpoch:], uint32(h.PartitionLeaderEpoch))
	b[offMagic] = 2
	be.PutUint16(b[offAttributes:], uint16(h.Attributes))
	be.PutUint32(b[offLastOffsetDelta:], uint32(h.LastOffsetDelta))
	be.PutUint64(b[offBaseTimestamp:], uint64(h.BaseTimestamp))
	be.PutUint64(b[offMaxTimestamp:], uint64(h.MaxTimestamp))
	be.PutUint64(b[offProducerID:], uint64(h.ProducerID))
	be.PutUint16(b[offProducerEpoch:], uint16(h.ProducerEpoch))
	be.PutUint32(b[offBaseSequence:], uint32(h.BaseSequence))
	be.PutUint32(b[offRecordCount:], uint32(h.RecordCount))
	b = append(b, records...)
	be.PutUint32(b[offCRC:], crc32.Checksum(b[offAttributes:], castagnoli))
	return b
}

// emptyBatch is the header-only batch Kafka keeps for the last batch of an
// active producer whose records were all removed
// (DefaultRecordBatch.writeEmptyHeader): same offsets, sequence, epochs
// and maxTimestamp, no records, no compression, baseTimestamp -1.
func emptyBatch(h BatchHeader) []byte {
	h.Attributes &= attrTimestampType | attrTransactional | attrControl
	h.BaseTimestamp, h.RecordCount = -1, 0
	return encodeBatch(h, nil)
}

// rebuildBatch re-encodes the retained records of orig with orig's
// attributes, baseOffset, lastOffsetDelta, producer id, epoch and base
// sequence and partition leader epoch (Kafka's buildRetainedRecordsInto),
// compressed with orig's codec (and snappy framing). horizon >= 0 marks the
// batch with that delete horizon. Each record keeps its offset and its
// timestamp: baseTimestamp becomes the horizon or the first record's
// timestamp and the deltas are recomputed. maxTimestamp is the largest
// retained timestamp (CreateTime) or orig's (LogAppendTime).
func (c *recordCompressor) rebuildBatch(orig []byte, h BatchHeader, recs []rawRecord, horizon int64) ([]byte, error) {
	nh := h
	nh.RecordCount = int32(len(recs))
	nh.BaseTimestamp = recs[0].timestamp(h)
	if horizon >= 0 {
		nh.BaseTimestamp = horizon
		nh.Attributes |= attrDeleteHorizon
	}
	if h.TimestampType() == CreateTime {
		nh.MaxTimestamp = recs[0].timestamp(h)
		for i := range recs {
			nh.MaxTimestamp = max(nh.MaxTimestamp, recs[i].timestamp(h))
		}
	}
	var raw []byte
	for i := range recs {
		raw = appendRecord(raw, &recs[i], recs[i].timestamp(h)-nh.BaseTimestamp)
	}
	xerial := bytes.HasPrefix(orig[BatchHeaderSize:], xerialMagic)
	out, err := c.compress(h.Compression(), xerial, raw)
	if err != nil {
		return nil, fmt.Errorf("storage: recompress batch %d with %s: %w", h.BaseOffset, h.Compression(), err)
	}
	return encodeBatch(nh, out), nil
}

// recordCompressor compresses records sections the way clients do (the
// options franz-go uses towards Kafka). It keeps one zstd encoder; close
// releases it. Not safe for concurrent use.
type recordCompressor struct {
	zstd *zstd.Encoder
}

func (c *recordCompressor) compress(codec Compression, xerial bool, raw []byte) ([]byte, error) {
	var buf bytes.Buffer
	switch codec {
	case CompressionNone:
		return raw, nil
	case CompressionGzip:
		w := gzip.NewWriter(&buf)
		if _, err := w.Write(raw); err != nil {
			return nil, err
		}
		if err := w.Close(); err != nil {
			return nil, err
		}
	case CompressionSnappy:
		if !xerial {
			return s2.EncodeSnappy(nil, raw), nil
		}
		return appendXerial(raw), nil
	case CompressionLZ4:
		w := lz4.NewWriter(&buf)
		if _, err := w.Write(raw); err != nil {
			return nil, err
		}
		if err := w.Close(); err != nil {
			return nil, err
		}
	case CompressionZstd:
		if c.zstd == nil {
			enc, err := zstd.NewWriter(nil, zstd.WithWindowSize(64<<10), zstd.WithEncoderConcurrency(1), zstd.WithZeroFrames(true))
			if err != nil {
				return nil, err
			}
			c.zstd = enc
		}
		return c.zstd.EncodeAll(raw, nil), nil
	default:
		return nil, fmt.Errorf("unknown compression codec %d", codec)
	}
	return buf.Bytes(), nil
}

func (c *recordCompressor) close() {
	if c.zstd != nil {
		c.zstd.Close()
		c.zstd = nil
	}
}

// xerialBlockSize is the block size of the Java client's snappy stream.
const xerialBlockSize = 32 << 10

// appendXerial frames raw as the Java client does: magic, version and
// compatible version (1, 1), then blocks of a big-endian length and a raw
// snappy block.
func appendXerial(raw []byte) []byte {
	out := append(append([]byte(nil), xerialMagic...), 0, 0, 0, 1, 0, 0, 0, 1)
	for len(raw) > 0 {
		n := min(xerialBlockSize, len(raw))
		block := s2.EncodeSnappy(nil, raw[:n])
		out = binary.BigEndian.AppendUint32(out, uint32(len(block)))
		out = append(out, block...)
		raw = raw[n:]
	}
	return out
}

// CheckKeyedRecords decodes the records of the v2 batches in batch
// (normally one produce batch, possibly compressed) and returns an error
// wrapping ErrInvalidRecord if a record has a null key: Kafka refuses
// keyless records on compacted topics with INVALID_RECORD. Records that do
// not decode return an error wrapping ErrCorruptBatch. The produce path
// calls it for logs with cleanup.policy containing compact.
func CheckKeyedRecords(batch []byte) error {
	it := Batches(batch)
	for it.Next() {
		_, recs, err := decodeBatchRecords(it.Batch())
		if err != nil {
			return err
		}
		for i := range recs {
			if recs[i].nullKey {
				return fmt.Errorf("%w: compacted topic cannot accept a record without key (batch offset delta %d)",
					ErrInvalidRecord, recs[i].offDelta)
			}
		}
	}
	if err := it.Err(); err != nil && !errors.Is(err, ErrCorruptBatch) {
		return fmt.Errorf("%w: %w", ErrCorruptBatch, err)
	} else if err != nil {
		return err
	}
	return nil
}

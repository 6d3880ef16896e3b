package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// maxDecompressedRecords bounds what one batch may inflate to when records
// are decoded (ListOffsets by timestamp), so a compression bomb cannot
// exhaust memory.
const maxDecompressedRecords = 256 << 20

// recordInfo is what the record iterator decodes of each record: enough for
// ListOffsets, nothing more.
type recordInfo struct {
	Offset    int64
	Timestamp int64
}

// recordIter decodes the offset and timestamp of each record of one batch.
// Keys, values and headers are skipped using the record length.
type recordIter struct {
	hdr  BatchHeader
	data []byte // decompressed records section
	left int32  // records still to decode
	err  error
}

// newRecordIter decompresses batch's records section if needed. It is only
// used off the append path.
func newRecordIter(batch []byte) (*recordIter, error) {
	h, err := ParseBatchHeader(batch)
	if err != nil {
		return nil, err
	}
	data, err := decompressRecords(h.Compression(), batch[BatchHeaderSize:])
	if err != nil {
		return nil, fmt.Errorf("%w: batch %d: %w", ErrCorruptBatch, h.BaseOffset, err)
	}
	return &recordIter{hdr: h, data: data, left: h.RecordCount}, nil
}

// next decodes the next record. For LogAppendTime batches every record's
// timestamp is the batch's maxTimestamp, as Kafka's DefaultRecord reports it.
func (it *recordIter) next() (recordInfo, bool) {
	if it.err != nil || it.left <= 0 || len(it.data) == 0 {
		return recordInfo{}, false
	}
	length, n := binary.Varint(it.data)
	if n <= 0 || length < 0 || int64(len(it.data)-n) < length {
		it.err = fmt.Errorf("%w: bad record length", ErrCorruptBatch)
		return recordInfo{}, false
	}
	rec := it.data[n : n+int(length)]
	it.data = it.data[n+int(length):]
	it.left--
	if len(rec) < 1 {
		it.err = fmt.Errorf("%w: empty record", ErrCorruptBatch)
		return recordInfo{}, false
	}
	rec = rec[1:] // attributes (unused)
	tsDelta, n := binary.Varint(rec)
	if n <= 0 {
		it.err = fmt.Errorf("%w: bad timestampDelta", ErrCorruptBatch)
		return recordInfo{}, false
	}
	offDelta, m := binary.Varint(rec[n:])
	if m <= 0 {
		it.err = fmt.Errorf("%w: bad offsetDelta", ErrCorruptBatch)
		return recordInfo{}, false
	}
	ts := it.hdr.BaseTimestamp + tsDelta
	if it.hdr.TimestampType() == LogAppendTime {
		ts = it.hdr.MaxTimestamp
	}
	return recordInfo{Offset: it.hdr.BaseOffset + offDelta, Timestamp: ts}, true
}

// xerialMagic starts snappy data framed by the Java client (xerial
// SnappyOutputStream): magic, then version and compatible-version int32s,
// then blocks each preceded by a big-endian int32 length.
var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

func decompressRecords(c Compression, src []byte) ([]byte, error) {
	switch c {
	case CompressionNone:
		return src, nil
	case CompressionGzip:
		r, err := gzip.NewReader(bytes.NewReader(src))
		if err != nil {
			return nil, err
		}
		return readLimited(r)
	case CompressionSnappy:
		return decodeSnappy(src)
	case CompressionLZ4:
		return readLimited(lz4.NewReader(bytes.NewReader(src)))
	case CompressionZstd:
		d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(maxDecompressedRecords))
		if err != nil {
			return nil, err
		}
		defer d.Close()
		return d.DecodeAll(src, nil)
	}
	return nil, fmt.Errorf("unknown compression codec %d", c)
}

func readLimited(r io.Reader) ([]byte, error) {
	out, err := io.ReadAll(io.LimitReader(r, maxDecompressedRecords+1))
	if err != nil {
		return nil, err
	}
	if len(out) > maxDecompressedRecords {
		return nil, errors.New("decompressed records exceed limit")
	}
	return out, nil
}

// decodeSnappy accepts both raw snappy blocks (librdkafka, franz-go) and the
// xerial framing of the Java client.
func decodeSnappy(src []byte) ([]byte, error) {
	if !bytes.HasPrefix(src, xerialMagic) || len(src) < 16 {
		return decodeSnappyBlock(nil, src)
	}
	var out []byte
	for rest := src[16:]; len(rest) > 0; {
		if len(rest) < 4 {
			return nil, errors.New("truncated xerial snappy chunk header")
		}
		n := binary.BigEndian.Uint32(rest)
		rest = rest[4:]
		if uint64(n) > uint64(len(rest)) {
			return nil, errors.New("truncated xerial snappy chunk")
		}
		var err error
		if out, err = decodeSnappyBlock(out, rest[:n]); err != nil {
			return nil, err
		}
		rest = rest[n:]
	}
	return out, nil
}

// decodeSnappyBlock appends the decoding of one snappy block to dst.
func decodeSnappyBlock(dst, block []byte) ([]byte, error) {
	n, err := s2.DecodedLen(block)
	if err != nil {
		return nil, err
	}
	if n > maxDecompressedRecords-len(dst) {
		return nil, errors.New("decompressed records exceed limit")
	}
	buf, err := s2.Decode(nil, block)
	if err != nil {
		return nil, err
	}
	return append(dst, buf...), nil
}

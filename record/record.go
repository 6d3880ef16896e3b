package record

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Record is one v2 record. Decoded, its slices alias the (decompressed)
// records section they came from.
type Record struct {
	Attributes     int8 // unused by Kafka; kept as found
	TimestampDelta int64
	OffsetDelta    int32
	Key            []byte // nil: a null key
	Value          []byte // nil: a null value (a tombstone)
	Headers        []RecordHeader
}

// RecordHeader is one record header: a key (never null) and a value (nil:
// null).
type RecordHeader struct {
	Key   []byte
	Value []byte
}

// recordReader decodes the varint fields of one record body; the first
// error sticks.
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
		r.err = fmt.Errorf("%w: bad varint", ErrCorruptBatch)
		return 0
	}
	r.b = r.b[n:]
	return v
}

// bytesField reads a varint length and that many bytes; -1 is null (nil) if
// nullable. A present field is never nil, even when empty.
func (r *recordReader) bytesField(nullable bool) []byte {
	n := r.varint()
	switch {
	case r.err != nil:
		return nil
	case n == -1 && nullable:
		return nil
	case n < 0 || n > int64(len(r.b)):
		r.err = fmt.Errorf("%w: field length %d with %d bytes left", ErrCorruptBatch, n, len(r.b))
		return nil
	}
	v := r.b[:n:n]
	r.b = r.b[n:]
	return v
}

// DecodeRecord decodes the record at the start of data, strictly as Kafka's
// DefaultRecord.readFrom: every field in bounds and the record exactly its
// declared length. It returns the bytes after the record. Errors wrap
// ErrCorruptBatch.
func DecodeRecord(data []byte) (Record, []byte, error) {
	length, n := binary.Varint(data)
	if n <= 0 || length < 1 || length > int64(len(data)-n) {
		return Record{}, nil, fmt.Errorf("%w: bad record length %d", ErrCorruptBatch, length)
	}
	body, rest := data[n:n+int(length)], data[n+int(length):]
	r := Record{Attributes: int8(body[0])}
	rd := recordReader{b: body[1:]}
	r.TimestampDelta = rd.varint()
	off := rd.varint()
	if rd.err == nil && (off < math.MinInt32 || off > math.MaxInt32) {
		rd.err = fmt.Errorf("%w: offset delta %d", ErrCorruptBatch, off)
	}
	r.OffsetDelta = int32(off)
	r.Key = rd.bytesField(true)
	r.Value = rd.bytesField(true)
	r.Headers = rd.headers()
	if rd.err == nil && len(rd.b) != 0 {
		rd.err = fmt.Errorf("%w: %d bytes after the headers", ErrCorruptBatch, len(rd.b))
	}
	return r, rest, rd.err
}

// headers reads the header count and the headers (nil if there are none).
func (r *recordReader) headers() []RecordHeader {
	count := r.varint()
	if r.err == nil && (count < 0 || count > int64(len(r.b))) {
		r.err = fmt.Errorf("%w: header count %d", ErrCorruptBatch, count)
	}
	if r.err != nil || count == 0 {
		return nil
	}
	hs := make([]RecordHeader, 0, count)
	for i := int64(0); i < count && r.err == nil; i++ {
		k := r.bytesField(false)
		hs = append(hs, RecordHeader{Key: k, Value: r.bytesField(true)})
	}
	return hs
}

// AppendRecord appends the encoding of r (length prefix included) to dst.
func AppendRecord(dst []byte, r *Record) []byte {
	dst = binary.AppendVarint(dst, int64(r.bodySize()))
	dst = append(dst, byte(r.Attributes))
	dst = binary.AppendVarint(dst, r.TimestampDelta)
	dst = binary.AppendVarint(dst, int64(r.OffsetDelta))
	dst = appendBytesField(dst, r.Key)
	dst = appendBytesField(dst, r.Value)
	dst = binary.AppendVarint(dst, int64(len(r.Headers)))
	for _, h := range r.Headers {
		dst = append(binary.AppendVarint(dst, int64(len(h.Key))), h.Key...) // never null
		dst = appendBytesField(dst, h.Value)
	}
	return dst
}

// bodySize is the encoded size of r after its length prefix.
func (r *Record) bodySize() int {
	n := 1 + varintSize(r.TimestampDelta) + varintSize(int64(r.OffsetDelta)) +
		bytesFieldSize(r.Key) + bytesFieldSize(r.Value) + varintSize(int64(len(r.Headers)))
	for _, h := range r.Headers {
		n += varintSize(int64(len(h.Key))) + len(h.Key) + bytesFieldSize(h.Value)
	}
	return n
}

// appendBytesField writes a varint length and the bytes; nil is null (-1).
func appendBytesField(dst, b []byte) []byte {
	if b == nil {
		return binary.AppendVarint(dst, -1)
	}
	return append(binary.AppendVarint(dst, int64(len(b))), b...)
}

func bytesFieldSize(b []byte) int {
	if b == nil {
		return varintSize(-1)
	}
	return varintSize(int64(len(b))) + len(b)
}

// varintSize is the length of v as a zigzag varint.
func varintSize(v int64) int {
	u := uint64(v<<1) ^ uint64(v>>63)
	n := 1
	for u >= 0x80 {
		u >>= 7
		n++
	}
	return n
}

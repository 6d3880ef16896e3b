package broker

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"iter"

	"github.com/kbroker/kbroker/broker/group"
	"github.com/kbroker/kbroker/storage"
)

// This file encodes and decodes the record batches the broker writes for
// itself (the group coordinator's records in __consumer_offsets):
// uncompressed v2 batches without producer ids.

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// encodeRecords builds one v2 batch of key/value records (a nil value is a
// tombstone) stamped with timestamp ts (ms).
func encodeRecords(records []group.Record, ts int64) []byte {
	b := make([]byte, storage.BatchHeaderSize, storage.BatchHeaderSize+64*len(records))
	for i, r := range records {
		var body []byte
		body = append(body, 0)                     // attributes
		body = binary.AppendVarint(body, 0)        // timestamp delta
		body = binary.AppendVarint(body, int64(i)) // offset delta
		body = appendVarintBytes(body, r.Key, r.Key == nil)
		body = appendVarintBytes(body, r.Value, r.Value == nil)
		body = binary.AppendVarint(body, 0) // headers
		b = binary.AppendVarint(b, int64(len(body)))
		b = append(b, body...)
	}
	binary.BigEndian.PutUint64(b[0:], 0)
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	binary.BigEndian.PutUint32(b[12:], 0xFFFFFFFF) // partition leader epoch: set by the log
	b[16] = 2
	binary.BigEndian.PutUint16(b[21:], 0)
	binary.BigEndian.PutUint32(b[23:], uint32(len(records)-1))
	binary.BigEndian.PutUint64(b[27:], uint64(ts))
	binary.BigEndian.PutUint64(b[35:], uint64(ts))
	binary.BigEndian.PutUint64(b[43:], ^uint64(0)) // producer id -1
	binary.BigEndian.PutUint16(b[51:], 0xFFFF)     // producer epoch -1
	binary.BigEndian.PutUint32(b[53:], 0xFFFFFFFF) // base sequence -1
	binary.BigEndian.PutUint32(b[57:], uint32(len(records)))
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], castagnoli))
	return b
}

func appendVarintBytes(dst, b []byte, null bool) []byte {
	if null {
		return binary.AppendVarint(dst, -1)
	}
	dst = binary.AppendVarint(dst, int64(len(b)))
	return append(dst, b...)
}

var errCompressedInternal = errors.New("compressed batch in an internal topic")

// logRecords iterates the key/value records of a log from its start to its
// end, as the group coordinator replays them.
func logRecords(log *storage.Log) iter.Seq2[group.Record, error] {
	return func(yield func(group.Record, error) bool) {
		offset := log.LogStartOffset()
		end := log.LogEndOffset()
		for offset < end {
			rr, err := log.Read(offset, 1<<20, end, true)
			if err != nil {
				yield(group.Record{}, fmt.Errorf("reading %s at %d: %w", log.Dir(), offset, err))
				return
			}
			if len(rr.Data) == 0 {
				rr.Release()
				return
			}
			ok := eachRecord(rr.Data, offset, yield)
			offset = rr.NextOffset
			rr.Release()
			if !ok {
				return
			}
		}
	}
}

// eachRecord yields the records of batches at or after from; false when the
// consumer stopped or a batch could not be decoded.
func eachRecord(data []byte, from int64, yield func(group.Record, error) bool) bool {
	it := storage.Batches(data)
	for it.Next() {
		h := it.Header()
		if h.IsControl() || h.LastOffset() < from {
			continue
		}
		if h.Compression() != storage.CompressionNone {
			return yield(group.Record{}, fmt.Errorf("batch at %d: %w", h.BaseOffset, errCompressedInternal))
		}
		recs := it.Batch()[storage.BatchHeaderSize:]
		for i := int32(0); i < h.RecordCount; i++ {
			r, rest, err := decodeRecord(recs)
			if err != nil {
				return yield(group.Record{}, fmt.Errorf("batch at %d: %w", h.BaseOffset, err))
			}
			recs = rest
			if !yield(r, nil) {
				return false
			}
		}
	}
	return true
}

var errBadRecord = errors.New("malformed record")

// decodeRecord decodes one record's key and value (copied: the source is
// mapped log memory).
func decodeRecord(b []byte) (group.Record, []byte, error) {
	length, n := binary.Varint(b)
	if n <= 0 || length < 0 || int64(len(b)-n) < length {
		return group.Record{}, nil, errBadRecord
	}
	rec, rest := b[n:n+int(length)], b[n+int(length):]
	if len(rec) < 1 {
		return group.Record{}, nil, errBadRecord
	}
	rec = rec[1:] // attributes
	for range 2 { // timestamp delta, offset delta
		_, n := binary.Varint(rec)
		if n <= 0 {
			return group.Record{}, nil, errBadRecord
		}
		rec = rec[n:]
	}
	key, rec, err := varintBytes(rec)
	if err != nil {
		return group.Record{}, nil, err
	}
	value, _, err := varintBytes(rec)
	if err != nil {
		return group.Record{}, nil, err
	}
	return group.Record{Key: key, Value: value}, rest, nil
}

func varintBytes(b []byte) ([]byte, []byte, error) {
	l, n := binary.Varint(b)
	if n <= 0 || l < -1 || int64(len(b)-n) < l {
		return nil, nil, errBadRecord
	}
	if l == -1 {
		return nil, b[n:], nil
	}
	out := make([]byte, l)
	copy(out, b[n:n+int(l)])
	return out, b[n+int(l):], nil
}

package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"
)

func TestRecordIterAllCodecs(t *testing.T) {
	for _, c := range allCodecs {
		t.Run(c.name, func(t *testing.T) {
			s := spec(5, 0)
			s.timestamps = []int64{100, 90, 130, 120, 130}
			s.keys[1], s.keys[2] = nil, []byte{}
			s.baseOffset, s.compression, s.xerial, s.valueSize, s.header = 40, c.c, c.xerial, 300, true
			it, err := Records(s.build(t))
			if err != nil {
				t.Fatal(err)
			}
			for i, ts := range s.timestamps {
				if !it.Next() {
					t.Fatalf("record %d: %v", i, it.Err())
				}
				r := it.Record()
				if it.Offset() != 40+int64(i) || it.Timestamp() != ts || !bytes.Equal(r.Value, value(i, 300)) ||
					(r.Key == nil) != (s.keys[i] == nil) || !bytes.Equal(r.Key, s.keys[i]) ||
					len(r.Headers) != 1 || string(r.Headers[0].Key) != "h" || !bytes.Equal(r.Headers[0].Value, s.keys[i]) {
					t.Fatalf("record %d: offset %d ts %d %+v", i, it.Offset(), it.Timestamp(), r)
				}
			}
			if it.Next() || it.Err() != nil {
				t.Fatalf("after the last record: %v", it.Err())
			}
		})
	}
}

func TestRecordIterLogAppendTime(t *testing.T) {
	b := produce(t, spec(3, 100).build(t))
	b.SetLogAppendTime(999)
	it, err := b.Records()
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if !it.Next() || it.Timestamp() != 999 || it.Record().TimestampDelta != int64(i) {
			t.Fatalf("record %d: %+v %v", i, it.Record(), it.Err())
		}
	}
}

func TestRecordIterCorrupt(t *testing.T) {
	s := spec(2, 0)
	s.compression = CompressionGzip
	b := s.build(t)
	b[len(b)-3] ^= 0xff
	if it, err := Records(b); err == nil {
		for it.Next() {
		}
	}
	// Truncated uncompressed records stop with an error, without panicking.
	b = spec(2, 0).build(t)
	it, err := Records(b[:len(b)-4])
	if err != nil {
		t.Fatal(err)
	}
	if !it.Next() || it.Next() || !errors.Is(it.Err(), ErrCorruptBatch) {
		t.Fatalf("cut record: %v", it.Err())
	}
}

// The iterator is as strict as Kafka's: the declared count, offset deltas
// inside the batch, nothing after the records.
func TestRecordIterStrict(t *testing.T) {
	s := spec(2, 0)
	raw := s.records()
	h, _ := ParseBatchHeader(s.build(t))
	for _, c := range []struct {
		name    string
		h       BatchHeader
		records []byte
	}{
		{"trailing bytes", h, append(bytes.Clone(raw), 0)},
		{"too few records", withCount(h, 3, 2), raw},
		{"count above the offset range", withCount(h, 3, 1), raw},
		{"offset delta outside", withCount(h, 2, 0), raw},
		{"negative count", withCount(h, -1, 1), raw},
	} {
		b := NewBatch(c.h, c.records)
		it, err := b.Records()
		if err == nil {
			for it.Next() {
			}
			err = it.Err()
		}
		if !errors.Is(err, ErrCorruptBatch) {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	if it, err := Records(spec(1, 0).build(t)[:40]); !errors.Is(err, ErrTruncatedBatch) {
		t.Fatalf("short header: %v %v", it, err)
	}
}

func withCount(h BatchHeader, count, lastDelta int32) BatchHeader {
	h.RecordCount, h.LastOffsetDelta = count, lastDelta
	return h
}

func TestAppendRecordRoundTrip(t *testing.T) {
	for i, r := range []Record{
		{},
		{Attributes: 3, TimestampDelta: -5, OffsetDelta: 7, Key: []byte{}, Value: []byte("v")},
		{TimestampDelta: 1 << 40, OffsetDelta: 1<<31 - 1, Key: []byte("k"),
			Headers: []RecordHeader{{Key: []byte("a"), Value: nil}, {Key: []byte{}, Value: []byte{}}, {Key: []byte("c"), Value: []byte("d")}}},
	} {
		enc := AppendRecord([]byte("prefix"), &r)
		got, rest, err := DecodeRecord(append(enc[len("prefix"):], 9, 9))
		if err != nil || !bytes.Equal(rest, []byte{9, 9}) {
			t.Fatalf("record %d: %v, rest %v", i, err, rest)
		}
		if fmt.Sprintf("%#v", got) != fmt.Sprintf("%#v", normalise(r)) {
			t.Fatalf("record %d:\n got %#v\nwant %#v", i, got, normalise(r))
		}
		if re := AppendRecord(nil, &got); !bytes.Equal(re, enc[len("prefix"):]) {
			t.Fatalf("record %d: re-encoding differs", i)
		}
	}
}

// normalise is r as decoding returns it: nil header key becomes empty
// (header keys are never null), no headers is nil.
func normalise(r Record) Record {
	if len(r.Headers) == 0 {
		r.Headers = nil
	}
	for i := range r.Headers {
		if r.Headers[i].Key == nil {
			r.Headers[i].Key = []byte{}
		}
	}
	return r
}

func TestDecodeRecordRefuses(t *testing.T) {
	good := AppendRecord(nil, &Record{Key: []byte("k"), Value: []byte("v"), Headers: []RecordHeader{{Key: []byte("h")}}})
	for _, c := range []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"zero length", []byte{0}},
		{"length past the end", good[:len(good)-1]},
		{"null header key", fixLength(append(bytes.Clone(good[1:len(good)-4]), 2, 1, 1))},
		{"header count too large", fixLength(binary.AppendVarint(bytes.Clone(good[1:len(good)-4]), 100))},
		{"bytes after the headers", fixLength(append(bytes.Clone(good[1:]), 0))},
		{"bad varint", fixLength([]byte{0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})},
		{"offset delta beyond int32", fixLength(binary.AppendVarint([]byte{0, 0}, 1<<40))},
	} {
		if _, _, err := DecodeRecord(c.b); !errors.Is(err, ErrCorruptBatch) {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}

// fixLength prefixes a record body with its length.
func fixLength(body []byte) []byte {
	return append(binary.AppendVarint(nil, int64(len(body))), body...)
}

func TestCompressorRoundTrip(t *testing.T) {
	var c Compressor
	defer c.Close()
	raw := spec(200, 0).records()
	for _, codec := range allCodecs {
		out, err := c.Compress(codec.c, raw, codec.xerial)
		if err != nil {
			t.Fatalf("%s: %v", codec.name, err)
		}
		if IsXerial(out) != codec.xerial {
			t.Fatalf("%s: xerial framing %v", codec.name, IsXerial(out))
		}
		back, err := Decompress(codec.c, out)
		if err != nil || !bytes.Equal(back, raw) {
			t.Fatalf("%s: round trip: %v", codec.name, err)
		}
	}
	if _, err := c.Compress(Compression(7), raw, false); err == nil {
		t.Fatal("unknown codec compressed")
	}
	if _, err := Decompress(Compression(7), raw); err == nil {
		t.Fatal("unknown codec decompressed")
	}
}

// A snappy block that claims to inflate beyond the limit is refused before
// anything is allocated for it.
func TestDecompressBound(t *testing.T) {
	bomb := binary.AppendUvarint(nil, maxDecompressed+1)
	if _, err := Decompress(CompressionSnappy, bomb); !errors.Is(err, errDecompressedTooLarge) {
		t.Fatalf("snappy bomb: %v", err)
	}
}

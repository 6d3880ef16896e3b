package record

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

// isSentinel reports whether err wraps one of the package's sentinels.
func isSentinel(err error) bool {
	for _, s := range []error{ErrTruncatedBatch, ErrZeroedBatch, ErrCorruptBatch, ErrUnsupportedMagic, ErrInvalidRecord} {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

// drain walks a record iterator (bounded) and checks how it stopped.
func drain(t *testing.T, it RecordIter) {
	for n := 0; n < 1<<16 && it.Next(); n++ {
		it.Offset()
		it.Timestamp()
	}
	if err := it.Err(); err != nil && !isSentinel(err) {
		t.Fatalf("unclassified record error: %v", err)
	}
}

// FuzzBatches feeds arbitrary bytes to the header parser, the validators,
// the framing and both batch iterators, and to the record iterator of every
// batch they accept: none may panic or read out of bounds, an iterator may
// not claim a clean end before the end of the buffer, WholeBatches returns
// a prefix, and every error wraps a sentinel. Seeds live in
// testdata/fuzz/FuzzBatches (valid, torn, zeroed, corrupt and compressed
// batches).
func FuzzBatches(f *testing.F) {
	f.Add(spec(3, 100).build(f))
	f.Fuzz(func(t *testing.T, data []byte) {
		ParseBatchHeader(data)
		if _, err := Validate(data); err != nil && !isSentinel(err) {
			t.Fatalf("Validate: unclassified %v", err)
		}
		fh, fsize, err := Frame(data)
		if err != nil && !isSentinel(err) {
			t.Fatalf("Frame: unclassified %v", err)
		}
		if oh, osize, ok := FrameOK(data); ok != (err == nil) || (ok && (oh != fh || osize != fsize)) {
			t.Fatalf("FrameOK %v %d %v, Frame %d %v", oh, osize, ok, fsize, err)
		}
		if w := WholeBatches(data); len(w) > len(data) {
			t.Fatalf("WholeBatches grew the buffer")
		}
		fuzzProduce(t, bytes.Clone(data))
		for _, it := range []BatchIter{Batches(data), VerifiedBatches(data)} {
			end := 0
			for it.Next() {
				b := it.Batch()
				if it.Pos() != end || len(b) < BatchHeaderSize || it.Pos()+len(b) > len(data) {
					t.Fatalf("batch at %d of %d bytes in a %d byte buffer", it.Pos(), len(b), len(data))
				}
				end = it.Pos() + len(b)
				if rit, err := Records(b); err == nil {
					drain(t, rit)
				}
			}
			if it.Err() == nil && it.Pos() != len(data) {
				t.Fatalf("clean end at %d of %d", it.Pos(), len(data))
			}
			if err := it.Err(); err != nil && !isSentinel(err) {
				t.Fatalf("unclassified stop: %v", err)
			}
		}
	})
}

// fuzzProduce checks that a batch ParseProduce accepts stays valid, and its
// header view true to its bytes, through every setter.
func fuzzProduce(t *testing.T, data []byte) {
	b, err := ParseProduce(data)
	if err != nil {
		if !isSentinel(err) {
			t.Fatalf("ParseProduce: unclassified %v", err)
		}
		return
	}
	if rit, err := b.Records(); err == nil {
		drain(t, rit)
	}
	b.SetBaseOffset(1 << 33)
	b.SetPartitionLeaderEpoch(7)
	b.SetLogAppendTime(99)
	b.SetProducer(5, 1, 2)
	if h, err := Validate(b.Bytes()); err != nil || h != b.Header() {
		t.Fatalf("after the setters: %v, header %+v vs %+v", err, h, b.Header())
	}
}

// FuzzRecords decodes arbitrary bytes as one record and as the records
// section of a batch of count records with codec (attribute bits 0-2): no
// panic, errors wrap ErrCorruptBatch, and a record that decodes encodes back
// to bytes that decode to the same record.
func FuzzRecords(f *testing.F) {
	f.Add(spec(3, 100).records(), uint8(3), uint8(0))
	f.Fuzz(func(t *testing.T, data []byte, count, codec uint8) {
		r, rest, err := DecodeRecord(data)
		switch {
		case err != nil && !errors.Is(err, ErrCorruptBatch):
			t.Fatalf("DecodeRecord: unclassified %v", err)
		case err == nil:
			if len(rest) >= len(data) {
				t.Fatalf("decoded a record of no bytes")
			}
			enc := AppendRecord(nil, &r)
			again, rest2, err := DecodeRecord(enc)
			if err != nil || len(rest2) != 0 || !reflect.DeepEqual(again, r) {
				t.Fatalf("round trip: %v\n got %#v\nwant %#v", err, again, r)
			}
		}
		h := BatchHeader{Attributes: int16(codec & AttrCompressionMask), LastOffsetDelta: int32(count), RecordCount: int32(count)}
		it, err := NewBatch(h, data).Records()
		if err != nil && !errors.Is(err, ErrCorruptBatch) {
			t.Fatalf("Records: unclassified %v", err)
		}
		if err == nil {
			drain(t, it)
		}
	})
}

// FuzzControl parses arbitrary control record keys and values: no panic,
// errors wrap ErrInvalidRecord, and a marker that parses survives a trip
// through NewEndTxnMarkerBatch.
func FuzzControl(f *testing.F) {
	f.Add(AppendControlKey(nil, ControlCommit), EndTxnMarker{CoordinatorEpoch: 3}.AppendValue(nil))
	f.Fuzz(func(t *testing.T, key, value []byte) {
		typ, err := ParseControlKey(key)
		if err != nil && !errors.Is(err, ErrInvalidRecord) {
			t.Fatalf("ParseControlKey: unclassified %v", err)
		}
		m, err := ParseEndTxnMarker(Record{Key: key, Value: value})
		if err != nil {
			if !errors.Is(err, ErrInvalidRecord) {
				t.Fatalf("ParseEndTxnMarker: unclassified %v", err)
			}
			return
		}
		if m.Type != typ {
			t.Fatalf("marker type %v, key type %v", m.Type, typ)
		}
		it, err := NewEndTxnMarkerBatch(1, 0, 5, m).Records()
		if err != nil || !it.Next() {
			t.Fatalf("marker batch: %v %v", err, it.Err())
		}
		if back, err := ParseEndTxnMarker(it.Record()); err != nil || back != m {
			t.Fatalf("round trip %+v -> %+v: %v", m, back, err)
		}
	})
}

package record

import (
	"errors"
	"testing"
)

func TestEndTxnMarkerRoundTrip(t *testing.T) {
	for _, m := range []EndTxnMarker{{Type: ControlCommit, CoordinatorEpoch: 7}, {Type: ControlAbort, CoordinatorEpoch: -1}} {
		b := NewEndTxnMarkerBatch(42, 3, 1000, m)
		h, err := Validate(b.Bytes())
		if err != nil || h != b.Header() {
			t.Fatalf("%v: %+v %v", m, h, err)
		}
		if !h.IsControl() || !h.IsTransactional() || h.ProducerID != 42 || h.ProducerEpoch != 3 || h.BaseSequence != -1 ||
			h.RecordCount != 1 || h.LastOffsetDelta != 0 || h.MaxTimestamp != 1000 || h.Compression() != CompressionNone {
			t.Fatalf("%v: header %+v", m, h)
		}
		it, err := b.Records()
		if err != nil || !it.Next() {
			t.Fatalf("%v: %v %v", m, err, it.Err())
		}
		got, err := ParseEndTxnMarker(it.Record())
		if err != nil || got != m || it.Timestamp() != 1000 {
			t.Fatalf("marker %+v, want %+v: %v", got, m, err)
		}
		if it.Next() || it.Err() != nil {
			t.Fatalf("more than one control record: %v", it.Err())
		}
	}
	if ControlCommit.String() != "COMMIT" || ControlAbort.String() != "ABORT" || ControlType(5).String() != "control(5)" {
		t.Fatal("names")
	}
}

// The parsers follow Kafka's ControlRecordType.parse and
// EndTransactionMarker.deserializeValue.
func TestControlRecordParsing(t *testing.T) {
	commit := AppendControlKey(nil, ControlCommit)
	if string(commit) != "\x00\x00\x00\x01" {
		t.Fatalf("key %x", commit)
	}
	for _, c := range []struct {
		name string
		key  []byte
		want ControlType
		err  error
	}{
		{"commit", commit, ControlCommit, nil},
		{"abort", []byte{0, 0, 0, 0}, ControlAbort, nil},
		{"newer version", []byte{0, 1, 0, 1, 9}, ControlCommit, nil},
		{"kraft type", []byte{0, 0, 0, 2}, ControlUnknown, nil},
		{"short", []byte{0, 0, 0}, ControlUnknown, ErrInvalidRecord},
		{"negative version", []byte{0xff, 0xff, 0, 1}, ControlUnknown, ErrInvalidRecord},
	} {
		got, err := ParseControlKey(c.key)
		if got != c.want || !errors.Is(err, c.err) {
			t.Errorf("%s: %v %v", c.name, got, err)
		}
	}
	value := EndTxnMarker{CoordinatorEpoch: 5}.AppendValue(nil)
	if string(value) != "\x00\x00\x00\x00\x00\x05" {
		t.Fatalf("value %x", value)
	}
	for _, c := range []struct {
		name       string
		key, value []byte
		want       EndTxnMarker
		err        error
	}{
		{"commit", commit, value, EndTxnMarker{ControlCommit, 5}, nil},
		{"newer value version", commit, []byte{0, 1, 0, 0, 0, 6, 1}, EndTxnMarker{ControlCommit, 6}, nil},
		{"not a marker", []byte{0, 0, 0, 3}, value, EndTxnMarker{}, ErrInvalidRecord},
		{"bad key", []byte{0}, value, EndTxnMarker{}, ErrInvalidRecord},
		{"short value", commit, value[:5], EndTxnMarker{}, ErrInvalidRecord},
		{"negative value version", commit, []byte{0x80, 0, 0, 0, 0, 1}, EndTxnMarker{}, ErrInvalidRecord},
	} {
		got, err := ParseEndTxnMarker(Record{Key: c.key, Value: c.value})
		if got != c.want || !errors.Is(err, c.err) {
			t.Errorf("%s: %+v %v", c.name, got, err)
		}
	}
}

package sharestate

import (
	"bytes"
	"encoding/binary"
	"reflect"
	"testing"
)

// FuzzDecodeRecord feeds arbitrary keys and values to the record decoder:
// it must not panic, and whatever decodes must encode back to the same
// bytes (the formats have one encoding). The seed corpus
// (testdata/fuzz/FuzzDecodeRecord) holds a record of each kind.
func FuzzDecodeRecord(f *testing.F) {
	for _, r := range sampleRecords() {
		f.Add(r.Key, r.Value, r.Value == nil)
	}
	f.Fuzz(func(t *testing.T, key, value []byte, tombstone bool) {
		if tombstone {
			value = nil
		} else if value == nil {
			value = []byte{}
		}
		sr, err := decodeRecord(Record{Key: key, Value: value})
		if err != nil {
			return
		}
		again := sr.encode()
		sr2, err := decodeRecord(again)
		if err != nil {
			t.Fatalf("re-encoded record does not decode: %v", err)
		}
		if !reflect.DeepEqual(sr, sr2) {
			t.Fatalf("record changed: %+v -> %+v", sr, sr2)
		}
		if !bytes.Equal(again.Key, key) {
			t.Fatalf("key not canonical: %x -> %x", key, again.Key)
		}
	})
}

// FuzzCombineBatches checks the batch merge against the offset-by-offset
// oracle on batches built from the fuzzer's bytes (13 bytes a batch).
func FuzzCombineBatches(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 9, 0, 1, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 4, 2, 1, 0}, int8(-1))
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 5, 9, 4, 3, 1, 2, 0, 0, 0, 0, 0, 0, 0, 0, 20, 0, 2, 1, 0}, int8(3))
	f.Fuzz(func(t *testing.T, data []byte, start int8) {
		var bs []StateBatch
		for len(data) >= 13 && len(bs) < 16 {
			first := int64(binary.BigEndian.Uint64(data[:8]) % 200)
			span := int64(data[8] % 20)
			bs = append(bs, sb(first, first+span, []int8{0, 2, 4}[data[9]%3], int16(data[10]%4)))
			data = data[13:]
		}
		half := len(bs) / 2
		s := int64(start)
		if s < -1 {
			s = -1
		}
		got := combineBatches(bs[:half], bs[half:], s)
		if want := combineOracle(bs[:half], bs[half:], s); !reflect.DeepEqual(got, want) {
			t.Fatalf("combine(%v, %v, %d) = %v, want %v", bs[:half], bs[half:], s, got, want)
		}
	})
}

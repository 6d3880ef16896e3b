package share

import (
	"bytes"
	"testing"
)

// FuzzDecodeRecord feeds arbitrary keys and values to the share group
// record decoders: they must not panic, and whatever decodes must encode
// back to bytes that decode the same way. The seed corpus
// (testdata/fuzz/FuzzDecodeRecord) holds a record of every type.
func FuzzDecodeRecord(f *testing.F) {
	for _, r := range sampleRecords() {
		f.Add(r.Key, r.Value)
	}
	f.Fuzz(func(t *testing.T, key, value []byte) {
		k, err := decodeKey(key)
		if err != nil {
			return
		}
		if !bytes.Equal(k.encode(), key) {
			t.Fatalf("key not canonical: %x -> %x", key, k.encode())
		}
		v, err := decodeValue(k.typ, value)
		if err != nil {
			return
		}
		re := reencode(k, v)
		v2, err := decodeValue(k.typ, re.Value)
		if err != nil {
			t.Fatalf("re-encoded value does not decode: %v", err)
		}
		if again := reencode(k, v2); !bytes.Equal(again.Value, re.Value) {
			t.Fatalf("value not stable:\n%x\n%x", re.Value, again.Value)
		}
	})
}

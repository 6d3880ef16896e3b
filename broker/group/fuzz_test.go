package group

import (
	"bytes"
	"testing"
)

// FuzzDecodeRecord feeds arbitrary keys and values to the record decoders:
// they must not panic, and whatever decodes must encode back to bytes that
// decode the same way. The seed corpus (testdata/fuzz/FuzzDecodeRecord)
// holds one record of every type kbroker writes plus truncations.
func FuzzDecodeRecord(f *testing.F) {
	for _, r := range sampleRecords() {
		f.Add(r.Key, r.Value)
	}
	f.Fuzz(func(t *testing.T, key, value []byte) {
		k, v, err := decodeRecord(key, value)
		if err != nil || v == nil {
			return
		}
		if _, ok := v.(skipValue); ok {
			return
		}
		re := reencode(k, v)
		k2, v2, err := decodeRecord(re.Key, re.Value)
		if err != nil {
			t.Fatalf("re-encoded record does not decode: %v", err)
		}
		if k.typ == typeOffsetCommitLegacy {
			k.typ = typeOffsetCommit // written back in the current key version
		}
		if k2 != k {
			t.Fatalf("key changed: %+v -> %+v", k, k2)
		}
		again := reencode(k2, v2)
		if !bytes.Equal(again.Value, re.Value) {
			t.Fatalf("value not stable:\n%x\n%x", re.Value, again.Value)
		}
	})
}

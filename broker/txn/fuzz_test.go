package txn

import (
	"testing"
)

// FuzzDecodeRecord feeds arbitrary keys and values to the record decoder:
// it must not panic, and whatever decodes must encode back to a record that
// decodes to the same id and state. The seed corpus
// (testdata/fuzz/FuzzDecodeRecord) holds every kind of record the
// coordinator writes, plus truncations and other record types.
func FuzzDecodeRecord(f *testing.F) {
	for _, r := range sampleRecords() {
		f.Add(r.Key, r.Value)
	}
	f.Fuzz(func(t *testing.T, key, value []byte) {
		id, st, err := decodeRecord(Record{Key: key, Value: value})
		if err != nil || st == nil {
			return
		}
		for _, v := range []int16{valueVersionLegacy, valueVersionCurrent} {
			id2, st2, err := decodeRecord(stateRecord(id, st, v))
			if err != nil {
				t.Fatalf("re-encoded v%d record does not decode: %v", v, err)
			}
			if id2 != id {
				t.Fatalf("id changed: %q -> %q", id, id2)
			}
			if v == valueVersionLegacy {
				continue // no tagged fields: previous producer id and version are lost
			}
			if !sameState(st, st2) {
				t.Fatalf("state changed:\n%v\n%v", st, st2)
			}
		}
	})
}

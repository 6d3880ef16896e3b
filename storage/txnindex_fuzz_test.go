package storage

import (
	"bytes"
	"testing"
)

// FuzzDecodeAbortedTxns: a .txnindex of any bytes (a torn or corrupt
// file) decodes without panicking into a prefix of valid entries, in
// marker order, that encode back to the file's first bytes.
func FuzzDecodeAbortedTxns(f *testing.F) {
	two := appendAbortedTxn(appendAbortedTxn(nil, AbortedTxn{ProducerID: 1, FirstOffset: 0, LastOffset: 3, LastStableOffset: 2}),
		AbortedTxn{ProducerID: 7, FirstOffset: 5, LastOffset: 9, LastStableOffset: 10})
	f.Add(two)
	f.Add(two[:40])
	f.Add([]byte{})
	f.Add(append([]byte{0, 1}, two[2:]...)) // version 1
	f.Fuzz(func(t *testing.T, b []byte) {
		entries, err := decodeAbortedTxns(b)
		var re []byte
		for i, e := range entries {
			if i > 0 && e.LastOffset <= entries[i-1].LastOffset {
				t.Fatalf("entries out of marker order: %+v", entries)
			}
			re = appendAbortedTxn(re, e)
		}
		if !bytes.HasPrefix(b, re) {
			t.Fatalf("entries do not encode back to the input's prefix")
		}
		if err == nil && len(re) != len(b) {
			t.Fatalf("no error, but %d of %d bytes decoded", len(re), len(b))
		}
	})
}

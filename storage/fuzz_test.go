package storage

import (
	"errors"
	"testing"
)

// FuzzBatches feeds arbitrary bytes to the header parser, both batch
// iterators and the record iterator: none may panic, read out of bounds,
// or claim a clean end before the end of the buffer. Seeds live in
// testdata/fuzz/FuzzBatches (valid, torn, zeroed, corrupt and compressed
// batches).
func FuzzBatches(f *testing.F) {
	f.Add(spec(3, 100).build(f))
	f.Fuzz(func(t *testing.T, data []byte) {
		ParseBatchHeader(data)
		ValidateBatch(data)
		ValidateProduceBatch(data)
		for _, it := range []BatchIter{Batches(data), VerifiedBatches(data)} {
			end := 0
			for it.Next() {
				b := it.Batch()
				if it.Pos() != end || len(b) < BatchHeaderSize || it.Pos()+len(b) > len(data) {
					t.Fatalf("batch at %d of %d bytes in a %d byte buffer", it.Pos(), len(b), len(data))
				}
				end = it.Pos() + len(b)
				if rit, err := newRecordIter(b); err == nil {
					for n := 0; n < 1<<16; n++ {
						if _, ok := rit.next(); !ok {
							break
						}
					}
				}
			}
			if it.Err() == nil && it.Pos() != len(data) {
				t.Fatalf("clean end at %d of %d", it.Pos(), len(data))
			}
			if err := it.Err(); err != nil && !errors.Is(err, ErrTruncatedBatch) && !errors.Is(err, ErrZeroedBatch) &&
				!errors.Is(err, ErrCorruptBatch) && !errors.Is(err, ErrUnsupportedMagic) {
				t.Fatalf("unclassified stop: %v", err)
			}
		}
	})
}

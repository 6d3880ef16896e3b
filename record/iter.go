package record

import "fmt"

// RecordIter decodes the records of one batch, strictly as Kafka's
// DefaultRecordBatch iterator does: recordCount records, each exactly its
// declared length with every field in bounds, offset deltas inside the
// batch, and nothing after the last one. Use it as
//
//	it, err := batch.Records() // or record.Records(raw)
//	for it.Next() { r := it.Record(); off, ts := it.Offset(), it.Timestamp() ... }
//	if err := it.Err(); err != nil { ... }
//
// A Record's slices alias the records section: copy what must outlive the
// batch's buffer.
type RecordIter struct {
	hdr  BatchHeader
	data []byte // decompressed records section, what is left of it
	left int32  // records still to decode
	rec  Record
	err  error
}

// Records returns an iterator over the records of batch, one whole batch
// (as Frame, Validate or a BatchIter delimit it), decompressing them first.
// Errors wrap ErrCorruptBatch (or ErrTruncatedBatch for a short header).
func Records(batch []byte) (RecordIter, error) {
	h, err := ParseBatchHeader(batch)
	if err != nil {
		return RecordIter{}, err
	}
	return newRecordIter(h, batch)
}

// Records returns an iterator over the batch's records (see the function
// Records), using the header parsed with the batch.
func (b Batch) Records() (RecordIter, error) { return newRecordIter(b.header, b.bytes) }

func newRecordIter(h BatchHeader, batch []byte) (RecordIter, error) {
	if h.RecordCount < 0 || int64(h.RecordCount) > int64(h.LastOffsetDelta)+1 {
		return RecordIter{}, fmt.Errorf("%w: batch %d: recordCount %d with lastOffsetDelta %d",
			ErrCorruptBatch, h.BaseOffset, h.RecordCount, h.LastOffsetDelta)
	}
	data, err := Decompress(h.Compression(), batch[BatchHeaderSize:])
	if err != nil {
		return RecordIter{}, fmt.Errorf("%w: batch %d: %s records: %w", ErrCorruptBatch, h.BaseOffset, h.Compression(), err)
	}
	return RecordIter{hdr: h, data: data, left: h.RecordCount}, nil
}

// Next decodes the next record. It returns false after the last one or at
// the first error (Err then says why).
func (it *RecordIter) Next() bool {
	if it.err != nil {
		return false
	}
	if it.left == 0 {
		if len(it.data) != 0 {
			it.err = fmt.Errorf("%w: batch %d: %d bytes after its %d records", ErrCorruptBatch, it.hdr.BaseOffset, len(it.data), it.hdr.RecordCount)
		}
		return false
	}
	r, rest, err := DecodeRecord(it.data)
	if err == nil && (r.OffsetDelta < 0 || r.OffsetDelta > it.hdr.LastOffsetDelta) {
		err = fmt.Errorf("%w: offset delta %d outside the batch", ErrCorruptBatch, r.OffsetDelta)
	}
	if err != nil {
		it.err = fmt.Errorf("batch %d record %d: %w", it.hdr.BaseOffset, it.hdr.RecordCount-it.left, err)
		return false
	}
	it.rec, it.data = r, rest
	it.left--
	return true
}

// Record is the current record.
func (it *RecordIter) Record() Record { return it.rec }

// Offset is the current record's offset.
func (it *RecordIter) Offset() int64 { return it.hdr.BaseOffset + int64(it.rec.OffsetDelta) }

// Timestamp is the current record's timestamp as consumers see it: the
// batch's maxTimestamp for LogAppendTime batches (Kafka's DefaultRecord),
// else baseTimestamp + timestampDelta.
func (it *RecordIter) Timestamp() int64 {
	if it.hdr.TimestampType() == LogAppendTime {
		return it.hdr.MaxTimestamp
	}
	return it.hdr.BaseTimestamp + it.rec.TimestampDelta
}

// Err is nil after the last record, else why the walk stopped.
func (it *RecordIter) Err() error { return it.err }

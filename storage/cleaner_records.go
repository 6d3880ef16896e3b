package storage

import (
	"fmt"

	"github.com/kbroker/kbroker/record"
)

// batchRecords decodes every record of batch (see record.RecordIter for
// the checks). Errors wrap record.ErrCorruptBatch.
func batchRecords(batch []byte) ([]record.Record, error) {
	it, err := record.Records(batch)
	if err != nil {
		return nil, err
	}
	var recs []record.Record
	for it.Next() {
		recs = append(recs, it.Record())
	}
	return recs, it.Err()
}

// storedTimestamp is a record's timestamp as stored: baseTimestamp +
// delta. For a LogAppendTime batch readers use maxTimestamp instead; the
// stored value is kept.
func storedTimestamp(h record.BatchHeader, r *record.Record) int64 {
	return h.BaseTimestamp + r.TimestampDelta
}

// rebuildBatch re-encodes the retained records of orig with orig's
// attributes, baseOffset, lastOffsetDelta, producer id, epoch and base
// sequence and partition leader epoch (Kafka's buildRetainedRecordsInto),
// compressed with orig's codec (and snappy framing). horizon >= 0 marks the
// batch with that delete horizon. Each record keeps its offset, key, value,
// headers and timestamp: baseTimestamp becomes the horizon or the first
// record's timestamp and the deltas are recomputed. maxTimestamp is the
// largest retained timestamp (CreateTime) or orig's (LogAppendTime).
func rebuildBatch(comp *record.Compressor, orig []byte, h record.BatchHeader, recs []record.Record, horizon int64) ([]byte, error) {
	nh := h
	nh.RecordCount = int32(len(recs))
	nh.BaseTimestamp = storedTimestamp(h, &recs[0])
	if horizon >= 0 {
		nh.BaseTimestamp = horizon
		nh.Attributes |= record.AttrDeleteHorizon
	}
	if h.TimestampType() == record.CreateTime {
		nh.MaxTimestamp = storedTimestamp(h, &recs[0])
		for i := range recs {
			nh.MaxTimestamp = max(nh.MaxTimestamp, storedTimestamp(h, &recs[i]))
		}
	}
	var raw []byte
	for i := range recs {
		r := recs[i]
		r.TimestampDelta = storedTimestamp(h, &recs[i]) - nh.BaseTimestamp
		raw = record.AppendRecord(raw, &r)
	}
	out, err := comp.Compress(h.Compression(), raw, record.IsXerial(orig[record.BatchHeaderSize:]))
	if err != nil {
		return nil, fmt.Errorf("storage: recompress batch %d with %s: %w", h.BaseOffset, h.Compression(), err)
	}
	b := record.NewBatch(nh, out)
	return b.Bytes(), nil
}

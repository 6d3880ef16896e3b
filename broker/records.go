package broker

import (
	"bytes"
	"errors"
	"fmt"
	"iter"

	"github.com/kbroker/kbroker/broker/group"
	"github.com/kbroker/kbroker/broker/sharestate"
	"github.com/kbroker/kbroker/record"
	"github.com/kbroker/kbroker/storage"
)

// This file is the glue between the group coordinator's records and the
// record batches of __consumer_offsets (uncompressed v2 batches without
// producer ids, which the broker writes for itself). The format is package
// record's.

// encodeRecords builds one batch of key/value records (a nil value is a
// tombstone) stamped with timestamp ts (ms). records is not empty (the
// group coordinator writes nothing otherwise).
func encodeRecords(records []group.Record, ts int64) record.Batch {
	var raw []byte
	for i, r := range records {
		raw = record.AppendRecord(raw, &record.Record{OffsetDelta: int32(i), Key: r.Key, Value: r.Value})
	}
	return record.NewBatch(record.BatchHeader{
		PartitionLeaderEpoch: -1, // set by the log
		LastOffsetDelta:      int32(len(records) - 1),
		BaseTimestamp:        ts, MaxTimestamp: ts,
		ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1,
		RecordCount: int32(len(records)),
	}, raw)
}

var errCompressedInternal = errors.New("compressed batch in an internal topic")

// logRecords iterates the key/value records of a log from its start to its
// end, as the group coordinator replays them.
func logRecords(log *storage.Log) iter.Seq2[group.Record, error] {
	return func(yield func(group.Record, error) bool) {
		for r, err := range loggedRecords(log) {
			if !yield(r.Record, err) {
				return
			}
		}
	}
}

// loggedRecords is logRecords with each record's offset (the share
// coordinator prunes by offset).
func loggedRecords(log *storage.Log) iter.Seq2[sharestate.LoggedRecord, error] {
	return func(yield func(sharestate.LoggedRecord, error) bool) {
		offset := log.LogStartOffset()
		end := log.LogEndOffset()
		for offset < end {
			rr, err := log.Read(offset, 1<<20, end, true)
			if err != nil {
				yield(sharestate.LoggedRecord{}, fmt.Errorf("reading %s at %d: %w", log.Dir(), offset, err))
				return
			}
			if len(rr.Data) == 0 {
				rr.Release()
				return
			}
			ok := eachRecord(rr.Data, offset, yield)
			offset = rr.NextOffset
			rr.Release()
			if !ok {
				return
			}
		}
	}
}

// eachRecord yields the records of batches at or after from, keys and
// values copied (the source is mapped log memory); false when the consumer
// stopped or a batch could not be decoded.
func eachRecord(data []byte, from int64, yield func(sharestate.LoggedRecord, error) bool) bool {
	it := record.Batches(data)
	for it.Next() {
		h := it.Header()
		if h.IsControl() || h.LastOffset() < from {
			continue
		}
		if h.Compression() != record.CompressionNone {
			return yield(sharestate.LoggedRecord{}, fmt.Errorf("batch at %d: %w", h.BaseOffset, errCompressedInternal))
		}
		recs, err := record.Records(it.Batch())
		for err == nil && recs.Next() {
			r := recs.Record()
			lr := sharestate.LoggedRecord{Offset: h.BaseOffset + int64(r.OffsetDelta), Record: group.Record{Key: bytes.Clone(r.Key), Value: bytes.Clone(r.Value)}}
			if !yield(lr, nil) {
				return false
			}
		}
		if err == nil {
			err = recs.Err()
		}
		if err != nil {
			return yield(sharestate.LoggedRecord{}, fmt.Errorf("batch at %d: %w", h.BaseOffset, err))
		}
	}
	return true
}

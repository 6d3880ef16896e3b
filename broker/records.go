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
// tombstone) stamped with timestamp ts (ms); with a producer, a
// transactional batch of it without a sequence (a TxnOffsetCommit, as
// Kafka's coordinator writes it). records is not empty (the coordinators
// write nothing otherwise).
func encodeRecords(records []group.Record, ts int64, producer *group.TxnProducer) record.Batch {
	var raw []byte
	for i, r := range records {
		raw = record.AppendRecord(raw, &record.Record{OffsetDelta: int32(i), Key: r.Key, Value: r.Value})
	}
	h := record.BatchHeader{
		PartitionLeaderEpoch: -1, // set by the log
		LastOffsetDelta:      int32(len(records) - 1),
		BaseTimestamp:        ts, MaxTimestamp: ts,
		ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1,
		RecordCount: int32(len(records)),
	}
	if producer != nil {
		h.ProducerID, h.ProducerEpoch = producer.ID, producer.Epoch
		h.Attributes |= record.AttrTransactional
	}
	return record.NewBatch(h, raw)
}

var errCompressedInternal = errors.New("compressed batch in an internal topic")

// logRecords iterates the records of a log from its start to its end, as
// the group coordinator replays them: key/value records with their offsets
// and transactional producers, and transaction markers (a record without
// key, group.Record.Marker set).
func logRecords(log *storage.Log) iter.Seq2[group.Record, error] {
	return func(yield func(group.Record, error) bool) {
		offset := log.LogStartOffset()
		end := log.LogEndOffset()
		for offset < end {
			rr, err := log.Read(offset, 1<<20, end, true)
			if err != nil {
				yield(group.Record{}, fmt.Errorf("reading %s at %d: %w", log.Dir(), offset, err))
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

// withoutMarkers is a replay without its transaction markers, for the
// coordinators that know nothing of transactions (share groups, share
// state).
func withoutMarkers(records iter.Seq2[group.Record, error]) iter.Seq2[group.Record, error] {
	return func(yield func(group.Record, error) bool) {
		for r, err := range records {
			if err == nil && r.Marker != group.NoMarker {
				continue
			}
			if !yield(r, err) {
				return
			}
		}
	}
}

// loggedRecords is logRecords without transaction markers, with each
// record's offset, as the share coordinator replays them (it prunes by
// offset).
func loggedRecords(log *storage.Log) iter.Seq2[sharestate.LoggedRecord, error] {
	return func(yield func(sharestate.LoggedRecord, error) bool) {
		for r, err := range withoutMarkers(logRecords(log)) {
			if !yield(sharestate.LoggedRecord{Offset: r.Offset, Record: r}, err) {
				return
			}
		}
	}
}

// eachRecord yields the records of batches at or after from, keys and
// values copied (the source is mapped log memory), with their offsets and
// transactional producers; a transaction marker is yielded as a record
// without key (group.Record.Marker). False when the consumer stopped or a
// batch could not be decoded.
func eachRecord(data []byte, from int64, yield func(group.Record, error) bool) bool {
	it := record.Batches(data)
	for it.Next() {
		h := it.Header()
		if h.LastOffset() < from {
			continue
		}
		if h.IsControl() {
			if m, ok := txnMarker(it.Batch()); ok && !yield(group.Record{Offset: h.BaseOffset, ProducerID: h.ProducerID, Marker: m}, nil) {
				return false
			}
			continue
		}
		if h.Compression() != record.CompressionNone {
			return yield(group.Record{}, fmt.Errorf("batch at %d: %w", h.BaseOffset, errCompressedInternal))
		}
		recs, err := record.Records(it.Batch())
		for err == nil && recs.Next() {
			r := recs.Record()
			gr := group.Record{Key: bytes.Clone(r.Key), Value: bytes.Clone(r.Value), Offset: recs.Offset(), ProducerID: -1}
			if h.IsTransactional() {
				gr.Transactional, gr.ProducerID = true, h.ProducerID
			}
			if !yield(gr, nil) {
				return false
			}
		}
		if err == nil {
			err = recs.Err()
		}
		if err != nil {
			return yield(group.Record{}, fmt.Errorf("batch at %d: %w", h.BaseOffset, err))
		}
	}
	return true
}

// txnMarker reads the transaction marker of a control batch (ok false for
// an empty one or another control type).
func txnMarker(batch []byte) (group.Marker, bool) {
	recs, err := record.Records(batch)
	if err != nil || !recs.Next() {
		return group.NoMarker, false
	}
	m, err := record.ParseEndTxnMarker(recs.Record())
	switch {
	case err != nil:
		return group.NoMarker, false
	case m.Type == record.ControlCommit:
		return group.CommitMarker, true
	}
	return group.AbortMarker, true
}

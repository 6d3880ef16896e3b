package storage

import (
	"errors"
	"fmt"
	"os"
	"sort"

	"github.com/kbroker/kbroker/record"
	"github.com/kbroker/kbroker/storage/vfs"
)

// Transactions under compaction, Kafka's CleanedTransactionMetadata and the
// cleaner's batch retention:
//
//   - Nothing at or beyond the last stable offset is cleaned (planCleaning).
//   - The aborted transactions overlapping the cleaned range come from the
//     transaction indexes. A data batch of an aborted transaction is
//     discarded (its keys never enter the offset map), except the last
//     batch of a producer still active, kept as an empty header for its
//     sequence and epoch.
//   - An ABORT marker stays while the cleaning still removed data of its
//     transaction (and its index entry is copied to the cleaned segment);
//     a COMMIT marker while the cleaning saw data of its transaction.
//     Otherwise the marker may go: the first cleaning gives its batch a
//     delete horizon (now + delete.retention.ms, KIP-534), the first
//     cleaning after the horizon removes it (a consumer that read the
//     transaction's data meanwhile has had delete.retention.ms to read its
//     marker). The last marker of an active producer stays as an empty
//     header instead, for its epoch.

// txnCleaning follows the transactions through one pass over batches in
// offset order.
type txnCleaning struct {
	// pending are the aborted transactions not reached yet, by first offset.
	pending []AbortedTxn
	// aborted are the aborted transactions of the producers the pass is
	// inside, with whether one of their data batches was seen.
	aborted map[int64]*abortedInPass
	// committed are the producers whose data the pass saw in a
	// transaction that is not aborted.
	committed map[int64]bool
	// kept are the aborted transactions whose marker stays: the cleaned
	// segment's transaction index.
	kept []AbortedTxn
}

type abortedInPass struct {
	txn      AbortedTxn
	observed bool
}

func newTxnCleaning(aborted []AbortedTxn) *txnCleaning {
	pending := append([]AbortedTxn(nil), aborted...)
	sort.SliceStable(pending, func(i, j int) bool { return pending[i].FirstOffset < pending[j].FirstOffset })
	return &txnCleaning{pending: pending, aborted: map[int64]*abortedInPass{}, committed: map[int64]bool{}}
}

// reach enters the aborted transactions that start at or before offset.
func (c *txnCleaning) reach(offset int64) {
	for len(c.pending) > 0 && c.pending[0].FirstOffset <= offset {
		t := c.pending[0]
		c.pending = c.pending[1:]
		if _, ok := c.aborted[t.ProducerID]; !ok {
			c.aborted[t.ProducerID] = &abortedInPass{txn: t}
		}
	}
}

// dataBatch reports whether a data batch belongs to an aborted
// transaction (Kafka's onBatchRead).
func (c *txnCleaning) dataBatch(h record.BatchHeader) (aborted bool) {
	c.reach(h.LastOffset())
	if !h.IsTransactional() {
		return false
	}
	if a, ok := c.aborted[h.ProducerID]; ok {
		a.observed = true
		return true
	}
	c.committed[h.ProducerID] = true
	return false
}

// controlBatch reports whether a control batch may go (Kafka's
// onControlBatchRead); marker is its transaction marker, nil when it has
// none (an emptied batch: it may go).
func (c *txnCleaning) controlBatch(h record.BatchHeader, marker *record.EndTxnMarker) (discardable bool) {
	c.reach(h.LastOffset())
	if marker == nil {
		return h.RecordCount == 0
	}
	switch marker.Type {
	case record.ControlAbort:
		a, ok := c.aborted[h.ProducerID]
		delete(c.aborted, h.ProducerID)
		if ok && a.observed {
			c.kept = append(c.kept, a.txn)
			return false
		}
		return true
	case record.ControlCommit:
		saw := c.committed[h.ProducerID]
		delete(c.committed, h.ProducerID)
		return !saw
	}
	return false
}

// lastProducerBatch is what the cleaner keeps of an active producer: the
// last offset of its last data batch (-1 when its last batch is a marker)
// and its epoch (Kafka's lastRecordsOfActiveProducers).
type lastProducerBatch struct {
	lastDataOffset int64
	epoch          int16
}

// keepsProducerState reports whether batch h is the one an active
// producer's state needs.
func (p *cleanPlan) keepsProducerState(h record.BatchHeader) bool {
	last, ok := p.producers[h.ProducerID]
	switch {
	case h.ProducerID < 0 || !ok:
		return false
	case last.lastDataOffset >= 0:
		return h.LastOffset() == last.lastDataOffset
	}
	return h.IsControl() && h.ProducerEpoch == last.epoch
}

// filterControl is the cleaner's retention of a control batch: whole, with
// a new delete horizon, as an empty header, or dropped (nil).
func (c *cleaner) filterControl(h record.BatchHeader, batch []byte) ([]byte, error) {
	marker, err := parseMarker(h, batch)
	if err != nil {
		return nil, err
	}
	if !c.txns.controlBatch(h, marker) {
		return batch, nil
	}
	horizon, hasHorizon := h.DeleteHorizon()
	switch {
	case hasHorizon && c.now >= horizon && c.p.keepsProducerState(h):
		c.stats.EmptyBatches++
		return record.EmptyBatch(h).Bytes(), nil
	case hasHorizon && c.now >= horizon:
		c.stats.MarkersRemoved++
		return nil, nil
	case hasHorizon || h.RecordCount == 0:
		return batch, nil
	}
	recs, err := batchRecords(batch)
	if err != nil {
		return nil, err
	}
	return rebuildBatch(&c.comp, batch, h, recs, c.now+min(c.p.cfg.DeleteRetentionMs, maxInt64-c.now))
}

const maxInt64 = 1<<63 - 1

// writeCleanedTxnIndex writes the cleaned segment's transaction index
// (nothing when it has no entry).
func writeCleanedTxnIndex(fsys vfs.FS, path string, aborted []AbortedTxn) error {
	if len(aborted) == 0 {
		return nil
	}
	var b []byte
	for _, t := range aborted {
		b = appendAbortedTxn(b, t)
	}
	return writeFileSynced(fsys, path, b)
}

// swappedIndexes lists the index files a compaction swap renames: both
// indexes, and the transaction index when the cleaned segment has one; the
// replaced segment's own transaction index is removed otherwise (as
// recovery does when it completes a swap).
func swappedIndexes(fsys vfs.FS, name func(suffix string) string) ([]string, error) {
	suffixes := []string{indexSuffix, timeIndexSuffix}
	if vfs.Exists(fsys, name(txnIndexSuffix)+cleanedSuffix) {
		return append(suffixes, txnIndexSuffix), nil
	}
	if err := fsys.Remove(name(txnIndexSuffix)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("storage: remove replaced transaction index: %w", err)
	}
	return suffixes, nil
}

// abortedInRange is the aborted transactions the cleaning of [from, upTo)
// must know of.
func (l *Log) abortedInRange(from, upTo int64) *txnCleaning {
	return newTxnCleaning(l.AbortedTransactions(from, upTo))
}

package storage

import (
	"fmt"
	"math"

	"github.com/kbroker/kbroker/record"
)

// Transactions in a partition's producer state, as Kafka's
// ProducerStateManager and ProducerAppendInfo keep them:
//
//   - A transactional data batch of a producer with no open transaction
//     opens one at its base offset (ProducerEntry.CurrentTxnFirstOffset).
//     On the leader it must carry the guard of a verification with the
//     transaction coordinator (KIP-890 part 1, BeginTxnVerification), or
//     it is refused with ErrInvalidTxnState; so is a non-transactional
//     batch of a producer whose transaction is open.
//   - A COMMIT or ABORT marker (a control batch) closes it: the
//     transaction is completed (first offset, the marker's offset) and
//     stays "unreplicated" until the high watermark passes the marker. A
//     marker whose coordinator epoch is older than the producer's last
//     one is refused (ErrTransactionCoordinatorFenced), as is one with an
//     older producer epoch (ErrInvalidProducerEpoch); followers take
//     markers as they come. A marker for a producer with nothing open
//     completes nothing.
//   - An aborted transaction goes to the .txnindex of the segment that
//     holds its marker (txnindex.go) with the last stable offset at that
//     moment: the first offset of another producer's open transaction, or
//     the offset after the marker.
//   - The first unstable offset is the smallest first offset of the open
//     and the unreplicated transactions; the last stable offset (LSO) is
//     min(first unstable offset, HW). A new transaction starts at the log
//     end, at or beyond the HW, and a transaction leaves the unreplicated
//     set only when the HW passes its marker, so the LSO never moves back
//     (short of a truncation). Followers run the same rules on what they
//     replicate, so a new leader has the same LSO and aborted index.

// VerificationGuard ties a transactional append to the verification that
// allowed it (Kafka's VerificationGuard): BeginTxnVerification hands one
// out, the broker asks the coordinator, and the append must carry the same
// guard. A marker for the producer spends it, so an append whose
// transaction was aborted meanwhile is refused rather than opening a
// transaction nobody will close. The zero guard verifies nothing.
type VerificationGuard uint64

// AbortedTxn is an aborted transaction of the partition: one entry of a
// segment's .txnindex and of a read_committed fetch's aborted list.
type AbortedTxn struct {
	ProducerID  int64
	FirstOffset int64
	LastOffset  int64 // the offset of the ABORT marker
	// LastStableOffset is the LSO when the marker was appended; a search
	// for aborted transactions overlapping [from, upTo) may stop at an
	// entry with LastStableOffset >= upTo (Kafka's collectAbortedTxns).
	LastStableOffset int64
}

// completedTxn is a transaction a marker ended (Kafka's CompletedTxn).
type completedTxn struct {
	producerID  int64
	firstOffset int64
	lastOffset  int64 // the marker's offset
	aborted     bool
	// lastStableOffset is the LSO its index entry records, set when it is
	// completed.
	lastStableOffset int64
}

// txnState is the part of producerStateManager that derives from the
// entries' open transactions. Guarded by producerStateManager.mu.
type txnState struct {
	// ongoing maps each producer with an open transaction to its first
	// offset (mirrors ProducerEntry.CurrentTxnFirstOffset >= 0).
	ongoing map[int64]int64
	// unreplicated are completed transactions whose marker the HW has not
	// passed yet; they still hold the LSO back.
	unreplicated []completedTxn
	// verifying holds the verification of each producer that asked to
	// open a transaction and has not yet.
	verifying map[int64]verification
	nextGuard VerificationGuard
}

type verification struct {
	guard VerificationGuard
	epoch int16
	// epochBump: transaction version 2, where the coordinator bumps the
	// epoch with every transaction's markers.
	epochBump bool
	// since is the producer's last timestamp then (ms), for expiry.
	since int64
}

// markerSeen spends the verification of producer id that a marker of
// epoch ends (Kafka's UnifiedLog.updateProducers): every one, except a
// transaction version 2 verification of that very epoch, which belongs to
// the producer's next transaction (its previous transaction's markers
// carry the bumped epoch and may land while the next is verified; an
// abort by the coordinator bumps the epoch once more). Must be called
// with producerStateManager.mu held.
func (t *txnState) markerSeen(id int64, epoch int16) {
	if v, ok := t.verifying[id]; ok && !(v.epochBump && v.epoch == epoch) {
		delete(t.verifying, id)
	}
}

func newTxnState() txnState {
	return txnState{ongoing: map[int64]int64{}, verifying: map[int64]verification{}}
}

// putLocked installs e as the entry of producer id and mirrors its open
// transaction. Must be called with mu held.
func (m *producerStateManager) putLocked(id int64, e *ProducerEntry) {
	m.producers[id] = e
	if e.CurrentTxnFirstOffset >= 0 {
		m.txns.ongoing[id] = e.CurrentTxnFirstOffset
	} else {
		delete(m.txns.ongoing, id)
	}
}

// deleteLocked forgets producer id. Must be called with mu held.
func (m *producerStateManager) deleteLocked(id int64) {
	delete(m.producers, id)
	delete(m.txns.ongoing, id)
	delete(m.txns.verifying, id)
}

// markerAt is the transaction marker of batch i of the append, nil for a
// data batch or a control record that is not a marker.
func (p *parsedAppend) markerAt(i int) *record.EndTxnMarker {
	if i < len(p.markers) {
		return p.markers[i]
	}
	return nil
}

// parseMarker reads the transaction marker of a control batch. A control
// batch without records (emptied by the cleaner) or with another control
// type has none.
func parseMarker(h record.BatchHeader, batch []byte) (*record.EndTxnMarker, error) {
	if !h.IsControl() || h.RecordCount == 0 {
		return nil, nil
	}
	it, err := record.Records(batch)
	if err != nil {
		return nil, err
	}
	if !it.Next() {
		return nil, it.Err()
	}
	t, err := record.ParseControlKey(it.Record().Key)
	if err != nil || t == record.ControlUnknown {
		return nil, err
	}
	m, err := record.ParseEndTxnMarker(it.Record())
	if err != nil {
		return nil, err
	}
	return &m, nil
}

// checkMarker applies a leader's marker to updated, Kafka's
// appendEndTxnMarker with the checks of origin COORDINATOR (transaction
// version 0/1: WriteTxnMarkers v0-v1 carries no version).
func (u *producerUpdate) checkMarker(updated *ProducerEntry, h record.BatchHeader, marker *record.EndTxnMarker) error {
	if marker == nil {
		return fmt.Errorf("%w: control batch at %d of producer %d carries no transaction marker",
			record.ErrInvalidRecord, h.BaseOffset, h.ProducerID)
	}
	if h.ProducerEpoch < updated.Epoch {
		return fmt.Errorf("%w: marker of producer %d has epoch %d, older than its epoch %d",
			ErrInvalidProducerEpoch, h.ProducerID, h.ProducerEpoch, updated.Epoch)
	}
	if updated.CoordinatorEpoch > marker.CoordinatorEpoch {
		return fmt.Errorf("%w: marker of producer %d from coordinator epoch %d, the producer's last marker came from epoch %d",
			ErrTransactionCoordinatorFenced, h.ProducerID, marker.CoordinatorEpoch, updated.CoordinatorEpoch)
	}
	if t, ok := endTxn(updated, h, marker); ok {
		u.completed = append(u.completed, t)
	}
	u.ended = append(u.ended, producerEpoch{h.ProducerID, h.ProducerEpoch})
	return nil
}

// endTxn closes updated's open transaction with marker (at h's offset)
// and returns it if there was one (Kafka emits no CompletedTxn for a
// marker without data).
func endTxn(updated *ProducerEntry, h record.BatchHeader, marker *record.EndTxnMarker) (completedTxn, bool) {
	first := updated.CurrentTxnFirstOffset
	updated.CurrentTxnFirstOffset = -1
	updated.CoordinatorEpoch = marker.CoordinatorEpoch
	if first < 0 {
		return completedTxn{}, false
	}
	return completedTxn{producerID: h.ProducerID, firstOffset: first, lastOffset: h.BaseOffset,
		aborted: marker.Type == record.ControlAbort}, true
}

// checkTxnData applies the transaction rules of a leader's data batch
// (Kafka's appendDataBatch and the KIP-890 verification check). Must be
// called with mu held.
func (m *producerStateManager) checkTxnData(u *producerUpdate, updated *ProducerEntry, h record.BatchHeader, guard VerificationGuard) error {
	open := updated.CurrentTxnFirstOffset >= 0
	switch {
	case open && !h.IsTransactional():
		return fmt.Errorf("%w: non-transactional batch at %d from producer %d, whose transaction is open",
			ErrInvalidTxnState, h.BaseOffset, h.ProducerID)
	case open || !h.IsTransactional():
		return nil
	}
	v, ok := m.txns.verifying[h.ProducerID]
	if guard == 0 || !ok || v.guard != guard || v.epoch != h.ProducerEpoch {
		return fmt.Errorf("%w: transactional batch at %d from producer %d epoch %d was not verified with the transaction coordinator (or its transaction ended meanwhile)",
			ErrInvalidTxnState, h.BaseOffset, h.ProducerID, h.ProducerEpoch)
	}
	updated.CurrentTxnFirstOffset = h.BaseOffset
	u.started = append(u.started, h.ProducerID)
	return nil
}

// replicateTxn applies the transaction effect of a replicated batch (no
// checks: the leader made them) to e.
func replicateTxn(e *ProducerEntry, h record.BatchHeader, marker *record.EndTxnMarker) (completedTxn, bool) {
	switch {
	case marker != nil:
		return endTxn(e, h, marker)
	case !h.IsControl() && h.IsTransactional() && e.CurrentTxnFirstOffset < 0:
		e.CurrentTxnFirstOffset = h.BaseOffset
	}
	return completedTxn{}, false
}

// BeginTxnVerification starts the verification of a transactional append
// of producer id at epoch (Kafka's maybeStartTransactionVerification): the
// zero guard when the producer's transaction is already open at that
// epoch (nothing to verify), else the guard the append must carry once
// the coordinator has confirmed that this partition is in the
// transaction. Concurrent appends of the same producer and epoch share a
// guard; a newer epoch replaces it. epochBump says the producer speaks
// transaction version 2 (see markerSeen).
func (l *Log) BeginTxnVerification(id int64, epoch int16, epochBump bool) VerificationGuard {
	m := l.producers
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.producers[id]
	if e != nil && e.CurrentTxnFirstOffset >= 0 && e.Epoch == epoch {
		return 0
	}
	if v, ok := m.txns.verifying[id]; ok && v.epoch == epoch {
		return v.guard
	}
	m.txns.nextGuard++
	v := verification{guard: m.txns.nextGuard, epoch: epoch, epochBump: epochBump, since: l.now().UnixMilli()}
	m.txns.verifying[id] = v
	return v.guard
}

// completeTxnLocked moves t to the unreplicated transactions and sets the
// last stable offset to index it with (Kafka's lastStableOffset(
// completedTxn)): the first offset of the earliest open transaction of
// another producer, or the offset after t's marker. Must be called with mu
// held, in the critical section that closed t's producer entry.
func (m *producerStateManager) completeTxnLocked(t *completedTxn) {
	lso := t.lastOffset + 1
	first := int64(math.MaxInt64)
	for id, off := range m.txns.ongoing {
		if id != t.producerID && off < first {
			first = off
		}
	}
	if first != math.MaxInt64 {
		lso = first
	}
	t.lastStableOffset = lso
	m.txns.unreplicated = append(m.txns.unreplicated, *t)
}

// firstUnstableOffset is the first offset of the earliest open or
// unreplicated transaction given the HW (completed transactions whose
// marker is below it are forgotten), ok=false when there is none.
func (m *producerStateManager) firstUnstableOffset(hw int64) (int64, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	keep := m.txns.unreplicated[:0]
	first := int64(math.MaxInt64)
	for _, t := range m.txns.unreplicated {
		if t.lastOffset >= hw {
			keep = append(keep, t)
			first = min(first, t.firstOffset)
		}
	}
	clear(m.txns.unreplicated[len(keep):])
	m.txns.unreplicated = keep
	for _, off := range m.txns.ongoing {
		first = min(first, off)
	}
	return first, first != math.MaxInt64
}

// openTransactions is the number of open transactions.
func (m *producerStateManager) openTransactions() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.txns.ongoing)
}

// dropBelow forgets completed transactions whose marker is below the log
// start offset. Must be called with mu held.
func (t *txnState) dropBelow(logStartOffset int64) {
	keep := t.unreplicated[:0]
	for _, c := range t.unreplicated {
		if c.lastOffset >= logStartOffset {
			keep = append(keep, c)
		}
	}
	t.unreplicated = keep
}

// expireVerifications forgets verifications started before limit (ms)
// that never led to an append. Must be called with mu held.
func (t *txnState) expireVerifications(limit int64) {
	for id, v := range t.verifying {
		if v.since < limit {
			delete(t.verifying, id)
		}
	}
}

// LastStableOffset is the partition's LSO: min(first unstable offset, HW).
// A read_committed consumer reads below it; it never moves back. The
// first unstable offset counts from the log start offset at least (Kafka's
// maybeIncrementFirstUnstableOffset): retention may delete the segment
// where an open transaction began.
func (l *Log) LastStableOffset() int64 {
	hw := l.highWatermark.Load()
	if first, ok := l.producers.firstUnstableOffset(hw); ok && first < hw {
		return max(first, l.logStartOffset.Load())
	}
	return hw
}

// FirstUnstableOffset is the first offset of the earliest open or
// unreplicated transaction (ok=false when none): the log cleaner stops
// there.
func (l *Log) FirstUnstableOffset() (int64, bool) {
	return l.producers.firstUnstableOffset(l.highWatermark.Load())
}

// OpenTransactions is the number of producers with an open transaction
// on the partition.
func (l *Log) OpenTransactions() int { return l.producers.openTransactions() }

// indexTxnsLocked writes the aborted transactions of an append's
// completed ones, in order, to seg's transaction index (seg holds their
// markers). Must be called with appendMu held.
func (l *Log) indexTxnsLocked(seg *segment, done []completedTxn) error {
	for _, t := range done {
		if !t.aborted {
			continue
		}
		if err := seg.txn.append(AbortedTxn{ProducerID: t.producerID, FirstOffset: t.firstOffset,
			LastOffset: t.lastOffset, LastStableOffset: t.lastStableOffset}); err != nil {
			return err
		}
	}
	return nil
}

// replicateBatchesLocked updates producer state and the transaction index
// of seg with batches appended without checks, headers and bytes in p.
// Must be called with appendMu held.
func (l *Log) replicateBatchesLocked(seg *segment, p *parsedAppend) error {
	for i, h := range p.headers {
		if t, ok := l.producers.update(h, p.markerAt(i)); ok {
			if err := l.indexTxnsLocked(seg, []completedTxn{t}); err != nil {
				return err
			}
		}
	}
	return nil
}

// AbortedTransactions lists the aborted transactions that overlap the
// offsets [from, upTo): those whose marker is at or after from and whose
// first offset is below upTo (Kafka's collectAbortedTransactions), from
// the transaction indexes of the segment holding from and the segments
// after it, until an entry's last stable offset reaches upTo.
func (l *Log) AbortedTransactions(from, upTo int64) []AbortedTxn {
	segs := l.segmentList()
	var out []AbortedTxn
	for i := segmentFor(segs, from); i < len(segs); i++ {
		var complete bool
		out, complete = segs[i].txn.collect(out, from, upTo)
		if complete {
			break
		}
	}
	return out
}

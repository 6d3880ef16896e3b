package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/kbroker/kbroker/storage/vfs"
	"hash/crc32"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kbroker/kbroker/record"
)

// maxCachedBatches is how many batches per producer are remembered for
// duplicate detection (Kafka's NUM_BATCHES_TO_RETAIN, matching the client's
// max.in.flight.requests.per.connection of 5).
const maxCachedBatches = 5

// BatchMetadata is what producer state remembers of a batch.
type BatchMetadata struct {
	FirstSeq    int32
	LastSeq     int32
	FirstOffset int64
	LastOffset  int64
	Timestamp   int64 // batch maxTimestamp
}

// ProducerEntry is the state of one idempotent producer in a partition.
type ProducerEntry struct {
	ProducerID int64
	Epoch      int16
	// Batches are the last up-to-5 batches, oldest first.
	Batches []BatchMetadata
	// LastTimestamp is the maxTimestamp of the producer's last batch; used
	// for producer id expiration.
	LastTimestamp int64
	// CoordinatorEpoch is the epoch of the transaction coordinator that
	// wrote the producer's last marker (-1: none): a marker from an older
	// one is refused (TRANSACTION_COORDINATOR_FENCED).
	CoordinatorEpoch int32
	// CurrentTxnFirstOffset is the first offset of the producer's open
	// transaction on this partition, -1 when none is open. It holds the
	// last stable offset back (producer_txn.go).
	CurrentTxnFirstOffset int64
}

// LastSeq is the sequence of the last batch, -1 if none.
func (e *ProducerEntry) LastSeq() int32 {
	if len(e.Batches) == 0 {
		return -1
	}
	return e.Batches[len(e.Batches)-1].LastSeq
}

// LastOffset is the last offset of the last batch, -1 if none.
func (e *ProducerEntry) LastOffset() int64 {
	if len(e.Batches) == 0 {
		return -1
	}
	return e.Batches[len(e.Batches)-1].LastOffset
}

func (e *ProducerEntry) findDuplicate(h record.BatchHeader) (BatchMetadata, bool) {
	if h.ProducerEpoch != e.Epoch {
		return BatchMetadata{}, false
	}
	for _, b := range e.Batches {
		if b.FirstSeq == h.BaseSequence && b.LastSeq == h.LastSequence() {
			return b, true
		}
	}
	return BatchMetadata{}, false
}

// addBatch records a batch, switching epoch (which forgets older batches)
// when it changed.
func (e *ProducerEntry) addBatch(h record.BatchHeader) {
	if h.ProducerEpoch != e.Epoch {
		e.Epoch = h.ProducerEpoch
		e.Batches = nil
	}
	e.LastTimestamp = h.MaxTimestamp
	if h.IsControl() {
		return // transaction markers carry no sequence
	}
	if len(e.Batches) == maxCachedBatches {
		e.Batches = append(e.Batches[:0], e.Batches[1:]...)
	}
	e.Batches = append(e.Batches, BatchMetadata{
		FirstSeq: h.BaseSequence, LastSeq: h.LastSequence(),
		FirstOffset: h.BaseOffset, LastOffset: h.LastOffset(), Timestamp: h.MaxTimestamp,
	})
}

func (e *ProducerEntry) clone() *ProducerEntry {
	c := *e
	c.Batches = append([]BatchMetadata(nil), e.Batches...)
	return &c
}

// producerStateManager is Kafka's ProducerStateManager for one partition.
// Mutations happen with Log.appendMu held; mu lets Producers() and
// expiration run from other goroutines.
type producerStateManager struct {
	fs  vfs.FS
	dir string

	mu        sync.Mutex // guards the following
	producers map[int64]*ProducerEntry
	// lastSnapshotOffset is the offset of the newest snapshot file.
	lastSnapshotOffset int64
	// txns is the transaction state derived from producers (open
	// transactions, completed ones not yet below the HW, verifications;
	// producer_txn.go).
	txns txnState
}

func newProducerStateManager(fsys vfs.FS, dir string) *producerStateManager {
	return &producerStateManager{fs: fsys, dir: dir, producers: map[int64]*ProducerEntry{}, lastSnapshotOffset: -1, txns: newTxnState()}
}

// producerUpdate is a pending change computed by check and applied by
// apply once the append is written.
type producerUpdate struct {
	entries map[int64]*ProducerEntry // copies with the new batches added
	// completed are the transactions the append's markers end, in order;
	// started names the producers whose transaction began, ended the
	// markers' producers and epochs: their verifications are spent.
	completed []completedTxn
	started   []int64
	ended     []producerEpoch
}

// producerEpoch is a producer id and epoch.
type producerEpoch struct {
	id    int64
	epoch int16
}

func newProducerEntry(id int64) *ProducerEntry {
	return &ProducerEntry{ProducerID: id, Epoch: -1, CoordinatorEpoch: -1, CurrentTxnFirstOffset: -1}
}

// checkLeaderAppend validates the producer batches of a leader append
// (Kafka's ProducerAppendInfo: checkProducerEpoch, checkSequence, the
// transaction rules of appendDataBatch and appendEndTxnMarker) and returns
// the updated entries to apply after the write. A batch that duplicates
// one of the last five of its producer returns a *DuplicateBatchError. The
// headers carry final offsets; guard is the append's transaction
// verification (producer_txn.go).
func (m *producerStateManager) checkLeaderAppend(p *parsedAppend, guard VerificationGuard, coordinator bool) (*producerUpdate, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	u := &producerUpdate{entries: map[int64]*ProducerEntry{}}
	for i, h := range p.headers {
		if h.ProducerID < 0 {
			continue
		}
		current := m.producers[h.ProducerID]
		if current != nil && !h.IsControl() {
			if dup, ok := current.findDuplicate(h); ok {
				return nil, &DuplicateBatchError{ProducerID: h.ProducerID, FirstOffset: dup.FirstOffset, LastOffset: dup.LastOffset, Timestamp: dup.Timestamp}
			}
		}
		updated := u.entries[h.ProducerID]
		if updated == nil {
			if current != nil {
				updated = current.clone()
			} else {
				updated = newProducerEntry(h.ProducerID)
			}
		}
		var err error
		switch {
		case h.IsControl():
			err = u.checkMarker(updated, h, p.markerAt(i))
		case coordinator:
			err = checkEpoch(updated, h)
		default:
			err = checkSequence(current, updated, h)
		}
		if err == nil && !h.IsControl() {
			err = m.checkTxnData(u, updated, h, guard)
		}
		if err != nil {
			return nil, err
		}
		updated.addBatch(h)
		u.entries[h.ProducerID] = updated
	}
	return u, nil
}

// checkSequence applies Kafka's epoch and sequence rules. current is the
// committed entry (nil for an unknown producer), updated includes earlier
// batches of the same append.
func checkSequence(current, updated *ProducerEntry, h record.BatchHeader) error {
	if err := checkEpoch(updated, h); err != nil {
		return err
	}
	if h.ProducerEpoch != updated.Epoch {
		if h.BaseSequence != 0 && updated.Epoch != -1 {
			return fmt.Errorf("%w: producer %d new epoch %d must start at sequence 0, got %d",
				ErrOutOfOrderSequence, h.ProducerID, h.ProducerEpoch, h.BaseSequence)
		}
		return nil
	}
	// Unknown producer (never seen, or removed by retention or
	// DeleteRecords): accept any sequence, as Kafka does.
	if current == nil || current.Epoch == -1 {
		return nil
	}
	if last := updated.LastSeq(); !inSequence(last, h.BaseSequence) {
		return fmt.Errorf("%w: producer %d epoch %d: sequence %d after %d",
			ErrOutOfOrderSequence, h.ProducerID, h.ProducerEpoch, h.BaseSequence, last)
	}
	return nil
}

// checkEpoch refuses a batch of an older producer epoch than the
// producer's (Kafka's checkProducerEpoch).
func checkEpoch(updated *ProducerEntry, h record.BatchHeader) error {
	if h.ProducerEpoch < updated.Epoch {
		return fmt.Errorf("%w: producer %d epoch %d is older than current epoch %d",
			ErrInvalidProducerEpoch, h.ProducerID, h.ProducerEpoch, updated.Epoch)
	}
	return nil
}

func inSequence(last, next int32) bool {
	return int64(next) == int64(last)+1 || (next == 0 && last == math.MaxInt32)
}

// apply installs the entries of a checked append and completes the
// transactions its markers ended (completeTxnLocked: in the same critical
// section, so that no reader of the LSO sees a transaction neither open nor
// completed), returning them for the log to index.
func (m *producerStateManager) apply(u *producerUpdate) []completedTxn {
	if u == nil || len(u.entries) == 0 {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for id, e := range u.entries {
		m.putLocked(id, e)
	}
	for _, id := range u.started {
		delete(m.txns.verifying, id)
	}
	for _, e := range u.ended {
		m.txns.markerSeen(e.id, e.epoch)
	}
	for i := range u.completed {
		m.completeTxnLocked(&u.completed[i])
	}
	return u.completed
}

// update records a batch without checks (follower appends, replay): marker
// is the transaction marker of a control batch (nil otherwise, or when the
// control record is not a marker). It returns the transaction a marker
// completed.
func (m *producerStateManager) update(h record.BatchHeader, marker *record.EndTxnMarker) (completedTxn, bool) {
	if h.ProducerID < 0 {
		return completedTxn{}, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.producers[h.ProducerID]
	if e == nil {
		e = newProducerEntry(h.ProducerID)
	}
	t, done := replicateTxn(e, h, marker)
	e.addBatch(h)
	m.putLocked(h.ProducerID, e)
	if h.IsControl() {
		m.txns.markerSeen(h.ProducerID, h.ProducerEpoch)
	}
	if done {
		m.completeTxnLocked(&t)
	}
	return t, done
}

// truncateHead forgets producers whose last batch is below logStartOffset
// and snapshots below it (Kafka ProducerStateManager.truncateHead).
func (m *producerStateManager) truncateHead(logStartOffset int64) {
	m.mu.Lock()
	for id, e := range m.producers {
		if e.LastOffset() >= 0 && e.LastOffset() < logStartOffset {
			m.deleteLocked(id)
		}
	}
	m.txns.dropBelow(logStartOffset)
	m.mu.Unlock()
	for _, off := range m.snapshotOffsets() {
		if off < logStartOffset {
			m.fs.Remove(m.snapshotPath(off))
		}
	}
}

// expire removes producers whose last timestamp is older than maxAge.
func (m *producerStateManager) expire(now time.Time, maxAge time.Duration) int {
	limit := now.Add(-maxAge).UnixMilli()
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for id, e := range m.producers {
		if e.LastTimestamp < limit && e.CurrentTxnFirstOffset < 0 {
			m.deleteLocked(id)
			n++
		}
	}
	m.txns.expireVerifications(limit)
	return n
}

// reset forgets all producers.
func (m *producerStateManager) reset() {
	m.mu.Lock()
	m.producers = map[int64]*ProducerEntry{}
	m.txns = newTxnState()
	m.mu.Unlock()
}

// entries returns copies sorted by producer id.
func (m *producerStateManager) entries() []ProducerEntry {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]ProducerEntry, 0, len(m.producers))
	for _, e := range m.producers {
		out = append(out, *e.clone())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ProducerID < out[j].ProducerID })
	return out
}

// snapshotCRCTable is the CRC-32C table of snapshot files; read-only.
var snapshotCRCTable = crc32.MakeTable(crc32.Castagnoli)

// Snapshot file format (version 1), all big-endian:
//
//	magic "KBPS" | version u16 | crc32c u32 of everything after it |
//	count u32 | count x entry
//	entry: producerId i64 | epoch i16 | lastTimestamp i64 |
//	       coordinatorEpoch i32 | currentTxnFirstOffset i64 | nbatches u8 |
//	       nbatches x (firstSeq i32 | lastSeq i32 | firstOffset i64 |
//	                   lastOffset i64 | timestamp i64)
const (
	snapshotMagic   = "KBPS"
	snapshotVersion = 1
	snapshotHeader  = 4 + 2 + 4
)

func (m *producerStateManager) snapshotPath(offset int64) string {
	return segmentFileName(m.dir, offset, snapshotSuffix)
}

// encodeSnapshot serialises the producers.
func encodeSnapshot(entries []ProducerEntry) []byte {
	b := make([]byte, snapshotHeader, snapshotHeader+4+len(entries)*(31+maxCachedBatches*32))
	copy(b, snapshotMagic)
	binary.BigEndian.PutUint16(b[4:], snapshotVersion)
	b = binary.BigEndian.AppendUint32(b, uint32(len(entries)))
	for _, e := range entries {
		b = binary.BigEndian.AppendUint64(b, uint64(e.ProducerID))
		b = binary.BigEndian.AppendUint16(b, uint16(e.Epoch))
		b = binary.BigEndian.AppendUint64(b, uint64(e.LastTimestamp))
		b = binary.BigEndian.AppendUint32(b, uint32(e.CoordinatorEpoch))
		b = binary.BigEndian.AppendUint64(b, uint64(e.CurrentTxnFirstOffset))
		b = append(b, byte(len(e.Batches)))
		for _, m := range e.Batches {
			b = binary.BigEndian.AppendUint32(b, uint32(m.FirstSeq))
			b = binary.BigEndian.AppendUint32(b, uint32(m.LastSeq))
			b = binary.BigEndian.AppendUint64(b, uint64(m.FirstOffset))
			b = binary.BigEndian.AppendUint64(b, uint64(m.LastOffset))
			b = binary.BigEndian.AppendUint64(b, uint64(m.Timestamp))
		}
	}
	binary.BigEndian.PutUint32(b[6:], crc32.Checksum(b[snapshotHeader:], snapshotCRCTable))
	return b
}

// decodeSnapshot parses a snapshot, checking magic, version and CRC.
func decodeSnapshot(b []byte) ([]ProducerEntry, error) {
	bad := func(why string) error { return fmt.Errorf("%w: producer snapshot: %s", ErrCorruptCheckpoint, why) }
	if len(b) < snapshotHeader+4 || string(b[:4]) != snapshotMagic {
		return nil, bad("bad magic")
	}
	if v := binary.BigEndian.Uint16(b[4:]); v != snapshotVersion {
		return nil, bad(fmt.Sprintf("unknown version %d", v))
	}
	if crc32.Checksum(b[snapshotHeader:], snapshotCRCTable) != binary.BigEndian.Uint32(b[6:]) {
		return nil, bad("crc mismatch")
	}
	r := snapshotReader{b: b[snapshotHeader:]}
	n := r.u32()
	var out []ProducerEntry
	for i := uint32(0); i < n && r.err == nil; i++ {
		e := ProducerEntry{
			ProducerID: int64(r.u64()), Epoch: int16(r.u16()), LastTimestamp: int64(r.u64()),
			CoordinatorEpoch: int32(r.u32()), CurrentTxnFirstOffset: int64(r.u64()),
		}
		nb := int(r.u8())
		for j := 0; j < nb && r.err == nil; j++ {
			e.Batches = append(e.Batches, BatchMetadata{
				FirstSeq: int32(r.u32()), LastSeq: int32(r.u32()),
				FirstOffset: int64(r.u64()), LastOffset: int64(r.u64()), Timestamp: int64(r.u64()),
			})
		}
		out = append(out, e)
	}
	if r.err != nil || len(r.b) != 0 {
		return nil, bad("bad length")
	}
	return out, nil
}

// snapshotReader decodes big-endian fields, remembering the first overrun.
type snapshotReader struct {
	b   []byte
	err error
}

func (r *snapshotReader) take(n int) []byte {
	if r.err != nil || len(r.b) < n {
		r.err = errors.New("short")
		return make([]byte, n)
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}
func (r *snapshotReader) u8() uint8   { return r.take(1)[0] }
func (r *snapshotReader) u16() uint16 { return binary.BigEndian.Uint16(r.take(2)) }
func (r *snapshotReader) u32() uint32 { return binary.BigEndian.Uint32(r.take(4)) }
func (r *snapshotReader) u64() uint64 { return binary.BigEndian.Uint64(r.take(8)) }

// writeSnapshot persists the state as of offset (everything below offset
// applied) to %020d.snapshot.
func (m *producerStateManager) writeSnapshot(offset int64) error {
	data := encodeSnapshot(m.entries())
	if err := writeFileAtomic(m.fs, m.snapshotPath(offset), data); err != nil {
		return err
	}
	m.mu.Lock()
	m.lastSnapshotOffset = max(m.lastSnapshotOffset, offset)
	m.mu.Unlock()
	return nil
}

// snapshotOffsets lists the offsets of the snapshot files, ascending.
func (m *producerStateManager) snapshotOffsets() []int64 {
	des, err := m.fs.ReadDir(m.dir)
	if err != nil {
		return nil
	}
	var out []int64
	for _, de := range des {
		name := de.Name()
		if !strings.HasSuffix(name, snapshotSuffix) || len(name) != 20+len(snapshotSuffix) {
			continue
		}
		if off, err := strconv.ParseInt(strings.TrimSuffix(name, snapshotSuffix), 10, 64); err == nil {
			out = append(out, off)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// removeSnapshotsAfter deletes snapshots with offset > offset (the log was
// truncated below them).
func (m *producerStateManager) removeSnapshotsAfter(offset int64) {
	for _, off := range m.snapshotOffsets() {
		if off > offset {
			m.fs.Remove(m.snapshotPath(off))
		}
	}
}

// loadLatestSnapshot replaces the state with the newest valid snapshot at
// or below upTo and returns its offset, or -1 (state empty) if there is
// none. Corrupt snapshots are deleted.
func (m *producerStateManager) loadLatestSnapshot(upTo int64) (int64, error) {
	offs := m.snapshotOffsets()
	for i := len(offs) - 1; i >= 0; i-- {
		if offs[i] > upTo {
			continue
		}
		data, err := vfs.ReadFile(m.fs, m.snapshotPath(offs[i]))
		if err != nil {
			return -1, diskError("read producer snapshot", err)
		}
		entries, err := decodeSnapshot(data)
		if err != nil {
			m.fs.Remove(m.snapshotPath(offs[i]))
			continue
		}
		m.mu.Lock()
		m.producers = make(map[int64]*ProducerEntry, len(entries))
		m.txns = newTxnState()
		for j := range entries {
			m.putLocked(entries[j].ProducerID, &entries[j])
		}
		m.lastSnapshotOffset = offs[i]
		m.mu.Unlock()
		return offs[i], nil
	}
	m.reset()
	return -1, nil
}

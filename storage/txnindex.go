package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/kbroker/kbroker/storage/vfs"
)

// The transaction index (.txnindex) of a segment, Kafka's TransactionIndex:
// one 34-byte entry per aborted transaction whose ABORT marker the segment
// holds, in marker order, big endian:
//
//	offset size field
//	     0    2 version (0)
//	     2    8 producerId
//	    10    8 firstOffset       first offset of the transaction
//	    18    8 lastOffset        offset of the ABORT marker
//	    26    8 lastStableOffset  the LSO when the marker was appended
//
// The file exists only once an entry is written. Entries are appended with
// the marker's batch (under the log's append lock) and fsynced with the
// segment's data, so an entry below the recovery point is on disk. The
// entries are kept in memory too: a read_committed fetch reads them there.
// Recovery drops entries whose marker lies beyond the segment's last
// valid batch or at or after the recovery point, and the replay of
// producer state from the recovery point (rebuildProducerStateLocked)
// appends the entries of the markers there again. Truncation cuts
// the entries at the new log end; a deleted segment takes its index along.

const (
	txnIndexSuffix    = ".txnindex"
	abortedTxnSize    = 34
	abortedTxnVersion = 0
)

// txnIndex is the .txnindex of one segment.
type txnIndex struct {
	path string
	env  *fileEnv // its fs is the log's (opts.FS), so crash suites see the index

	mu      sync.Mutex // guards the following
	entries []AbortedTxn
	// written counts the entries in the file, synced those fsynced.
	written, synced int
	// created: the file was created since the last sync, so its directory
	// entry is not durable until the directory is synced too.
	created bool
}

func newTxnIndex(path string, env *fileEnv) *txnIndex { return &txnIndex{path: path, env: env} }

func appendAbortedTxn(dst []byte, t AbortedTxn) []byte {
	dst = binary.BigEndian.AppendUint16(dst, abortedTxnVersion)
	dst = binary.BigEndian.AppendUint64(dst, uint64(t.ProducerID))
	dst = binary.BigEndian.AppendUint64(dst, uint64(t.FirstOffset))
	dst = binary.BigEndian.AppendUint64(dst, uint64(t.LastOffset))
	return binary.BigEndian.AppendUint64(dst, uint64(t.LastStableOffset))
}

// decodeAbortedTxns parses a .txnindex. A trailing partial entry (a torn
// write) is dropped with ok entries before it kept; an entry of an
// unknown version, one whose marker does not follow its first offset (a
// zeroed entry), or one out of marker order ends the valid prefix too.
// It returns the valid entries and why it stopped early.
func decodeAbortedTxns(b []byte) ([]AbortedTxn, error) {
	var out []AbortedTxn
	for len(b) >= abortedTxnSize {
		if v := binary.BigEndian.Uint16(b); v != abortedTxnVersion {
			return out, fmt.Errorf("%w: transaction index entry %d has version %d", ErrCorruptIndex, len(out), v)
		}
		t := AbortedTxn{
			ProducerID:       int64(binary.BigEndian.Uint64(b[2:])),
			FirstOffset:      int64(binary.BigEndian.Uint64(b[10:])),
			LastOffset:       int64(binary.BigEndian.Uint64(b[18:])),
			LastStableOffset: int64(binary.BigEndian.Uint64(b[26:])),
		}
		if t.FirstOffset < 0 || t.LastOffset <= t.FirstOffset {
			// A transaction's data precedes its marker; a zeroed entry (a
			// crash kept the file's size but not its data) says otherwise.
			return out, fmt.Errorf("%w: transaction index entry %d spans [%d, %d]", ErrCorruptIndex, len(out), t.FirstOffset, t.LastOffset)
		}
		if n := len(out); n > 0 && t.LastOffset <= out[n-1].LastOffset {
			return out, fmt.Errorf("%w: transaction index entry %d ends at %d, not after %d", ErrCorruptIndex, n, t.LastOffset, out[n-1].LastOffset)
		}
		out = append(out, t)
		b = b[abortedTxnSize:]
	}
	if len(b) > 0 {
		return out, fmt.Errorf("%w: transaction index ends with %d bytes of a partial entry", ErrCorruptIndex, len(b))
	}
	return out, nil
}

// load reads the file, keeping only entries whose marker is below
// upTo; the file is cut to them when it held more or a bad tail.
func (x *txnIndex) load(upTo int64) (dropped int, err error) {
	data, err := vfs.ReadFile(x.env.fs, x.path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, diskError("read transaction index", err)
	}
	entries, bad := decodeAbortedTxns(data)
	n := len(entries)
	for n > 0 && entries[n-1].LastOffset >= upTo {
		n--
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	x.entries = entries[:n:n]
	x.written, x.synced = n, n
	if bad == nil && n == len(entries) {
		return 0, nil
	}
	return max(len(data)/abortedTxnSize-n, 1), x.rewriteLocked()
}

// rewriteLocked cuts the file to the entries in memory (removing it when
// there are none). Must be called with mu held.
func (x *txnIndex) rewriteLocked() error {
	if len(x.entries) == 0 {
		if err := x.env.fs.Remove(x.path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return diskError("remove transaction index", err)
		}
		x.written, x.synced = 0, 0
		return nil
	}
	if err := x.env.fs.Truncate(x.path, int64(len(x.entries))*abortedTxnSize); err != nil {
		return diskError("truncate transaction index", err)
	}
	x.written = len(x.entries)
	x.synced = min(x.synced, x.written)
	return nil
}

// append adds t, unless an entry for a marker at or after t's is there
// already (a replay of markers the index has).
func (x *txnIndex) append(t AbortedTxn) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if n := len(x.entries); n > 0 && x.entries[n-1].LastOffset >= t.LastOffset {
		return nil
	}
	if x.written == 0 {
		x.created = true
	}
	f, err := x.env.fs.OpenFile(x.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return diskError("open transaction index", err)
	}
	_, err = f.Write(appendAbortedTxn(nil, t))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return diskError("write transaction index", err)
	}
	x.entries = append(x.entries, t)
	x.written++
	return nil
}

// sync fsyncs the entries written since the last sync.
func (x *txnIndex) sync() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.syncLocked()
}

// syncLocked is sync with mu held.
func (x *txnIndex) syncLocked() error {
	if x.synced == x.written {
		return nil
	}
	f, err := x.env.fs.OpenFile(x.path, os.O_WRONLY, 0)
	if err != nil {
		return diskError("open transaction index", err)
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return diskError("sync transaction index", err)
	}
	if x.created {
		if err := syncDir(x.env.fs, filepath.Dir(x.path)); err != nil {
			return err
		}
		x.created = false
	}
	x.synced = x.written
	return nil
}

// truncateTo drops the entries whose marker is at or after offset (the
// log was cut there), durably.
func (x *txnIndex) truncateTo(offset int64) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	n := len(x.entries)
	for n > 0 && x.entries[n-1].LastOffset >= offset {
		n--
	}
	if n == len(x.entries) {
		return nil
	}
	x.entries = x.entries[:n:n]
	if err := x.rewriteLocked(); err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	x.synced = 0
	return x.syncLocked()
}

// collect appends to dst the entries overlapping [from, upTo) and reports
// whether the search is complete: an entry's last stable offset reached
// upTo, so no later segment holds an overlapping one (Kafka's
// TransactionIndex.collectAbortedTxns).
func (x *txnIndex) collect(dst []AbortedTxn, from, upTo int64) ([]AbortedTxn, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, t := range x.entries {
		if t.LastOffset >= from && t.FirstOffset < upTo {
			dst = append(dst, t)
		}
		if t.LastStableOffset >= upTo {
			return dst, true
		}
	}
	return dst, false
}

// all returns a copy of the entries.
func (x *txnIndex) all() []AbortedTxn {
	x.mu.Lock()
	defer x.mu.Unlock()
	return append([]AbortedTxn(nil), x.entries...)
}

// loadTxnIndexesLocked reads the .txnindex of every segment that has one,
// keeping only the entries whose marker lies below both the segment's end
// and the recovery point rp: the replay of producer state from the
// recovery point (rebuildProducerStateLocked) writes the entries of the
// markers at or after it again, as Kafka rebuilds the transaction index of
// every segment it recovers. An entry at or after the recovery point may
// be stale: a truncation cut it from the index after the log, and a crash
// can undo an unsynced cut (the crash suite found an entry naming a marker
// that a truncation had removed). Must be called with appendMu held, at
// open.
func (l *Log) loadTxnIndexesLocked(segs []*segment, rp int64) error {
	des, err := l.env.fs.ReadDir(l.dir)
	if err != nil {
		return diskError("list log dir", err)
	}
	present := map[int64]bool{}
	for _, de := range des {
		if base, ok := parseSegmentName(de.Name(), txnIndexSuffix); ok {
			present[base] = true
		}
	}
	for _, s := range segs {
		if !present[s.baseOffset] {
			continue
		}
		end := s.nextOffset.Load()
		dropped, err := s.txn.load(min(end, rp))
		if err != nil {
			return err
		}
		if dropped > 0 {
			l.logger.Warn("storage: dropped transaction index entries at or after the recovery point or past the segment's valid data; the replay from the recovery point writes those of the log again",
				"segment", s.String(), "entries", dropped, "recovery_point", rp)
		}
	}
	return nil
}

package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/kbroker/kbroker/storage/vfs"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/kbroker/kbroker/record"
)

// Recovery (see doc.go for the rules). Everything here runs from OpenLog
// with appendMu held and no readers.

// isStrayFile reports files left by interrupted operations (Kafka's
// cleaner and deletion suffixes, our atomic-write temporaries).
func isStrayFile(name string) bool {
	for _, suf := range []string{".cleaned", ".swap", ".deleted", ".tmp"} {
		if strings.HasSuffix(name, suf) {
			return true
		}
	}
	return false
}

// parseSegmentName returns the base offset of "%020d<suffix>".
func parseSegmentName(name, suffix string) (int64, bool) {
	if !strings.HasSuffix(name, suffix) || len(name) != 20+len(suffix) {
		return 0, false
	}
	off, err := strconv.ParseInt(name[:20], 10, 64)
	return off, err == nil && off >= 0
}

// scanDirLocked completes interrupted compaction swaps, deletes stray and
// orphaned files and returns the base offsets of the .log files, ascending.
func (l *Log) scanDirLocked() ([]int64, error) {
	if err := l.completeSwapsLocked(); err != nil {
		return nil, err
	}
	des, err := l.env.fs.ReadDir(l.dir)
	if err != nil {
		return nil, diskError("list log dir", err)
	}
	logs := map[int64]bool{}
	for _, de := range des {
		if base, ok := parseSegmentName(de.Name(), logSuffix); ok {
			logs[base] = true
		}
	}
	var bases []int64
	for _, de := range des {
		name := de.Name()
		orphan := false
		if base, ok := parseSegmentName(name, indexSuffix); ok {
			orphan = !logs[base]
		} else if base, ok := parseSegmentName(name, timeIndexSuffix); ok {
			orphan = !logs[base]
		} else if base, ok := parseSegmentName(name, txnIndexSuffix); ok {
			orphan = !logs[base]
		}
		if isStrayFile(name) || orphan {
			l.logger.Info("storage: deleting stray file", "file", name)
			if err := l.env.fs.Remove(filepath.Join(l.dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return nil, fmt.Errorf("storage: delete stray file: %w", err)
			}
			continue
		}
		if base, ok := parseSegmentName(name, logSuffix); ok {
			bases = append(bases, base)
		}
	}
	sort.Slice(bases, func(i, j int) bool { return bases[i] < bases[j] })
	return bases, nil
}

// completeSwapsLocked finishes the compaction swaps a crash interrupted
// (Kafka's LogLoader swap recovery; see swapCleaned for the order of the
// steps). A <base>.log.swap is a committed cleaned segment: the segments it
// replaces, those with a base offset in (base, its next offset), are
// deleted with the index files of <base> that have no .swap (they belong to
// the replaced log and are rebuilt), then the .swap files are renamed into
// place. An index .swap without a log .swap belongs to a swap whose log was
// already renamed: it is renamed too. *.cleaned files (never committed) are
// left to the stray-file deletion.
func (l *Log) completeSwapsLocked() error {
	des, err := l.env.fs.ReadDir(l.dir)
	if err != nil {
		return diskError("list log dir", err)
	}
	var logs, swaps []int64
	for _, de := range des {
		if base, ok := parseSegmentName(de.Name(), logSuffix); ok {
			logs = append(logs, base)
		} else if base, ok := parseSegmentName(de.Name(), logSuffix+swapSuffix); ok {
			swaps = append(swaps, base)
		}
	}
	for _, base := range swaps {
		if err := l.completeSwapLocked(base, logs); err != nil {
			return err
		}
		logs = append(logs, base)
	}
	done := len(swaps) > 0
	for _, de := range des {
		for _, suf := range []string{indexSuffix, timeIndexSuffix, txnIndexSuffix} {
			base, ok := parseSegmentName(de.Name(), suf+swapSuffix)
			if !ok || !slices.Contains(logs, base) {
				continue // a stray without its log: deleted as such
			}
			path := segmentFileName(l.dir, base, suf)
			if err := l.env.fs.Rename(path+swapSuffix, path); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("storage: complete swap: %w", err)
			}
			done = true
		}
	}
	if done {
		return syncDir(l.env.fs, l.dir)
	}
	return nil
}

// completeSwapLocked installs <base>.log.swap (see completeSwapsLocked).
func (l *Log) completeSwapLocked(base int64, logs []int64) error {
	swap := segmentFileName(l.dir, base, logSuffix) + swapSuffix
	next, err := swapNextOffset(l.env.fs, swap, base)
	if err != nil {
		return err
	}
	l.logger.Warn("storage: completing an interrupted compaction swap", "segment", filepath.Base(swap), "next_offset", next)
	for _, b := range logs {
		if b > base && b < next {
			if err := newSegment(l.dir, b, l.env).removeFiles(); err != nil {
				return fmt.Errorf("storage: delete compacted segment: %w", err)
			}
		}
	}
	for _, suf := range []string{indexSuffix, timeIndexSuffix, txnIndexSuffix} {
		path := segmentFileName(l.dir, base, suf)
		if _, err := l.env.fs.Stat(path + swapSuffix); errors.Is(err, os.ErrNotExist) {
			if err := l.env.fs.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("storage: delete replaced index: %w", err)
			}
		}
	}
	// The deletions must be durable before the rename makes the swap
	// segment look like any other.
	if err := syncDir(l.env.fs, l.dir); err != nil {
		return err
	}
	if err := l.env.fs.Rename(swap, segmentFileName(l.dir, base, logSuffix)); err != nil {
		return fmt.Errorf("storage: complete swap: %w", err)
	}
	return nil
}

// swapNextOffset is the offset after the last valid batch of a swap file
// (base if it has none).
func swapNextOffset(fsys vfs.FS, path string, base int64) (int64, error) {
	f, err := vfs.Open(fsys, path)
	if err != nil {
		return 0, diskError("open swap file", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, diskError("stat swap file", err)
	}
	if st.Size() == 0 {
		return base, nil
	}
	data, err := mmapFile(f, st.Size(), false)
	if err != nil {
		return 0, err
	}
	defer munmap(data)
	next := base
	for it := record.VerifiedBatches(data); it.Next(); {
		next = it.Header().NextOffset()
	}
	return next, nil
}

// loadLocked builds the log from its directory: recovery of unflushed or
// suspicious segments, then offsets, epoch cache and producer state.
func (l *Log) loadLocked(st LogState) error {
	started := l.now()
	bases, err := l.scanDirLocked()
	if err != nil {
		return err
	}
	segs, recovered, err := l.loadSegmentsLocked(bases, st, started)
	if err != nil {
		return err
	}
	if len(segs) == 0 {
		s, err := createSegment(l.dir, max(st.LogStartOffset, 0), l.cfg.segmentParams(), l.env, l.now())
		if err != nil {
			return err
		}
		segs = []*segment{s}
		l.dirDirty = true // the new segment's files are on disk at the next flush
	} else if err := l.activateLastLocked(segs[len(segs)-1]); err != nil {
		return err
	}
	l.setSegments(segs)
	leo := segs[len(segs)-1].nextOffset.Load()
	lso := max(st.LogStartOffset, segs[0].baseOffset)
	l.logEndOffset.Store(leo)
	l.logStartOffset.Store(min(lso, leo))
	l.highWatermark.Store(max(min(st.HighWatermark, leo), lso))
	rp := leo
	if !st.CleanShutdown {
		// Nothing below the log start offset is left to recover: a
		// recovery point checkpointed before retention (or DeleteRecords)
		// moved the log start is raised to it, as Kafka's UnifiedLog does
		// at load (updateLogStartOffset). The replay of producer state
		// from the recovery point then starts from the snapshot taken at
		// the roll of the first segment, which holds the transactions the
		// deleted segments opened. From below the log start no snapshot
		// was left (retention deletes them with their segments), so the
		// replay began at the log start with no producer state: an ABORT
		// marker there completed nothing and its transaction index entry,
		// dropped as at or after the recovery point, was never written
		// again (crash suite seed 5720).
		rp = min(max(st.RecoveryPoint, lso, 0), leo)
	}
	l.recoveryPoint.Store(rp)
	l.cleanerOffset.Store(st.CleanerCheckpoint)
	if err := l.loadEpochCacheLocked(); err != nil {
		return err
	}
	if err := l.loadTxnIndexesLocked(segs, rp); err != nil {
		return err
	}
	if lso > leo {
		// Everything below the checkpointed log start offset is gone (or
		// was lost): start over there, as Kafka does.
		if err := l.truncateFullyLocked(lso); err != nil {
			return err
		}
		leo = lso
	} else if err := l.rebuildProducerStateLocked(leo, rp); err != nil {
		// From the recovery point at least: the transaction index entries
		// of markers a crash lost are written again by the replay.
		return err
	}
	l.logger.Info("storage: loaded log", "segments", len(segs), "recovered_segments", recovered,
		"log_start_offset", lso, "log_end_offset", leo, "clean_shutdown", st.CleanShutdown,
		"took", l.now().Sub(started))
	return nil
}

// loadSegmentsLocked checks or recovers each segment. Segments that may hold
// unflushed data (at or after the recovery point, after an unclean
// shutdown) are recovered: every batch is CRC-checked and the indexes are
// rebuilt. Others get a cheap index sanity check and are recovered only if
// it fails. A torn or corrupt batch truncates its segment and deletes every
// later segment.
func (l *Log) loadSegmentsLocked(bases []int64, st LogState, started time.Time) ([]*segment, int, error) {
	segs := make([]*segment, 0, len(bases))
	recovered := 0
	for i, base := range bases {
		s := newSegment(l.dir, base, l.env)
		last := i == len(bases)-1
		nextBase := int64(math.MaxInt64)
		if !last {
			nextBase = bases[i+1]
		}
		var (
			keepLater = true
			err       error
		)
		if !st.CleanShutdown && nextBase > st.RecoveryPoint {
			keepLater, err = l.recoverSegment(s, nextBase)
			recovered++
		} else if cerr := l.sanityCheck(s, last, nextBase); cerr != nil {
			l.logger.Warn("storage: segment failed sanity check; recovering it", "segment", s.String(), "err", cerr)
			keepLater, err = l.recoverSegment(s, nextBase)
			recovered++
		}
		if err != nil {
			return nil, 0, err
		}
		if keepLater && !last && !l.cfg.Compact && s.nextOffset.Load() < nextBase {
			// A rolled segment ends where the next one starts unless a
			// crash lost its end: later segments would follow a hole.
			l.logger.Warn("storage: segment lost its end in a crash; dropping the later segments",
				"segment", s.String(), "next_offset", s.nextOffset.Load(), "next_segment", nextBase)
			keepLater = false
		}
		segs = append(segs, s)
		if !keepLater {
			for _, b := range bases[i+1:] {
				later := newSegment(l.dir, b, l.env)
				l.logger.Warn("storage: deleting segment after corruption", "segment", later.String())
				if err := later.removeFiles(); err != nil {
					return nil, 0, fmt.Errorf("storage: delete segment: %w", err)
				}
			}
			break
		}
		if n := i + 1; n%l.opts.RecoveryProgressEvery == 0 {
			l.logger.Info(fmt.Sprintf("storage: recovered %d/%d segments in %s", n, len(bases), l.now().Sub(started).Round(time.Millisecond)))
		}
	}
	return segs, recovered, nil
}

// activateLastLocked makes the last loaded segment the active one.
func (l *Log) activateLastLocked(s *segment) error {
	if err := s.activate(l.cfg.segmentParams()); err != nil {
		return err
	}
	size := s.size.Load()
	s.bytesSinceIndex = size - s.index.lastEntry().Position
	if s.index.count.Load() == 0 {
		s.bytesSinceIndex = size
	}
	if size > 0 {
		// The wall clock of the first append is not persisted; count
		// segment.ms from the open, as Kafka counts from segment creation.
		s.rollingTime = l.now()
	}
	return nil
}

// indexBuilder rebuilds both indexes of a segment with the same rules as
// segment.append.
type indexBuilder struct {
	base, interval int64
	index, tindex  []byte
	bytesSince     int64
	maxTs, maxTsAt int64
	lastTimeEntry  int64
	// epochs: the first offset of each leader epoch met, in order, for
	// the epoch cache (Kafka's LogSegment.recover assigns them too).
	epochs []EpochEntry
}

func newIndexBuilder(base, interval int64) *indexBuilder {
	return &indexBuilder{base: base, interval: interval, maxTs: -1, maxTsAt: -1, lastTimeEntry: math.MinInt64}
}

func (b *indexBuilder) add(h record.BatchHeader, pos, size int64) {
	if n := len(b.epochs); h.PartitionLeaderEpoch >= 0 && (n == 0 || h.PartitionLeaderEpoch > b.epochs[n-1].Epoch) {
		b.epochs = append(b.epochs, EpochEntry{Epoch: h.PartitionLeaderEpoch, StartOffset: h.BaseOffset})
	}
	if h.MaxTimestamp > b.maxTs {
		b.maxTs, b.maxTsAt = h.MaxTimestamp, h.LastOffset()
	}
	if b.bytesSince > b.interval {
		b.index = binary.BigEndian.AppendUint32(b.index, uint32(h.LastOffset()-b.base))
		b.index = binary.BigEndian.AppendUint32(b.index, uint32(pos))
		b.maybeTimeEntry()
		b.bytesSince = 0
	}
	b.bytesSince += size
}

func (b *indexBuilder) maybeTimeEntry() {
	if b.maxTs >= 0 && b.maxTs > b.lastTimeEntry {
		b.tindex = binary.BigEndian.AppendUint64(b.tindex, uint64(b.maxTs))
		b.tindex = binary.BigEndian.AppendUint32(b.tindex, uint32(b.maxTsAt-b.base))
		b.lastTimeEntry = b.maxTs
	}
}

// write replaces the index files with the rebuilt ones, including the
// final time index entry a rolled segment has.
func (b *indexBuilder) write(s *segment) error {
	b.maybeTimeEntry()
	if err := vfs.WriteFile(s.env.fs, s.index.path, b.index, 0o644); err != nil {
		return diskError("write index", err)
	}
	if err := vfs.WriteFile(s.env.fs, s.timeIndex.path, b.tindex, 0o644); err != nil {
		return diskError("write time index", err)
	}
	return nil
}

// recoverSegment validates every batch of s (length, magic, CRC, offsets
// increasing inside [base, nextBase)), truncates the file after the last
// valid batch, and rebuilds both indexes. keepLater is false when invalid
// data was found that makes later segments untrustworthy (anything but a
// zero-filled preallocated tail of the last segment).
func (l *Log) recoverSegment(s *segment, nextBase int64) (keepLater bool, err error) {
	f, err := s.env.fs.OpenFile(s.logPath(), os.O_RDWR, 0)
	if err != nil {
		return false, diskError("open segment for recovery", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return false, diskError("stat segment", err)
	}
	fileSize := st.Size()
	data, err := mmapFile(f, fileSize, false)
	if err != nil {
		return false, err
	}
	b := newIndexBuilder(s.baseOffset, l.env.indexInterval.Load())
	valid, next, reason := scanValidBatches(data, s.baseOffset, nextBase, b)
	benign := reason == nil || (errors.Is(reason, record.ErrZeroedBatch) && allZero(data[valid:]))
	munmap(data)

	if valid < fileSize {
		if benign {
			l.logger.Info("storage: trimming preallocated tail", "segment", s.String(), "bytes", fileSize-valid)
		} else {
			l.logger.Warn("storage: truncating torn or corrupt data", "segment", s.String(),
				"at_byte", valid, "dropped_bytes", fileSize-valid, "reason", reason)
		}
		if err := f.Truncate(valid); err != nil {
			return false, diskError("truncate segment", err)
		}
		if err := f.Sync(); err != nil {
			return false, diskError("sync segment", err)
		}
	}
	if err := b.write(s); err != nil {
		return false, err
	}
	s.size.Store(valid)
	s.nextOffset.Store(next)
	s.flushedSize.Store(valid)
	s.lastModifiedMs.Store(st.ModTime().UnixMilli())
	s.setMaxTimestamp(b.maxTs, b.maxTsAt)
	s.indexChecked = true
	l.recoveredEpochs = append(l.recoveredEpochs, b.epochs...)
	// A rolled segment was trimmed to its batches, so a tail to trim in a
	// segment that is not the last one means its end was lost in a crash:
	// later segments would follow a hole, so they go too (the crash suite
	// found logs with gaps).
	return benign && (valid == fileSize || nextBase == math.MaxInt64), nil
}

// scanValidBatches walks data and feeds valid batches to b. It returns
// the end of the valid prefix, the next offset, and why it stopped early.
func scanValidBatches(data []byte, base, nextBase int64, b *indexBuilder) (int64, int64, error) {
	it := record.VerifiedBatches(data)
	next := base
	for it.Next() {
		h := it.Header()
		if h.BaseOffset < next || h.LastOffset()-base > math.MaxInt32 || h.LastOffset() >= nextBase {
			return int64(it.Pos()), next, fmt.Errorf("%w: batch offsets %d-%d after next offset %d",
				record.ErrCorruptBatch, h.BaseOffset, h.LastOffset(), next)
		}
		b.add(h, int64(it.Pos()), int64(len(it.Batch())))
		next = h.NextOffset()
	}
	return int64(it.Pos()), next, it.Err()
}

func allZero(b []byte) bool {
	for len(b) >= 8 {
		if binary.LittleEndian.Uint64(b) != 0 {
			return false
		}
		b = b[8:]
	}
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// sanityCheck is the cheap check of a segment that recovery does not scan
// (Kafka's index sanityCheck): both index files present with whole entries,
// the last offset index entry pointing at a batch boundary inside the file
// whose last offset it names, the last time index entry inside the
// segment's offsets. The last segment also has its tail (after the last
// index entry) CRC-checked, which yields its next offset. Full index
// validation happens when the segment is first mapped.
func (l *Log) sanityCheck(s *segment, last bool, nextBase int64) error {
	f, err := vfs.Open(s.env.fs, s.logPath())
	if err != nil {
		return diskError("open segment", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	size := st.Size()
	s.size.Store(size)
	s.flushedSize.Store(size)
	s.lastModifiedMs.Store(st.ModTime().UnixMilli())
	lastIdx, err := lastIndexEntry(s, f, size)
	if err != nil {
		return err
	}
	te, err := lastTimeEntry(s, nextBase)
	if err != nil {
		return err
	}
	s.setMaxTimestamp(te.Timestamp, te.Offset)
	if !last {
		s.nextOffset.Store(nextBase)
		return nil
	}
	if err := checkTail(s, f, lastIdx.Position, size); err != nil {
		return err
	}
	// The last segment becomes active and is read at once: check its
	// indexes fully now.
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.index.openReadOnly(); err != nil {
		return err
	}
	defer s.index.close()
	if err := s.timeIndex.openReadOnly(); err != nil {
		return err
	}
	defer s.timeIndex.close()
	if err := s.index.check(size); err != nil {
		return err
	}
	return s.timeIndex.check(s.nextOffset.Load())
}

// lastIndexEntry validates the offset index file's shape and last entry.
func lastIndexEntry(s *segment, f vfs.File, logSize int64) (indexEntry, error) {
	st, err := s.env.fs.Stat(s.index.path)
	if err != nil {
		return indexEntry{}, fmt.Errorf("%w: %w", ErrCorruptIndex, err)
	}
	if st.Size()%offsetIndexEntrySize != 0 {
		return indexEntry{}, fmt.Errorf("%w: %s size %d", ErrCorruptIndex, s.index.path, st.Size())
	}
	if st.Size() == 0 {
		return indexEntry{Offset: s.baseOffset}, nil
	}
	var e [offsetIndexEntrySize]byte
	if err := readAt(s.env.fs, s.index.path, e[:], st.Size()-offsetIndexEntrySize); err != nil {
		return indexEntry{}, err
	}
	ie := indexEntry{Offset: s.baseOffset + int64(binary.BigEndian.Uint32(e[:])), Position: int64(binary.BigEndian.Uint32(e[4:]))}
	var hdr [record.BatchHeaderSize]byte
	if ie.Position+record.BatchHeaderSize > logSize {
		return ie, fmt.Errorf("%w: last entry position %d beyond log of %d bytes", ErrCorruptIndex, ie.Position, logSize)
	}
	if _, err := f.ReadAt(hdr[:], ie.Position); err != nil {
		return ie, diskError("read segment", err)
	}
	h, _ := record.ParseBatchHeader(hdr[:])
	if h.Magic != 2 || h.LastOffset() != ie.Offset || ie.Position+int64(h.Size()) > logSize {
		return ie, fmt.Errorf("%w: last entry (%d, %d) does not point at its batch", ErrCorruptIndex, ie.Offset, ie.Position)
	}
	return ie, nil
}

// lastTimeEntry validates the time index file's shape and last entry.
func lastTimeEntry(s *segment, nextBase int64) (timeEntry, error) {
	st, err := s.env.fs.Stat(s.timeIndex.path)
	if err != nil {
		return timeEntry{}, fmt.Errorf("%w: %w", ErrCorruptIndex, err)
	}
	if st.Size()%timeIndexEntrySize != 0 {
		return timeEntry{}, fmt.Errorf("%w: %s size %d", ErrCorruptIndex, s.timeIndex.path, st.Size())
	}
	if st.Size() == 0 {
		return timeEntry{Timestamp: -1, Offset: -1}, nil
	}
	var e [timeIndexEntrySize]byte
	if err := readAt(s.env.fs, s.timeIndex.path, e[:], st.Size()-timeIndexEntrySize); err != nil {
		return timeEntry{}, err
	}
	te := timeEntry{Timestamp: int64(binary.BigEndian.Uint64(e[:])), Offset: s.baseOffset + int64(binary.BigEndian.Uint32(e[8:]))}
	if te.Offset >= nextBase {
		return te, fmt.Errorf("%w: time index entry offset %d beyond next segment %d", ErrCorruptIndex, te.Offset, nextBase)
	}
	return te, nil
}

func readAt(fsys vfs.FS, path string, b []byte, off int64) error {
	f, err := vfs.Open(fsys, path)
	if err != nil {
		return diskError("open", err)
	}
	defer f.Close()
	if _, err := f.ReadAt(b, off); err != nil {
		return fmt.Errorf("storage: read %s: %w", path, err)
	}
	return nil
}

// checkTail CRC-checks the batches from pos to the end of the file, which
// must end exactly at a batch boundary, and sets the next offset and max
// timestamp from them.
func checkTail(s *segment, f vfs.File, pos, size int64) error {
	tail := make([]byte, size-pos)
	if _, err := f.ReadAt(tail, pos); err != nil && !errors.Is(err, io.EOF) {
		return diskError("read segment tail", err)
	}
	it := record.VerifiedBatches(tail)
	next := s.baseOffset
	for it.Next() {
		h := it.Header()
		next = h.NextOffset()
		s.maybeUpdateMaxTimestamp(h.MaxTimestamp, h.LastOffset())
	}
	if err := it.Err(); err != nil {
		return fmt.Errorf("tail of %s: %w", s, err)
	}
	if pos == 0 && len(tail) == 0 {
		next = s.baseOffset
	}
	s.nextOffset.Store(next)
	return nil
}

// loadEpochCacheLocked reads leader-epoch-checkpoint; when it is corrupt,
// or missing while the log has data, it is rebuilt from the batch headers
// (each carries its partitionLeaderEpoch). It is then aligned with the
// log's offsets.
func (l *Log) loadEpochCacheLocked() error {
	c, err := loadEpochCache(l.env.fs, l.dir, l.logEndOffset.Load)
	l.epochs = c
	if errorKind(err) == ErrTooManyOpenFiles {
		return diskError("read leader epoch checkpoint", err) // not corrupt: unreadable now
	}
	_, statErr := l.env.fs.Stat(c.path)
	missing := errors.Is(statErr, os.ErrNotExist)
	if err != nil || (missing && l.logEndOffset.Load() > l.logStartOffset.Load()) {
		l.logger.Warn("storage: rebuilding leader epoch cache from the log", "err", err, "missing", missing)
		if err := l.rebuildEpochCacheLocked(); err != nil {
			return err
		}
	}
	if err := c.TruncateFromEnd(l.logEndOffset.Load()); err != nil {
		return err
	}
	// Batches recovered after a crash may carry an epoch whose checkpoint
	// write the crash lost (the append writes the batch first).
	for _, e := range l.recoveredEpochs {
		if e.StartOffset < l.logEndOffset.Load() {
			if err := c.Assign(e.Epoch, e.StartOffset); err != nil {
				return err
			}
		}
	}
	l.recoveredEpochs = nil
	return c.TruncateFromStart(l.logStartOffset.Load())
}

func (l *Log) rebuildEpochCacheLocked() error {
	var entries []EpochEntry
	err := l.scanBatchesLocked(l.logStartOffset.Load(), l.logEndOffset.Load(), func(_ *segment, h record.BatchHeader, _ []byte) {
		if n := len(entries); h.PartitionLeaderEpoch >= 0 && (n == 0 || h.PartitionLeaderEpoch > entries[n-1].Epoch) {
			entries = append(entries, EpochEntry{Epoch: h.PartitionLeaderEpoch, StartOffset: h.BaseOffset})
		}
	})
	if err != nil {
		return err
	}
	return l.epochs.replace(entries)
}

// rebuildProducerStateLocked rebuilds producer state as of upTo: the newest
// snapshot at or below min(upTo, replayFrom), then the batches after the
// snapshot replayed, which also completes their transactions and writes
// the transaction index entries that are missing. Snapshots above upTo are
// deleted. Must be called with appendMu held.
func (l *Log) rebuildProducerStateLocked(upTo, replayFrom int64) error {
	l.producers.removeSnapshotsAfter(upTo)
	snap, err := l.producers.loadLatestSnapshot(min(upTo, replayFrom))
	if err != nil {
		return err
	}
	lso := l.logStartOffset.Load()
	from := max(snap, lso)
	var txnErr error
	err = l.scanBatchesLocked(from, upTo, func(s *segment, h record.BatchHeader, batch []byte) {
		marker, _ := parseMarker(h, batch) // the leader checked it; unreadable: no effect
		if t, ok := l.producers.update(h, marker); ok {
			txnErr = errors.Join(txnErr, l.indexTxnsLocked(s, []completedTxn{t}))
		}
	})
	if err = errors.Join(err, txnErr); err != nil {
		return err
	}
	l.producers.truncateHead(lso)
	return nil
}

// scanBatchesLocked calls fn for every batch with last offset >= from and
// base offset < upTo, in order, with its segment and bytes (valid during
// the call). Must be called with appendMu held.
func (l *Log) scanBatchesLocked(from, upTo int64, fn func(*segment, record.BatchHeader, []byte)) error {
	segs := l.segmentList()
	for i := segmentFor(segs, from); i < len(segs) && segs[i].baseOffset < upTo; i++ {
		s := segs[i]
		ok, err := l.acquireSegment(s, i == len(segs)-1)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		size := s.size.Load()
		pos, h, bsize, found := s.findBatch(from, size)
		for found && h.BaseOffset < upTo {
			fn(s, h, s.data[pos:pos+bsize])
			pos += bsize
			h, bsize, found = batchAt(s.data, pos, size)
		}
		s.release()
	}
	return nil
}

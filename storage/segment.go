package storage

import (
	"errors"
	"fmt"
	"github.com/kbroker/kbroker/storage/vfs"
	"math"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kbroker/kbroker/record"
)

// File name suffixes, as Kafka.
const (
	logSuffix       = ".log"
	indexSuffix     = ".index"
	timeIndexSuffix = ".timeindex"
	snapshotSuffix  = ".snapshot"
)

// segmentFileName is "%020d<suffix>", Kafka's naming by base offset.
func segmentFileName(dir string, base int64, suffix string) string {
	return filepath.Join(dir, fmt.Sprintf("%020d%s", base, suffix))
}

// segment is one .log file with its .index and .timeindex.
//
// Life cycle. A segment is either active (the last segment of the log,
// written by the appender), inactive (rolled; read-only), or retired
// (removed from the log by retention, truncation or close). The active
// segment's .log is mapped read-write once over its whole capacity (its
// segment.bytes rounded to a page) so the mapping never moves while the
// file grows by fallocate chunks under it; appends go into the file (large
// ones by write(2), small ones copied into the mapping: the same page-cache
// pages either way) and then publish the new size. Only the active .log
// keeps a descriptor open. An inactive segment holds none: it is mapped
// read-only on the first read (its files opened for the mmap and closed at
// once) and unmapped when the map cache evicts it (mapcache.go keeps only a
// few mapped, per log and in total) or it is retired.
//
// References. Every reader holds a reference (acquire/release) while it
// uses the mapping, including slices handed out by Log.Read until their
// Release. Unmapping, closing and deleting the files of a retired segment
// happen at the last release; truncation waits for the references to drop
// (beginExclusive). So no reader ever touches unmapped memory, and no reader
// sees bytes change under it.
//
// Locking. Fields under "appender" are touched only with Log.appendMu held.
// mu guards the mapping state and references; it is never held while
// taking Log.appendMu or the map cache's lock. maxTsMu guards the largest
// timestamp.
type segment struct {
	baseOffset int64
	dir        string
	env        *fileEnv

	// size is the logical size of the .log: the end of the last complete
	// batch. Stored by the appender after copying a batch and its index
	// entries; loaded by readers after acquire.
	size atomic.Int64
	// nextOffset is the offset after the last batch (baseOffset if empty).
	nextOffset atomic.Int64
	// lastModifiedMs is the wall clock (ms) of the last append, or the file
	// mtime at open; retention falls back to it when no batch has a
	// timestamp.
	lastModifiedMs atomic.Int64

	index     *offsetIndex
	timeIndex *timeIndex
	txn       *txnIndex // aborted transactions whose marker is here

	maxTsMu sync.Mutex // guards the following
	// maxTimestamp is the largest batch maxTimestamp in the segment (-1 if
	// none) and offsetOfMaxTimestamp the last offset of the first batch
	// that carried it (Kafka's shallow offset of max timestamp).
	maxTimestamp         int64
	offsetOfMaxTimestamp int64

	// appender state, guarded by Log.appendMu.
	rollingTime     time.Time // wall clock of the first append; zero if empty
	bytesSinceIndex int64     // log bytes appended since the last index entry
	allocated       int64     // bytes of .log allocated on disk (active only)
	populated       int64     // mapped pages below this are present (active only; see write)
	chunk           int64     // largest fallocate growth step (active only; see growStep)

	// flushedSize is how many bytes of .log are known to be on disk; the
	// flusher starts msync there.
	flushedSize atomic.Int64
	// trimSynced: the .log's size since its last trim (deactivate) is on
	// disk. msync persists data, not a shrink of the file, so the first
	// flush after a roll fsyncs the file as Kafka's segment flush does;
	// recovery relies on it (a rolled segment with a tail lost its end).
	trimSynced atomic.Bool
	// openFile is file while the segment is active, for readers that send
	// bytes with sendfile(2) instead of from the mapping. It is cleared
	// before file is closed; a reader that loaded it keeps the descriptor
	// alive through os.File's own reference count (SyscallConn), and a
	// closed file makes it fall back to the mapped bytes.
	openFile atomic.Pointer[os.File]
	// indexChecked is set once the indexes were fully validated (at
	// recovery or on first mapping); guarded by mu.
	indexChecked bool

	mu   sync.Mutex // guards the following
	idle sync.Cond  // on mu; broadcast when refs drops to 0 or exclusive ends
	// refs counts readers using the mapping.
	refs int
	// data is the .log mapping (nil when unmapped or empty).
	data []byte
	// mapped is true while data and both index mappings are valid.
	mapped bool
	// active is true while the segment is the appender's: data is the
	// read-write mapping of capacity bytes and file is open.
	active   bool
	file     vfs.File
	capacity int64
	// retired: removed from the log; acquire fails, resources are freed at
	// the last release.
	retired bool
	// unmapWhenIdle: evicted from the mapped set while in use; unmap at the
	// last release.
	unmapWhenIdle bool
	// exclusive: the appender is truncating; new readers wait.
	exclusive bool
}

func newSegment(dir string, base int64, env *fileEnv) *segment {
	s := &segment{
		baseOffset:           base,
		dir:                  dir,
		env:                  env,
		index:                newOffsetIndex(segmentFileName(dir, base, indexSuffix), base, env),
		timeIndex:            newTimeIndex(segmentFileName(dir, base, timeIndexSuffix), base, env),
		txn:                  newTxnIndex(segmentFileName(dir, base, txnIndexSuffix), env),
		maxTimestamp:         -1,
		offsetOfMaxTimestamp: -1,
	}
	s.idle.L = &s.mu
	s.nextOffset.Store(base)
	s.trimSynced.Store(true) // as found on disk or written synced; deactivate clears it
	return s
}

func (s *segment) logPath() string { return segmentFileName(s.dir, s.baseOffset, logSuffix) }

func (s *segment) String() string { return filepath.Base(s.logPath()) }

// segmentParams are the config values a segment needs when it is created or
// activated.
type segmentParams struct {
	capacity      int64 // bytes mapped for the .log (>= segment.bytes)
	chunk         int64 // fallocate growth step of the .log
	maxIndexBytes int64
}

// createSegment creates the files of a new, empty, active segment. On error
// no file is left behind.
func createSegment(dir string, base int64, p segmentParams, env *fileEnv, now time.Time) (*segment, error) {
	s := newSegment(dir, base, env)
	for _, path := range []string{s.logPath(), s.index.path, s.timeIndex.path} {
		// A leftover empty file from an earlier failed roll is replaced.
		if err := env.fs.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("storage: remove stale %s: %w", path, err)
		}
	}
	s.lastModifiedMs.Store(now.UnixMilli())
	if err := s.activate(p); err != nil {
		s.removeFiles()
		return nil, err
	}
	if err := s.reserveLog(min(p.chunk, minPreallocate, p.capacity)); err != nil {
		s.mu.Lock()
		s.freeLocked()
		s.mu.Unlock()
		s.removeFiles()
		return nil, err
	}
	return s, nil
}

// activate maps the segment read-write for appending. The caller holds
// Log.appendMu and guarantees no reader uses the segment (it is new, or the
// appender holds it exclusive). The files hold exactly size bytes of valid
// log and trimmed indexes.
func (s *segment) activate(p segmentParams) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.freeLocked()
	f, err := s.env.fs.OpenFile(s.logPath(), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return diskError("open segment", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return diskError("stat segment", err)
	}
	size := s.size.Load()
	capacity := roundUpToPage(max(p.capacity, size, 1))
	data, err := mmapFile(f, capacity, true)
	if err != nil {
		f.Close()
		return err
	}
	idxEntries, tidxEntries, err := indexEntriesOnDisk(s)
	if err == nil {
		err = s.index.openWritable(p.maxIndexBytes, idxEntries)
	}
	if err == nil {
		err = s.timeIndex.openWritable(p.maxIndexBytes, tidxEntries)
	}
	if err != nil {
		munmap(data)
		f.Close()
		s.index.close()
		s.timeIndex.close()
		return err
	}
	s.data, s.file, s.capacity, s.mapped, s.active = data, f, capacity, true, true
	s.openFile.Store(f.OS())
	s.populated = 0
	s.allocated, s.chunk = st.Size(), max(p.chunk, 1)
	s.indexChecked = true
	return nil
}

// indexEntriesOnDisk counts the entries of the (trimmed) index files.
func indexEntriesOnDisk(s *segment) (int64, int64, error) {
	n := func(path string, size int) (int64, error) {
		st, err := s.env.fs.Stat(path)
		if errors.Is(err, os.ErrNotExist) {
			return 0, nil
		}
		if err != nil {
			return 0, diskError("stat index", err)
		}
		return st.Size() / int64(size), nil
	}
	a, err := n(s.index.path, offsetIndexEntrySize)
	if err != nil {
		return 0, 0, err
	}
	b, err := n(s.timeIndex.path, timeIndexEntrySize)
	return a, b, err
}

// deactivate ends the active state (roll or close): the final time index
// entry is added, the files are trimmed to their logical sizes and closed.
// The read-write mappings stay until the segment is unmapped: readers only
// touch bytes below size, which stay inside the trimmed files.
func (s *segment) deactivate() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.active {
		return nil
	}
	ts, off := s.maxTimestampAndOffset()
	if ts >= 0 && s.timeIndex.reserve(1) == nil {
		// The slot was kept free by the roll check (timeIndex.isFull(n+1)).
		s.timeIndex.maybeAppend(ts, off)
	}
	s.openFile.Store(nil)
	s.trimSynced.Store(false)
	err := s.file.Truncate(s.size.Load())
	err = errors.Join(err, s.index.trim(), s.timeIndex.trim(), s.file.Close())
	s.file = nil
	s.active = false
	s.allocated = 0
	if err != nil {
		return fmt.Errorf("storage: deactivate segment %s: %w", s, err)
	}
	return nil
}

// minPreallocate is the first fallocate step of a .log (see growStep).
const minPreallocate = 64 << 10

// growStep is the next fallocate step of the .log: it doubles with the
// allocated size from minPreallocate up to the chunk, so that an idle or
// small segment reserves little disk (10,000 idle partitions must not
// reserve 10,000 chunks) while a busy one soon grows a chunk at a time.
// Appender only.
func (s *segment) growStep() int64 { return min(s.chunk, max(minPreallocate, s.allocated)) }

// reserveLog makes sure disk blocks exist for n more bytes of .log.
// Appender only.
func (s *segment) reserveLog(n int64) error {
	need := s.size.Load() + n
	if need <= s.allocated {
		return nil
	}
	step := s.growStep()
	target := min(s.capacity, (need+step-1)/step*step)
	if err := s.env.allocate(s.file, s.allocated, target-s.allocated, true); err != nil {
		return err
	}
	s.allocated = target
	return nil
}

// reserve reserves everything an append of n bytes in batches batches
// needs, before anything is written: log blocks and index slots.
func (s *segment) reserve(n int64, batches int) error {
	if err := s.reserveLog(n); err != nil {
		return err
	}
	if err := s.index.reserve(int64(batches)); err != nil {
		return err
	}
	return s.timeIndex.reserve(int64(batches) + 1)
}

// writeThreshold is the append size from which write(2) beats a copy into
// the mapping. Measured here (CPU time per GiB): a 1 KiB append costs 2.5 s
// through write(2) (the syscall dominates) but 0.45 s copied into
// pre-populated pages; from 16 KiB on, write(2) wins, and by 256 KiB it
// costs a third of the copy, which takes a page fault (or a populate) per
// 4 KiB.
const writeThreshold = 8 << 10

// populateStep is how far ahead of a small append the mapping's pages are
// made present in one madvise call, at most: the step is the segment's
// size so far (at least a page), so that a partition with a few records
// holds a few pages, not a megabyte of resident, dirty zeros.
const populateStep = 1 << 20

// write puts buf at pos in the segment's file: large appends with
// write(2), small ones copied into the mapping, whose pages are populated
// ahead in bites that double up to populateStep (MADV_POPULATE_WRITE,
// Linux 5.14+; best effort). The mapping and the file share the page cache
// either way. Appender only.
func (s *segment) write(buf []byte, pos int64) error {
	end := pos + int64(len(buf))
	if len(buf) >= writeThreshold {
		if _, err := s.file.WriteAt(buf, pos); err != nil {
			return diskError("write segment "+s.String(), err)
		}
		return nil
	}
	if end > s.populated {
		from := max(s.populated, pos/pageSize*pageSize)
		ahead := min(populateStep, max(pageSize, end))
		to := min(roundUpToPage(end+ahead), s.allocated, int64(len(s.data)))
		if to > from {
			unix.Madvise(s.data[from:to], unix.MADV_POPULATE_WRITE)
			s.populated = to
		}
	}
	copy(s.data[pos:], buf)
	return nil
}

// appendedBatch describes one batch of an append.
type appendedBatch struct {
	pos          int64 // position within the appended buffer
	size         int64
	lastOffset   int64
	maxTimestamp int64
}

// append copies buf (whole batches with offsets assigned) at the end of the
// segment, adds index entries every indexInterval bytes as Kafka's
// LogSegment.append does, and then publishes the new size. The caller
// reserved space (reserve) and checked the roll conditions. Appender only.
func (s *segment) append(buf []byte, batches []appendedBatch, indexInterval int64, now time.Time) error {
	start := s.size.Load()
	if err := s.write(buf, start); err != nil {
		return err
	}
	for _, b := range batches {
		s.maybeUpdateMaxTimestamp(b.maxTimestamp, b.lastOffset)
		if s.bytesSinceIndex > indexInterval {
			s.index.append(b.lastOffset, start+b.pos)
			ts, off := s.maxTimestampAndOffset()
			s.timeIndex.maybeAppend(ts, off)
			s.bytesSinceIndex = 0
		}
		s.bytesSinceIndex += b.size
	}
	if s.rollingTime.IsZero() {
		s.rollingTime = now
	}
	s.lastModifiedMs.Store(now.UnixMilli())
	s.nextOffset.Store(batches[len(batches)-1].lastOffset + 1)
	s.size.Store(start + int64(len(buf)))
	return nil
}

func (s *segment) maybeUpdateMaxTimestamp(ts, offset int64) {
	s.maxTsMu.Lock()
	if ts > s.maxTimestamp {
		s.maxTimestamp, s.offsetOfMaxTimestamp = ts, offset
	}
	s.maxTsMu.Unlock()
}

// maxTimestampAndOffset is the largest timestamp in the segment and the
// (shallow) offset of the batch that carried it; (-1, -1) if none.
func (s *segment) maxTimestampAndOffset() (int64, int64) {
	s.maxTsMu.Lock()
	defer s.maxTsMu.Unlock()
	return s.maxTimestamp, s.offsetOfMaxTimestamp
}

func (s *segment) setMaxTimestamp(ts, offset int64) {
	s.maxTsMu.Lock()
	s.maxTimestamp, s.offsetOfMaxTimestamp = ts, offset
	s.maxTsMu.Unlock()
}

// largestTimestamp is what retention compares with retention.ms: the
// largest record timestamp, or the last modification time if the segment
// has none (Kafka LogSegment.largestTimestamp).
func (s *segment) largestTimestamp() int64 {
	if ts, _ := s.maxTimestampAndOffset(); ts >= 0 {
		return ts
	}
	return s.lastModifiedMs.Load()
}

// rollReason says why the next append needs a new segment ("" if it does
// not). n and batches describe the append, lastOffset is its last offset.
// Appender only.
func (s *segment) rollReason(cfg *LogConfig, n int64, batches int, lastOffset int64, now time.Time) string {
	size := s.size.Load()
	switch {
	case lastOffset-s.baseOffset > math.MaxInt32:
		return "relative offset overflow"
	case size == 0:
		return ""
	case size+n > cfg.SegmentBytes || size+n > s.capacity:
		return "segment.bytes"
	case s.index.isFull(int64(batches)) || s.timeIndex.isFull(int64(batches)+1):
		return "index full"
	case !s.rollingTime.IsZero() && now.Sub(s.rollingTime) > cfg.maxSegmentAge():
		return "segment.ms"
	}
	return ""
}

// acquire takes a reference for reading, mapping the segment read-only if
// it is not mapped. It returns false if the segment was retired (the caller
// reloads the segment list). newlyMapped tells the caller to register the
// mapping with the log's mapped set.
func (s *segment) acquire() (ok, newlyMapped bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.exclusive {
		s.idle.Wait()
	}
	if s.retired {
		return false, false, nil
	}
	if !s.mapped {
		if err := s.mapReadOnlyLocked(); err != nil {
			return false, false, err
		}
		newlyMapped = true
	}
	s.refs++
	return true, newlyMapped, nil
}

// mapReadOnlyLocked maps the .log (over its logical size) and both indexes.
// Must be called with s.mu held. The descriptors are closed at once.
func (s *segment) mapReadOnlyLocked() error {
	size := s.size.Load()
	if size > 0 {
		f, err := vfs.Open(s.env.fs, s.logPath())
		if err != nil {
			return diskError("open segment", err)
		}
		data, err := mmapFile(f, size, false)
		f.Close()
		if err != nil {
			return err
		}
		s.data = data
	}
	if err := s.index.openReadOnly(); err != nil {
		s.unmapLocked()
		return err
	}
	if err := s.timeIndex.openReadOnly(); err != nil {
		s.unmapLocked()
		return err
	}
	if !s.indexChecked {
		if err := s.checkOrRebuildIndexesLocked(); err != nil {
			s.unmapLocked()
			return err
		}
	}
	s.mapped = true
	return nil
}

// checkOrRebuildIndexesLocked fully validates the indexes of a segment that
// recovery only sanity-checked; if they are corrupt they are rebuilt from
// the mapped log. Must be called with s.mu held and the segment mapped.
func (s *segment) checkOrRebuildIndexesLocked() error {
	size := s.size.Load()
	err := s.index.check(size)
	if err == nil {
		err = s.timeIndex.check(s.nextOffset.Load())
	}
	if err != nil {
		s.env.logger.Warn("storage: rebuilding corrupt index", "segment", s.String(), "err", err)
		b := newIndexBuilder(s.baseOffset, s.env.indexInterval.Load())
		scanValidBatches(s.data[:size], s.baseOffset, math.MaxInt64, b)
		s.index.close()
		s.timeIndex.close()
		if err := b.write(s); err != nil {
			return err
		}
		if err := s.index.openReadOnly(); err != nil {
			return err
		}
		if err := s.timeIndex.openReadOnly(); err != nil {
			return err
		}
	}
	s.indexChecked = true
	return nil
}

// release drops a reference; the last one performs deferred work.
func (s *segment) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refs--
	if s.refs < 0 {
		panic("storage: segment reference released twice")
	}
	if s.refs > 0 {
		return
	}
	switch {
	case s.retired:
		s.freeLocked()
	case s.unmapWhenIdle && !s.active:
		s.unmapLocked()
	}
	s.idle.Broadcast()
}

// unmapLocked drops the mappings. Must be called with s.mu held and no
// references.
func (s *segment) unmapLocked() {
	munmap(s.data)
	s.data = nil
	s.index.close()
	s.timeIndex.close()
	s.mapped = false
	s.unmapWhenIdle = false
}

// freeLocked releases every resource. Must be called with s.mu held and no
// references.
func (s *segment) freeLocked() {
	if s.file != nil {
		s.openFile.Store(nil)
		s.file.Close()
		s.file = nil
	}
	s.active = false
	s.unmapLocked()
}

// evict is called when the log's mapped set drops the segment: unmap now if
// idle, else at the last release. Active segments are never unmapped.
func (s *segment) evict() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.active || s.retired || !s.mapped {
		return
	}
	if s.refs == 0 {
		s.unmapLocked()
		return
	}
	s.unmapWhenIdle = true
}

// retire removes the segment from service: acquire fails from now on,
// files are unlinked at once if del (an open mapping keeps the data alive
// for current readers), and mappings are freed at the last release.
// Appender only (Log.appendMu held).
func (s *segment) retire(del bool) error {
	var err error
	if s.isActive() {
		err = s.deactivate()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.retired = true
	if del {
		err = errors.Join(err, s.removeFiles())
	}
	if s.refs == 0 {
		s.freeLocked()
	}
	return err
}

func (s *segment) isActive() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.active
}

// removeFiles unlinks the segment's files.
func (s *segment) removeFiles() error {
	var errs []error
	for _, p := range []string{s.logPath(), s.index.path, s.timeIndex.path, s.txn.path} {
		if err := s.env.fs.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// beginExclusive waits until no reader holds a reference and keeps new
// readers out until endExclusive. Appender only.
func (s *segment) beginExclusive() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.exclusive = true
	for s.refs > 0 {
		s.idle.Wait()
	}
}

func (s *segment) endExclusive() {
	s.mu.Lock()
	s.exclusive = false
	s.idle.Broadcast()
	s.mu.Unlock()
}

// flush writes the segment back to disk up to upTo bytes of .log, and its
// indexes. The caller holds a reference (the mapping is valid).
func (s *segment) flush(upTo int64) error {
	s.mu.Lock()
	data := s.data
	s.mu.Unlock()
	upTo = min(upTo, int64(len(data)))
	from := s.flushedSize.Load()
	if err := msyncRange(s.env.fs, s.logPath(), data, min(from, upTo), upTo); err != nil {
		return fmt.Errorf("flush %s: %w", s, err)
	}
	if err := s.index.syncMapped(); err != nil {
		return err
	}
	if err := s.timeIndex.syncMapped(); err != nil {
		return err
	}
	if err := s.txn.sync(); err != nil {
		return err
	}
	if err := s.syncTrim(); err != nil {
		return err
	}
	for {
		cur := s.flushedSize.Load()
		if cur >= upTo || s.flushedSize.CompareAndSwap(cur, upTo) {
			return nil
		}
	}
}

// syncTrim fsyncs the .log of a rolled segment once, so that its trimmed
// size is on disk before any later segment's data is flushed.
func (s *segment) syncTrim() error {
	s.mu.Lock()
	active := s.active
	s.mu.Unlock()
	if active || s.trimSynced.Load() {
		return nil
	}
	f, err := s.env.fs.OpenFile(s.logPath(), os.O_RDONLY, 0)
	if err != nil {
		return diskError("open segment for sync", err)
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("storage: sync %s: %w", s, err)
	}
	s.trimSynced.Store(true)
	return nil
}

// batchAt returns the header and size of the batch at pos if a whole,
// sane batch lies in [pos, end) of data.
func batchAt(data []byte, pos, end int64) (record.BatchHeader, int64, bool) {
	if pos > end {
		return record.BatchHeader{}, 0, false
	}
	h, size, ok := record.FrameOK(data[pos:end])
	return h, int64(size), ok
}

// findBatch returns the position of the first batch whose last offset is
// >= offset, starting from the index entry for offset. The caller holds a
// reference. found is false if no such batch is in [0, size).
func (s *segment) findBatch(offset, size int64) (pos int64, h record.BatchHeader, bsize int64, found bool) {
	pos = s.index.lookup(offset).Position
	if pos >= size {
		pos = 0 // an index entry past what this reader may see; start over
	}
	for {
		h, bsize, ok := batchAt(s.data, pos, size)
		if !ok {
			return pos, record.BatchHeader{}, 0, false
		}
		if h.LastOffset() >= offset {
			return pos, h, bsize, true
		}
		pos += bsize
	}
}

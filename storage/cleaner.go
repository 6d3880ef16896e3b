package storage

import (
	"bufio"
	"errors"
	"fmt"
	"github.com/kbroker/kbroker/storage/vfs"
	"log/slog"
	"math"
	"os"
	"sort"
	"time"

	"github.com/kbroker/kbroker/record"
)

// Log compaction (cleanup.policy=compact): Kafka's LogCleaner for one log.
// doc.go states the rules; the steps are
//
//  1. plan (planCleaning): the dirty section runs from the cleaner
//     checkpoint to the first uncleanable offset, a segment boundary below
//     the HW, the active segment and min.compaction.lag.ms;
//  2. map (buildOffsetMap): key -> last offset over the dirty section;
//  3. clean (cleanGroup): every segment from the log start to the end of
//     the mapped range, in groups of at most segment.bytes, is rewritten
//     into <base>.log.cleaned keeping each key's latest record, then
//  4. swapped in (swapCleaned) under appendMu: .cleaned -> .swap (the
//     commit point), old files removed, .swap renamed into place.
//
// Steps 1-3 read segments holding one reference at a time, without
// appendMu; a truncation, a close or a change of the segment list aborts.

// CleanStats describes one cleaning of a log.
type CleanStats struct {
	// Cleaned is false when nothing was rewritten; Reason then says why.
	Cleaned bool
	Reason  string
	// FirstDirtyOffset and EndOffset bound the dirty section that was
	// mapped; EndOffset is the next cleaning's first dirty offset.
	FirstDirtyOffset int64
	EndOffset        int64
	// DirtyRatio is dirty bytes / (clean + dirty bytes) before cleaning.
	DirtyRatio float64
	// SegmentsBefore/After and BytesBefore/After describe the rewritten
	// range of the log.
	SegmentsBefore, SegmentsAfter int
	BytesBefore, BytesAfter       int64
	RecordsRead, RecordsRetained  int64
	// TombstonesRemoved counts tombstones dropped after their delete
	// horizon; KeylessRemoved records without a key (Kafka drops them).
	TombstonesRemoved int64
	KeylessRemoved    int64
	// EmptyBatches counts header-only batches kept for producer state.
	EmptyBatches int64
	// AbortedBatchesRemoved counts data batches of aborted transactions
	// dropped; MarkersRemoved transaction markers dropped after their
	// delete horizon (cleaner_txn.go).
	AbortedBatchesRemoved int64
	MarkersRemoved        int64
	Keys                  int // distinct keys in the offset map
	Duration              time.Duration
}

// errCleaningAborted: the log changed under a cleaning (truncation, close,
// retention) or the cleaner was stopped. Nothing was swapped for the group
// that saw it.
var errCleaningAborted = errors.New("storage: cleaning aborted")

// Suffixes of a cleaning's files (Kafka's).
const (
	cleanedSuffix = ".cleaned"
	swapSuffix    = ".swap"
)

// offsetMapEntryOverhead is what a key of the offset map costs beyond its
// bytes (map bucket, string header, offset), for the dedupe buffer budget.
const offsetMapEntryOverhead = 64

// Compact cleans the log now if it is compacted and has a dirty section:
// every cleanable record is rewritten keeping the latest per key, whatever
// min.cleanable.dirty.ratio and max.compaction.lag.ms say (they decide when
// the Manager's cleaner runs, not what may be cleaned). Appends continue
// meanwhile; the swap takes the append lock briefly. A cleaning aborted by
// a concurrent truncation, retention or close returns Reason "aborted" and
// no error (groups swapped before the abort stay swapped).
func (l *Log) Compact(now time.Time) (CleanStats, error) {
	return l.compact(now, nil, false)
}

// compact plans and runs a cleaning. With onlyIfDue the log is cleaned only
// if Kafka's cleaner would pick it (dirty ratio, max.compaction.lag.ms).
// abort, if set, stops the cleaning (Manager.Close).
func (l *Log) compact(now time.Time, abort func() bool, onlyIfDue bool) (CleanStats, error) {
	l.cleanMu.Lock()
	defer l.cleanMu.Unlock()
	if onlyIfDue && l.uncleanable {
		return CleanStats{Reason: "uncleanable after an earlier error"}, nil
	}
	p, err := l.planCleaning(now)
	if err != nil {
		return CleanStats{}, err
	}
	st := CleanStats{FirstDirtyOffset: p.firstDirty, EndOffset: p.firstDirty, DirtyRatio: p.ratio()}
	switch {
	case !p.cfg.compacted():
		st.Reason = "not compacted"
	case p.dirtyBytes == 0:
		st.Reason = "no cleanable dirty segment"
	case onlyIfDue && !p.due():
		st.Reason = "below min.cleanable.dirty.ratio"
	}
	if st.Reason != "" {
		return st, nil
	}
	c := &cleaner{l: l, p: p, now: now.UnixMilli(), abort: abort, stats: st,
		m: offsetMap{offsets: map[string]int64{}, latest: -1, limit: l.opts.CleanerDedupeBufferBytes}}
	defer c.comp.Close()
	started := l.now()
	err = c.run()
	c.stats.Duration = l.now().Sub(started)
	switch {
	case errors.Is(err, errCleaningAborted):
		c.stats.Reason = "aborted"
		l.logger.Info("storage: cleaning aborted", "segments_swapped", c.stats.SegmentsBefore)
		return c.stats, nil
	case err != nil:
		// Corrupt data would fail every pass: skip the log until reopened
		// (Kafka marks the partition uncleanable).
		l.uncleanable = errors.Is(err, record.ErrCorruptBatch)
		l.logger.Error("storage: cleaning failed", "err", err, "uncleanable", l.uncleanable)
		return c.stats, err
	}
	l.uncleanable = false
	logCleaned(l.logger, &c.stats)
	return c.stats, nil
}

func logCleaned(logger *slog.Logger, st *CleanStats) {
	logger.Info("storage: cleaned log", "first_dirty_offset", st.FirstDirtyOffset, "end_offset", st.EndOffset,
		"dirty_ratio", fmt.Sprintf("%.3f", st.DirtyRatio), "bytes_before", st.BytesBefore, "bytes_after", st.BytesAfter,
		"segments_before", st.SegmentsBefore, "segments_after", st.SegmentsAfter,
		"records_read", st.RecordsRead, "records_retained", st.RecordsRetained,
		"tombstones_removed", st.TombstonesRemoved, "keys", st.Keys, "took", st.Duration)
}

// cleanPlan is what a cleaning works from: a snapshot of the log taken
// under appendMu, and the dirty section computed from it.
type cleanPlan struct {
	segs []*segment // the segment list when planned
	gen  int64      // l.truncations then
	cfg  LogConfig
	// firstDirty is the cleaner checkpoint (clamped into the log);
	// segs[dirtyFrom:dirtyTo] hold the dirty section and
	// segs[dirtyTo].baseOffset is the first uncleanable offset.
	firstDirty         int64
	dirtyFrom, dirtyTo int
	cleanBytes         int64 // segments below firstDirty
	dirtyBytes         int64 // segs[dirtyFrom:dirtyTo]
	// needNow: a dirty batch is older than max.compaction.lag.ms.
	needNow bool
	// producers maps each active producer to its last data batch (or
	// marker): that batch is kept, if only as an empty header.
	producers map[int64]lastProducerBatch
}

func (p *cleanPlan) ratio() float64 {
	if total := p.cleanBytes + p.dirtyBytes; total > 0 {
		return float64(p.dirtyBytes) / float64(total)
	}
	return 0
}

// due is Kafka's grabFilthiestCompactedLog condition.
func (p *cleanPlan) due() bool {
	return (p.needNow && p.dirtyBytes > 0) || p.ratio() > p.cfg.MinCleanableDirtyRatio
}

// planCleaning computes the dirty section as Kafka's
// LogCleanerManager.cleanableOffsets: from the checkpoint (or the log start
// offset) to the start of the segment holding the first uncleanable offset,
// min(last stable offset, active segment base, first dirty segment newer
// than min.compaction.lag.ms).
func (l *Log) planCleaning(now time.Time) (*cleanPlan, error) {
	l.appendMu.Lock()
	if err := l.checkWritableLocked(); err != nil {
		l.appendMu.Unlock()
		return nil, err
	}
	p := &cleanPlan{segs: l.segmentList(), gen: l.truncations.Load(), cfg: l.cfg}
	lso, leo := l.logStartOffset.Load(), l.logEndOffset.Load()
	stable := l.LastStableOffset()
	l.appendMu.Unlock()

	p.firstDirty = l.cleanerOffset.Load()
	if p.firstDirty < lso || p.firstDirty > leo {
		p.firstDirty = lso
	}
	segs, last := p.segs, len(p.segs)-1
	p.dirtyFrom = segmentFor(segs, p.firstDirty)
	uncleanable := min(stable, segs[last].baseOffset)
	if lag := p.cfg.MinCompactionLagMs; lag > 0 {
		for _, s := range segs[p.dirtyFrom:last] {
			if s.largestTimestamp() > now.UnixMilli()-lag {
				uncleanable = min(uncleanable, s.baseOffset)
				break
			}
		}
	}
	p.dirtyTo = max(segmentFor(segs, max(uncleanable, p.firstDirty)), p.dirtyFrom)
	for i, s := range segs {
		if s.baseOffset < p.firstDirty {
			p.cleanBytes += s.size.Load()
		}
		if i >= p.dirtyFrom && i < p.dirtyTo {
			p.dirtyBytes += s.size.Load()
		}
	}
	if lag := p.cfg.MaxCompactionLagMs; lag < math.MaxInt64 {
		p.needNow = earliestFirstBatchTimestamp(segs[p.dirtyFrom:last]) < now.UnixMilli()-lag
	}
	p.producers = map[int64]lastProducerBatch{}
	for _, e := range l.producers.entries() {
		p.producers[e.ProducerID] = lastProducerBatch{lastDataOffset: e.LastOffset(), epoch: e.Epoch}
	}
	return p, nil
}

// earliestFirstBatchTimestamp is the smallest positive maxTimestamp of the
// first batch of each segment (Kafka's maxCompactionDelay input), or
// math.MaxInt64. The headers are read with pread: no mapping needed.
func earliestFirstBatchTimestamp(segs []*segment) int64 {
	earliest := int64(math.MaxInt64)
	var hdr [record.BatchHeaderSize]byte
	for _, s := range segs {
		if s.size.Load() < record.BatchHeaderSize || readAt(s.env.fs, s.logPath(), hdr[:], 0) != nil {
			continue
		}
		if h, _ := record.ParseBatchHeader(hdr[:]); h.MaxTimestamp > 0 {
			earliest = min(earliest, h.MaxTimestamp)
		}
	}
	return earliest
}

// offsetMap is Kafka's OffsetMap: key -> offset of its latest record in
// the mapped range, bounded by a byte budget. latest is the last offset
// mapped; records after it are kept as they are.
type offsetMap struct {
	offsets      map[string]int64
	latest       int64
	bytes, limit int64
}

// put maps key to offset; false means the budget is exhausted.
func (m *offsetMap) put(key []byte, offset int64) bool {
	if _, ok := m.offsets[string(key)]; !ok {
		cost := int64(len(key)) + offsetMapEntryOverhead
		if m.bytes+cost > m.limit {
			return false
		}
		m.bytes += cost
	}
	m.offsets[string(key)] = offset
	m.latest = offset
	return true
}

// cleaner runs one cleaning of a log.
type cleaner struct {
	l     *Log
	p     *cleanPlan
	now   int64 // ms
	abort func() bool
	m     offsetMap
	comp  record.Compressor
	stats CleanStats
	// txns follows the transactions of the current pass (the offset map's,
	// then each group's).
	txns *txnCleaning
}

func (c *cleaner) aborted() bool {
	return c.l.isClosed.Load() || c.l.truncations.Load() != c.p.gen || (c.abort != nil && c.abort())
}

// run maps the dirty section, then cleans and swaps group after group. The
// checkpoint moves only when every group was swapped.
func (c *cleaner) run() error {
	full, err := c.buildOffsetMap()
	if err != nil {
		return err
	}
	c.stats.Keys = len(c.m.offsets)
	segs, end := c.p.segs, c.p.segs[c.p.dirtyTo].baseOffset
	if full {
		if c.m.latest < c.p.firstDirty {
			return fmt.Errorf("storage: cleaner dedupe buffer of %d bytes holds no key", c.m.limit)
		}
		end = c.m.latest + 1
	}
	n := sort.Search(c.p.dirtyTo, func(i int) bool { return segs[i].baseOffset >= end })
	for _, g := range groupSegments(segs[:n], c.p.cfg.SegmentBytes, segs[n].baseOffset) {
		if err := c.cleanGroup(g); err != nil {
			return err
		}
		c.stats.Cleaned = true
	}
	c.stats.EndOffset = end
	c.l.appendMu.Lock()
	defer c.l.appendMu.Unlock()
	if c.l.truncations.Load() != c.p.gen {
		return errCleaningAborted // the truncation lowered the checkpoint
	}
	c.l.cleanerOffset.Store(end)
	c.l.checkpointMoved()
	return nil
}

// withSegment calls fn with the bytes of s, holding a reference.
func (c *cleaner) withSegment(s *segment, fn func(data []byte) error) error {
	ok, err := c.l.acquireSegment(s, false)
	if err != nil {
		return err
	}
	if !ok {
		return errCleaningAborted // retired: retention or truncation
	}
	defer s.release()
	return fn(s.data[:s.size.Load()])
}

// buildOffsetMap maps every keyed record of the dirty section (Kafka's
// buildOffsetMap). full reports that the budget ran out: the map then
// covers offsets up to m.latest.
func (c *cleaner) buildOffsetMap() (bool, error) {
	c.txns = c.l.abortedInRange(c.p.segs[c.p.dirtyFrom].baseOffset, c.p.segs[c.p.dirtyTo].baseOffset)
	for _, s := range c.p.segs[c.p.dirtyFrom:c.p.dirtyTo] {
		full := false
		err := c.withSegment(s, func(data []byte) error {
			var err error
			it := record.VerifiedBatches(data)
			for !full && it.Next() {
				if c.aborted() {
					return errCleaningAborted
				}
				if full, err = c.mapBatch(it.Header(), it.Batch()); err != nil {
					return err
				}
			}
			return segmentDataError(s, it.Err())
		})
		if err != nil || full {
			return full, err
		}
	}
	return false, nil
}

func (c *cleaner) mapBatch(h record.BatchHeader, batch []byte) (full bool, err error) {
	if h.LastOffset() < c.p.firstDirty {
		return false, nil
	}
	if h.IsControl() {
		marker, err := parseMarker(h, batch)
		if err != nil {
			return false, err
		}
		c.txns.controlBatch(h, marker)
	} else if !c.txns.dataBatch(h) { // markers and aborted data carry no key that counts
		it, err := record.Records(batch)
		if err != nil {
			return false, err
		}
		for it.Next() {
			if key := it.Record().Key; key != nil && it.Offset() >= c.p.firstDirty && !c.m.put(key, it.Offset()) {
				return true, nil
			}
		}
		if err := it.Err(); err != nil {
			return false, err
		}
	}
	c.m.latest = max(c.m.latest, h.LastOffset())
	return false, nil
}

// segmentDataError classifies a batch walk error of an inactive segment,
// whose bytes were all validated: any error is corruption.
func segmentDataError(s *segment, err error) error {
	if err == nil || errors.Is(err, record.ErrCorruptBatch) {
		return err
	}
	return fmt.Errorf("%w: segment %s: %w", record.ErrCorruptBatch, s, err)
}

// groupSegments splits segs into runs to be cleaned into one segment each
// (Kafka's groupSegmentsBySize): at most maxSize bytes of input, and
// offsets spanning at most MaxInt32 so relative offsets fit the index.
// nextBase is the base offset after segs.
func groupSegments(segs []*segment, maxSize, nextBase int64) [][]*segment {
	var groups [][]*segment
	for len(segs) > 0 {
		n, size := 1, segs[0].size.Load()
		for ; n < len(segs); n++ {
			candidate := segs[n].size.Load()
			last := nextBase - 1
			if n+1 < len(segs) {
				last = segs[n+1].baseOffset - 1
			}
			if size+candidate > maxSize || (candidate > 0 && last-segs[0].baseOffset > math.MaxInt32) {
				break
			}
			size += candidate
		}
		groups = append(groups, segs[:n:n])
		segs = segs[n:]
	}
	return groups
}

// cleanGroup writes the cleaned form of group into .cleaned files and
// swaps it in.
func (c *cleaner) cleanGroup(group []*segment) error {
	w, err := newCleanedWriter(c.l.dir, group[0].baseOffset, c.l.env)
	if err != nil {
		return err
	}
	defer w.discard()
	c.txns = c.l.abortedInRange(group[0].baseOffset, group[len(group)-1].nextOffset.Load())
	var before int64
	for _, s := range group {
		before += s.size.Load()
		if err := c.withSegment(s, func(data []byte) error { return c.cleanInto(w, s, data) }); err != nil {
			return err
		}
	}
	seg, err := w.finish(group, c.txns.kept)
	if err != nil {
		return err
	}
	c.l.runCleanerHook("cleaned")
	if err := c.l.swapCleaned(group, seg, c.p.gen); err != nil {
		return err
	}
	w.committed = true
	c.stats.SegmentsBefore += len(group)
	c.stats.SegmentsAfter++
	c.stats.BytesBefore += before
	c.stats.BytesAfter += seg.size.Load()
	return nil
}

// cleanInto writes the retained form of every batch of one segment.
func (c *cleaner) cleanInto(w *cleanedWriter, s *segment, data []byte) error {
	it := record.VerifiedBatches(data)
	for it.Next() {
		if c.aborted() {
			return errCleaningAborted
		}
		out, err := c.filterBatch(it.Header(), it.Batch())
		if err != nil {
			return err
		}
		if out != nil {
			if err := w.write(out); err != nil {
				return err
			}
		}
	}
	return segmentDataError(s, it.Err())
}

// filterBatch returns what is kept of one batch (nil: nothing), following
// Kafka's MemoryRecords.filterTo with the cleaner's batch retention:
//   - control batches (transaction markers) and batches of aborted
//     transactions follow cleaner_txn.go's rules;
//   - a batch whose records are all kept, and that needs no new delete
//     horizon, is kept byte for byte;
//   - otherwise the kept records are re-encoded into a batch with the
//     original attributes, codec and header fields; a batch with kept
//     tombstones and no delete horizon gets now + delete.retention.ms;
//   - a batch left without records is dropped, unless it is the last batch
//     of an active producer: an empty header keeps its sequence and epoch.
func (c *cleaner) filterBatch(h record.BatchHeader, batch []byte) ([]byte, error) {
	if h.IsControl() {
		return c.filterControl(h, batch)
	}
	if c.txns.dataBatch(h) { // of an aborted transaction
		if c.p.keepsProducerState(h) {
			c.stats.EmptyBatches++
			return record.EmptyBatch(h).Bytes(), nil
		}
		c.stats.AbortedBatchesRemoved++
		return nil, nil
	}
	recs, err := batchRecords(batch)
	if err != nil {
		return nil, err
	}
	kept, tombstones := recs[:0:0], false
	for i := range recs {
		if c.retain(h, &recs[i]) {
			kept = append(kept, recs[i])
			tombstones = tombstones || recs[i].Value == nil
		}
	}
	c.stats.RecordsRead += int64(len(recs))
	c.stats.RecordsRetained += int64(len(kept))
	horizon, hasHorizon := h.DeleteHorizon()
	switch {
	case len(kept) > 0 && len(kept) == len(recs) && (hasHorizon || !tombstones):
		return batch, nil
	case len(kept) > 0:
		if !hasHorizon && tombstones {
			horizon = c.now + min(c.p.cfg.DeleteRetentionMs, math.MaxInt64-c.now)
		} else if !hasHorizon {
			horizon = -1
		}
		return rebuildBatch(&c.comp, batch, h, kept, horizon)
	case c.p.keepsProducerState(h):
		c.stats.EmptyBatches++
		return record.EmptyBatch(h).Bytes(), nil
	}
	return nil, nil
}

// retain is Kafka's Cleaner.shouldRetainRecord: records after the mapped
// range are kept; keyless records are dropped; a record is kept if it is
// the latest of its key and holds a value, or is a tombstone whose batch
// has no delete horizon yet or one still in the future.
func (c *cleaner) retain(h record.BatchHeader, r *record.Record) bool {
	off := h.BaseOffset + int64(r.OffsetDelta)
	switch {
	case off > c.m.latest:
		return true
	case r.Key == nil:
		c.stats.KeylessRemoved++
		return false
	}
	if latest, ok := c.m.offsets[string(r.Key)]; ok && off < latest {
		return false
	}
	if r.Value != nil {
		return true
	}
	if horizon, ok := h.DeleteHorizon(); ok && c.now >= horizon {
		c.stats.TombstonesRemoved++
		return false
	}
	return true
}

// cleanedWriter writes <base>.log.cleaned and builds its indexes with the
// append path's rules.
type cleanedWriter struct {
	dir       string
	base      int64
	env       *fileEnv
	f         vfs.File
	bw        *bufio.Writer
	pos       int64
	index     *indexBuilder
	committed bool // swapped in: the files are no longer ours to remove
}

func newCleanedWriter(dir string, base int64, env *fileEnv) (*cleanedWriter, error) {
	w := &cleanedWriter{dir: dir, base: base, env: env, index: newIndexBuilder(base, env.indexInterval.Load())}
	w.removeFiles() // leftovers of a failed cleaning
	f, err := w.env.fs.OpenFile(w.path(logSuffix), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, diskError("create cleaned segment", err)
	}
	w.f, w.bw = f, bufio.NewWriterSize(f, 1<<20)
	return w, nil
}

func (w *cleanedWriter) path(suffix string) string {
	return segmentFileName(w.dir, w.base, suffix) + cleanedSuffix
}

func (w *cleanedWriter) removeFiles() {
	for _, suf := range []string{logSuffix, indexSuffix, timeIndexSuffix, txnIndexSuffix} {
		w.env.fs.Remove(w.path(suf))
	}
}

func (w *cleanedWriter) write(batch []byte) error {
	if w.pos+int64(len(batch)) > math.MaxInt32 {
		return fmt.Errorf("storage: cleaned segment %d would exceed 2 GiB", w.base)
	}
	h, _ := record.ParseBatchHeader(batch)
	w.index.add(h, w.pos, int64(len(batch)))
	if _, err := w.bw.Write(batch); err != nil {
		return diskError("write cleaned segment", err)
	}
	w.pos += int64(len(batch))
	return nil
}

// finish makes the .cleaned files durable, gives the log the last
// modification time of group's last segment (as Kafka, so time retention
// and segment ages are unchanged) and returns the segment that will
// replace group.
func (w *cleanedWriter) finish(group []*segment, aborted []AbortedTxn) (*segment, error) {
	err := w.bw.Flush()
	if err == nil {
		err = w.f.Sync()
	}
	err = errors.Join(err, w.f.Close())
	w.f = nil
	if err != nil {
		return nil, diskError("write cleaned segment", err)
	}
	last := group[len(group)-1]
	mtime := time.UnixMilli(last.lastModifiedMs.Load())
	if err := w.env.fs.Chtimes(w.path(logSuffix), mtime, mtime); err != nil {
		return nil, fmt.Errorf("storage: set cleaned segment time: %w", err)
	}
	w.index.maybeTimeEntry()
	if err := writeFileSynced(w.env.fs, w.path(indexSuffix), w.index.index); err != nil {
		return nil, err
	}
	if err := writeFileSynced(w.env.fs, w.path(timeIndexSuffix), w.index.tindex); err != nil {
		return nil, err
	}
	if err := writeCleanedTxnIndex(w.env.fs, w.path(txnIndexSuffix), aborted); err != nil {
		return nil, err
	}
	s := newSegment(w.dir, w.base, w.env)
	s.txn.entries, s.txn.written, s.txn.synced = aborted, len(aborted), len(aborted)
	s.size.Store(w.pos)
	s.flushedSize.Store(w.pos)
	s.nextOffset.Store(last.nextOffset.Load())
	s.lastModifiedMs.Store(mtime.UnixMilli())
	s.setMaxTimestamp(w.index.maxTs, w.index.maxTsAt)
	s.indexChecked = true
	return s, nil
}

// discard removes the .cleaned files of a cleaning that did not commit.
func (w *cleanedWriter) discard() {
	if w.f != nil {
		w.f.Close()
	}
	if !w.committed {
		w.removeFiles()
	}
}

// writeFileSynced writes data to path and fsyncs it.
func writeFileSynced(fsys vfs.FS, path string, data []byte) error {
	f, err := fsys.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return diskError("create "+path, err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return diskError("write "+path, err)
}

func (l *Log) runCleanerHook(step string) {
	if l.cleanerHook != nil {
		l.cleanerHook(step)
	}
}

// swapCleaned replaces group, still consecutive inactive segments of the
// log, by s, whose files are <base>.*.cleaned (Kafka's replaceSegments):
//
//  1. <base>.log.cleaned -> .log.swap: the commit point (recovery completes
//     the swap from here on); the index files follow; fsync the directory;
//  2. the files of group[1:] are deleted; fsync the directory;
//  3. the .swap files are renamed over <base>.log and its indexes;
//  4. the old segments are retired and the new list published.
//
// Readers never open a path being replaced: every old segment stays mapped
// (a reference is held) until it is retired, and s is published only once
// its files are in place. Readers holding old segments keep their bytes.
// A failure after the commit point fails the log: recovery at the next
// open completes the swap.
func (l *Log) swapCleaned(group []*segment, s *segment, gen int64) error {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	segs := l.segmentList()
	at := sort.Search(len(segs), func(i int) bool { return segs[i].baseOffset >= group[0].baseOffset })
	if l.closed || l.failedLocked() != nil || l.truncations.Load() != gen || at+len(group) >= len(segs) {
		return errCleaningAborted
	}
	for i, old := range group {
		if segs[at+i] != old {
			return errCleaningAborted
		}
	}
	for i, old := range group {
		// Cannot wait: exclusive is only set with appendMu held.
		ok, err := l.acquireSegment(old, false)
		if err != nil || !ok {
			for _, held := range group[:i] {
				held.release()
			}
			return errors.Join(err, errCleaningAborted)
		}
	}
	defer func() {
		for _, old := range group {
			old.release()
		}
	}()
	cleaned := func(suffix string) string { return segmentFileName(l.dir, s.baseOffset, suffix) + cleanedSuffix }
	if err := l.env.fs.Rename(cleaned(logSuffix), segmentFileName(l.dir, s.baseOffset, logSuffix)+swapSuffix); err != nil {
		return fmt.Errorf("storage: commit cleaned segment: %w", err)
	}
	if err := l.replaceWithSwapLocked(group, s); err != nil {
		l.failed = err
		l.logger.Error("storage: compaction swap failed; log refuses writes until reopened (recovery completes the swap)", "err", err)
		return fmt.Errorf("%w: %w", ErrLogFailed, err)
	}
	next := make([]*segment, 0, len(segs)-len(group)+1)
	next = append(append(append(next, segs[:at]...), s), segs[at+len(group):]...)
	if err := l.retireLocked(group, false, "compaction"); err != nil {
		l.logger.Warn("storage: releasing compacted segments", "err", err)
	}
	l.setSegments(next)
	return nil
}

// replaceWithSwapLocked performs steps 1 (after the commit) to 3 of
// swapCleaned. Must be called with appendMu held.
func (l *Log) replaceWithSwapLocked(group []*segment, s *segment) error {
	name := func(suffix string) string { return segmentFileName(l.dir, s.baseOffset, suffix) }
	suffixes, err := swappedIndexes(l.env.fs, name)
	if err != nil {
		return err
	}
	for _, suf := range suffixes {
		if err := l.env.fs.Rename(name(suf)+cleanedSuffix, name(suf)+swapSuffix); err != nil {
			return fmt.Errorf("storage: rename cleaned index: %w", err)
		}
	}
	if err := syncDir(l.env.fs, l.dir); err != nil {
		return err
	}
	l.runCleanerHook("swap")
	for _, old := range group[1:] {
		if err := old.removeFiles(); err != nil {
			return fmt.Errorf("storage: delete compacted segment: %w", err)
		}
	}
	if err := syncDir(l.env.fs, l.dir); err != nil {
		return err
	}
	l.runCleanerHook("deleted")
	for i, suf := range append([]string{logSuffix}, suffixes...) {
		if err := l.env.fs.Rename(name(suf)+swapSuffix, name(suf)); err != nil {
			return fmt.Errorf("storage: rename swap file: %w", err)
		}
		if i == 0 {
			l.runCleanerHook("renamed")
		}
	}
	return syncDir(l.env.fs, l.dir)
}

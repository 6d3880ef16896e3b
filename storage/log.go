package storage

import (
	"errors"
	"fmt"
	"github.com/kbroker/kbroker/storage/vfs"
	"log/slog"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kbroker/kbroker/record"
)

// LogState is what the manager's checkpoint files know about a log.
type LogState struct {
	RecoveryPoint  int64 // offsets below it were flushed: recovery starts here
	LogStartOffset int64
	HighWatermark  int64
	CleanShutdown  bool // the log dir had a clean-shutdown marker
	// CleanerCheckpoint is where the cleaner's dirty section starts
	// (cleaner-offset-checkpoint); 0 or out of [log start, log end] means
	// the log start offset.
	CleanerCheckpoint int64
}

// LogOptions inject the environment. Zero values take defaults.
type LogOptions struct {
	// Now is the clock for LogAppendTime, segment.ms, retention and flush.ms
	// (default time.Now). Logic never calls time.Now itself.
	Now func() time.Time
	// Logger receives recovery progress, rolls, deletions and failures
	// (default slog.Default()).
	Logger *slog.Logger
	// FS is the file system of every file of the log (default
	// vfs.Default; tests pass a vfs.CrashFS).
	FS vfs.FS
	// Fallocate, when set, replaces File.Allocate for reserving disk
	// blocks. Tests replace it to inject ENOSPC or EOPNOTSUPP.
	Fallocate func(f *os.File, offset, length int64) error
	// MaxMappedSegments is how many inactive segments of the log stay
	// mapped for reading (least recently used are unmapped; default 4).
	MaxMappedSegments int
	// syncer, set by a Manager, is the log dir's group commit for durable
	// logs (flush.messages=1); nil flushes inline.
	syncer *groupSyncer
	// mapCache, set by a Manager, bounds the mapped inactive segments of
	// all its logs together; nil gives the log a cache of its own.
	mapCache *mapCache
	// recoveryPointLowered, set by a Manager, writes the recovery point
	// checkpoint at once after a truncation lowered the log's recovery
	// point (Kafka's LogManager.truncateTo does): offsets at and past the
	// new end are written again, unflushed, and a stale checkpoint would
	// tell recovery after a crash that they were on disk.
	recoveryPointLowered func() error
	// counters, set by a Manager, count the log's flushes.
	counters *syncCounters
	// checkpointDirty, set by a Manager, is set whenever the log's
	// recovery point, HW, log start or cleaner offset moves: the manager's
	// checkpoint pass has something to write (WriteCheckpoints).
	checkpointDirty *atomic.Bool
	// RecoveryProgressEvery logs recovery progress every that many
	// segments (default 1000).
	RecoveryProgressEvery int
	// CleanerDedupeBufferBytes bounds the cleaner's offset map
	// (log.cleaner.dedupe.buffer.size, default 128 MiB): each key costs its
	// length plus offsetMapEntryOverhead bytes.
	CleanerDedupeBufferBytes int64
}

func (o LogOptions) withDefaults() LogOptions {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.FS == nil {
		o.FS = vfs.Default
	}
	if o.MaxMappedSegments <= 0 {
		o.MaxMappedSegments = 4
	}
	if o.RecoveryProgressEvery <= 0 {
		o.RecoveryProgressEvery = 1000
	}
	if o.CleanerDedupeBufferBytes <= 0 {
		o.CleanerDedupeBufferBytes = 128 << 20
	}
	return o
}

// AppendOptions modify a leader append.
type AppendOptions struct {
	// LogAppendTime stamps every batch with the broker's time
	// (message.timestamp.type=LogAppendTime).
	LogAppendTime bool
	// Now is that time; zero means the log's clock.
	Now time.Time
	// TxnVerification is the guard of the transaction verification that
	// allows a transactional batch to open a transaction
	// (BeginTxnVerification); zero: none.
	TxnVerification VerificationGuard
	// Coordinator marks the group coordinator's transactional offset
	// commits (Kafka's AppendOrigin.COORDINATOR): their producer epoch is
	// checked, their sequence (none) is not.
	Coordinator bool
}

// AppendInfo describes a successful append.
type AppendInfo struct {
	FirstOffset int64
	LastOffset  int64
	// MaxTimestamp is the largest batch maxTimestamp and
	// OffsetOfMaxTimestamp the last offset of the first batch carrying it.
	MaxTimestamp         int64
	OffsetOfMaxTimestamp int64
	LogAppendTime        int64 // -1 for CreateTime
	NumRecords           int64
	Bytes                int64
	LogStartOffset       int64
}

// SegmentInfo describes one segment.
type SegmentInfo struct {
	BaseOffset   int64
	NextOffset   int64
	Size         int64
	MaxTimestamp int64 // -1 if no batch has a timestamp
	LastModified time.Time
}

// Log is the log of one partition: an ordered list of segments in a
// directory, with its offsets, leader epoch cache and producer state.
//
// Concurrency. All methods are safe for concurrent use. Mutations (appends,
// truncation, retention, config, close) serialise on appendMu. Readers
// (Read, OffsetForTimestamp, offsets getters) take no log lock: they load
// the published atomics and the immutable segment list, then hold a
// segment reference while touching its mapping. Publication order on
// append: segment bytes and index entries, segment size, then (for a roll)
// the segment list, then the log end offset; a reader that loaded the log
// end offset therefore finds every batch below it complete.
//
// Compaction (cleaner.go) reads and rewrites inactive segments without
// appendMu and swaps the result in under it; cleanMu makes cleanings of one
// log sequential.
//
// Lock order: cleanMu -> flushMu -> appendMu -> segment.mu ->
// {segment.maxTsMu, producerStateManager.mu, EpochCache.mu}; the map
// cache's lock is taken alone.
type Log struct {
	dir    string
	opts   LogOptions
	env    *fileEnv
	logger *slog.Logger
	epochs *EpochCache

	// flushMu serialises Flush; the msyncs run without appendMu.
	flushMu sync.Mutex

	appendMu sync.Mutex // the append lock; guards the following
	cfg      LogConfig
	closed   bool
	// failed is sticky: set when a flush fails, after which the state of
	// the page cache is unknown.
	failed error
	// dirFailure is set, without the lock, when the log dir went offline
	// (fail); it refuses writes like failed.
	dirFailure        atomic.Pointer[error]
	unflushedMessages int64
	lastFlush         time.Time
	// rollFlushPending: a segment was rolled and not flushed yet (Kafka
	// flushes rolled segments; the manager's loop does it here).
	rollFlushPending bool
	// dirDirty: files were created or removed since the last dir fsync.
	dirDirty bool
	// recoveredEpochs: epochs met in batches recovered at open, assigned
	// to the epoch cache once it is loaded.
	recoveredEpochs []EpochEntry
	// durable mirrors cfg.FlushMessages == 1 for lock-free readers.
	durable atomic.Bool
	// onFlushed is called after each group commit round that flushed the
	// log (the partition moves its HW); nil: none.
	onFlushed atomic.Pointer[func()]
	// onLogStart is called after each move of the log start offset
	// (SetLogStartListener).
	onLogStart atomic.Pointer[func()]
	// truncations counts truncations, so that a flush racing with one does
	// not advance the recovery point over rewritten offsets, and a cleaning
	// racing with one aborts. Written with appendMu held.
	truncations atomic.Int64
	producers   *producerStateManager

	// Published for lock-free readers; written with appendMu held.
	segments       atomic.Pointer[[]*segment] // immutable, sorted by base offset; last is active
	logEndOffset   atomic.Int64
	logStartOffset atomic.Int64
	highWatermark  atomic.Int64
	recoveryPoint  atomic.Int64
	isClosed       atomic.Bool

	// cleanMu serialises cleanings (Compact); it guards the following.
	cleanMu sync.Mutex
	// uncleanable: a cleaning found corrupt data; the background cleaner
	// skips the log until it is reopened (Kafka's uncleanable partitions).
	uncleanable bool
	// cleanerHook, set by tests, is called at each step of a cleaning's
	// swap ("cleaned", "swap", "deleted", "renamed") to see the files a
	// crash would leave.
	cleanerHook func(step string)

	// cleanerOffset is the first dirty offset: the cleaner's checkpoint.
	// Stored by the cleaner and lowered by truncation (with appendMu held).
	cleanerOffset atomic.Int64

	// maps bounds the inactive segments with a read mapping (at most
	// opts.MaxMappedSegments of this log, and the shared total).
	maps *logMaps
}

// OpenLog opens (recovering if needed) or creates the log in dir.
func OpenLog(dir string, cfg LogConfig, st LogState, opts LogOptions) (*Log, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	if err := mkdirDurable(opts.FS, dir); err != nil {
		return nil, err
	}
	l := &Log{
		dir:       dir,
		opts:      opts,
		logger:    opts.Logger.With("log", dir),
		cfg:       cfg,
		lastFlush: opts.Now(),
	}
	l.env = &fileEnv{fallocate: opts.Fallocate, logger: l.logger}
	l.env.fs = gatedFS{FS: opts.FS, off: &l.env.syncsDeferred}
	l.producers = newProducerStateManager(l.env.fs, dir)
	if opts.mapCache == nil {
		opts.mapCache = newMapCache(opts.MaxMappedSegments, opts.MaxMappedSegments)
	}
	l.maps = opts.mapCache.forLog()
	l.env.indexInterval.Store(int64(cfg.IndexIntervalBytes))
	l.durable.Store(cfg.FlushMessages == 1)
	l.appendMu.Lock()
	err := l.loadLocked(st)
	l.appendMu.Unlock()
	if err != nil {
		for _, s := range l.segmentList() {
			s.retire(false)
		}
		return nil, fmt.Errorf("storage: open log %s: %w", dir, err)
	}
	if err := l.flushIfDurable(); err != nil {
		l.Close()
		return nil, fmt.Errorf("storage: open log %s: %w", dir, err)
	}
	return l, nil
}

// flushIfDurable flushes a durable log (flush.messages=1) whose recovery
// point is below its log end: after an unclean shutdown the recovered tail
// (or, when the topic just became durable, everything not yet flushed) is
// on disk only once flushed, and a durable leader counts nothing above
// DurableEnd for the high watermark, so without this flush the HW would
// wait for the next append to move (and never move without one).
func (l *Log) flushIfDurable() error {
	if !l.durable.Load() || l.recoveryPoint.Load() >= l.logEndOffset.Load() {
		return nil
	}
	return l.Flush()
}

func (l *Log) now() time.Time { return l.opts.Now() }

// segmentList is the current immutable segment list.
func (l *Log) segmentList() []*segment {
	if p := l.segments.Load(); p != nil {
		return *p
	}
	return nil
}

func (l *Log) setSegments(segs []*segment) { l.segments.Store(&segs) }

// activeLocked is the last segment. Must be called with appendMu held.
func (l *Log) activeLocked() *segment {
	segs := l.segmentList()
	return segs[len(segs)-1]
}

// Dir is the partition directory.
func (l *Log) Dir() string { return l.dir }

// LogEndOffset is the offset the next batch will get (LEO).
func (l *Log) LogEndOffset() int64 { return l.logEndOffset.Load() }

// LogStartOffset is the first offset that can be read.
func (l *Log) LogStartOffset() int64 { return l.logStartOffset.Load() }

// HighWatermark is the value last set by replication (clamped to the log).
func (l *Log) HighWatermark() int64 { return l.highWatermark.Load() }

// RecoveryPoint: every offset below it is on disk.
func (l *Log) RecoveryPoint() int64 { return l.recoveryPoint.Load() }

// EpochCache is the partition's leader epoch cache.
func (l *Log) EpochCache() *EpochCache { return l.epochs }

// SetHighWatermark stores the HW, clamped to [LogStartOffset,
// LogEndOffset] like Kafka's updateHighWatermark, and returns the stored
// value. It takes no lock (replication calls it on the fetch path);
// truncation clamps it again. Retention never deletes at or beyond it.
func (l *Log) SetHighWatermark(hw int64) int64 {
	hw = max(min(hw, l.logEndOffset.Load()), l.logStartOffset.Load())
	if l.highWatermark.Swap(hw) != hw {
		l.checkpointMoved()
	}
	return hw
}

// Size is the total size of the segments in bytes.
func (l *Log) Size() int64 {
	var n int64
	for _, s := range l.segmentList() {
		n += s.size.Load()
	}
	return n
}

// NumSegments is the number of segments.
func (l *Log) NumSegments() int { return len(l.segmentList()) }

// Segments describes every segment, oldest first.
func (l *Log) Segments() []SegmentInfo {
	segs := l.segmentList()
	out := make([]SegmentInfo, len(segs))
	for i, s := range segs {
		ts, _ := s.maxTimestampAndOffset()
		out[i] = SegmentInfo{
			BaseOffset: s.baseOffset, NextOffset: s.nextOffset.Load(), Size: s.size.Load(),
			MaxTimestamp: ts, LastModified: time.UnixMilli(s.lastModifiedMs.Load()),
		}
	}
	return out
}

// Config returns the current config.
func (l *Log) Config() LogConfig {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	return l.cfg
}

// UpdateConfig applies a dynamic config change. Segment size and index
// size changes apply from the next segment; retention and flush settings at
// once.
func (l *Log) UpdateConfig(cfg LogConfig) error {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return err
	}
	l.appendMu.Lock()
	l.cfg = cfg
	l.durable.Store(cfg.FlushMessages == 1)
	l.env.indexInterval.Store(int64(cfg.IndexIntervalBytes))
	l.appendMu.Unlock()
	return l.flushIfDurable()
}

// checkWritableLocked fails appends on a closed or failed log. Must be
// called with appendMu held.
func (l *Log) checkWritableLocked() error {
	if l.closed {
		return ErrLogClosed
	}
	if err := l.failedLocked(); err != nil {
		return fmt.Errorf("%w: %w", ErrLogFailed, err)
	}
	return nil
}

// parsedAppend is an append's batches: their headers and layout, and the
// transaction markers of its control batches (markers[i] for batch i; nil
// for a data batch, and the slice is nil when no batch is a control one).
type parsedAppend struct {
	headers []record.BatchHeader
	batches []appendedBatch
	markers []*record.EndTxnMarker
	records int64
}

// add records batch (its bytes, at pos in the append).
func (p *parsedAppend) add(h record.BatchHeader, batch []byte, pos int64) error {
	p.headers = append(p.headers, h)
	p.batches = append(p.batches, appendedBatch{pos: pos, size: int64(h.Size())})
	p.records += int64(h.RecordCount)
	if !h.IsControl() {
		return nil
	}
	m, err := parseMarker(h, batch)
	if err != nil {
		return fmt.Errorf("control batch at %d: %w", h.BaseOffset, err)
	}
	if m != nil {
		p.markers = append(p.markers, make([]*record.EndTxnMarker, len(p.headers)-len(p.markers))...)
		p.markers[len(p.headers)-1] = m
	}
	return nil
}

// parseFollowerAppend frames buf into batches and checks each one's
// structure and CRC (all must be valid: nothing is written otherwise).
func parseFollowerAppend(buf []byte) (parsedAppend, error) {
	var p parsedAppend
	it := record.VerifiedBatches(buf)
	for it.Next() {
		// A control record that is not a readable marker (an error here)
		// was the leader's to refuse: take it without a transaction effect.
		_ = p.add(it.Header(), it.Batch(), int64(it.Pos()))
	}
	if err := it.Err(); err != nil {
		if errors.Is(err, record.ErrTruncatedBatch) || errors.Is(err, record.ErrZeroedBatch) {
			err = fmt.Errorf("%w: %w", record.ErrCorruptBatch, err)
		}
		return p, fmt.Errorf("batch %d: %w", len(p.headers), err)
	}
	if len(p.headers) == 0 {
		return p, fmt.Errorf("%w: no batches", record.ErrCorruptBatch)
	}
	return p, nil
}

// leaderAppend lays out batches, whose headers are final, for the write:
// one batch is written from its own bytes, several are copied together. A
// control batch must carry a transaction marker.
func leaderAppend(batches []record.Batch) ([]byte, parsedAppend, error) {
	var p parsedAppend
	if len(batches) == 1 {
		err := p.add(batches[0].Header(), batches[0].Bytes(), 0)
		return batches[0].Bytes(), p, err
	}
	var buf []byte
	for i := range batches {
		if err := p.add(batches[i].Header(), batches[i].Bytes(), int64(len(buf))); err != nil {
			return nil, p, err
		}
		buf = append(buf, batches[i].Bytes()...)
	}
	return buf, p, nil
}

// finish fills the per-batch offsets and timestamps once headers are final.
func (p *parsedAppend) finish() AppendInfo {
	info := AppendInfo{
		FirstOffset: p.headers[0].BaseOffset, LastOffset: p.headers[len(p.headers)-1].LastOffset(),
		MaxTimestamp: -1, OffsetOfMaxTimestamp: -1, LogAppendTime: -1, NumRecords: p.records,
	}
	for i, h := range p.headers {
		p.batches[i].lastOffset = h.LastOffset()
		p.batches[i].maxTimestamp = h.MaxTimestamp
		info.Bytes += p.batches[i].size
		if h.MaxTimestamp > info.MaxTimestamp {
			info.MaxTimestamp, info.OffsetOfMaxTimestamp = h.MaxTimestamp, h.LastOffset()
		}
	}
	return info
}

// AppendAsLeader appends the batches of a produce, validated by
// record.ParseProduce (or built by the record package): their headers come
// parsed and are not parsed again. It assigns offsets from the log end
// offset and stamps leaderEpoch in place (the batches are modified, even
// when the append then fails), applies LogAppendTime if asked, checks
// idempotent producer sequences, writes, and updates indexes, producer state
// and the epoch cache. Nothing is written if any step fails. A duplicate
// batch returns *DuplicateBatchError and writes nothing.
func (l *Log) AppendAsLeader(batches []record.Batch, leaderEpoch int32, opt AppendOptions) (AppendInfo, error) {
	if len(batches) == 0 {
		return AppendInfo{}, fmt.Errorf("%w: no batches", record.ErrCorruptBatch)
	}
	for i := range batches {
		if len(batches[i].Bytes()) == 0 { // the zero Batch: a caller's bug, not data
			return AppendInfo{}, fmt.Errorf("%w: batch %d was neither parsed nor built", record.ErrCorruptBatch, i)
		}
	}
	info, flush, err := l.appendAsLeader(batches, leaderEpoch, opt)
	if err == nil && flush {
		err = l.flushAfterAppend()
	}
	return info, err
}

// flushAfterAppend flushes when flush.messages is reached: inline, or for
// a durable log of a Manager, by queueing it for the dir's next group
// commit round (the caller waits with WaitDurable or counts DurableEnd).
func (l *Log) flushAfterAppend() error {
	if l.opts.syncer != nil && l.durable.Load() {
		l.opts.syncer.queue(l)
		return nil
	}
	return l.Flush()
}

// Durable reports flush.messages=1: appends count once they are on disk.
func (l *Log) Durable() bool { return l.durable.Load() }

// DurableEnd is the offset below which every batch is on disk (the
// recovery point, bounded by the log end).
func (l *Log) DurableEnd() int64 { return min(l.recoveryPoint.Load(), l.logEndOffset.Load()) }

// WaitDurable returns once every batch appended before the call is on disk
// (joining the log dir's next group commit round when there is one), or
// with the flush's error, which leaves the log failed.
func (l *Log) WaitDurable() error {
	leo := l.logEndOffset.Load()
	if l.recoveryPoint.Load() >= leo {
		return nil
	}
	if g := l.opts.syncer; g != nil {
		g.wait(g.queue(l))
	} else if err := l.Flush(); err != nil {
		return err
	}
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if err := l.checkWritableLocked(); err != nil {
		return err
	}
	if l.recoveryPoint.Load() < leo && l.truncations.Load() == 0 {
		return fmt.Errorf("%w: offsets below %d not flushed", ErrLogFailed, leo)
	}
	return nil
}

// SetFlushListener sets the function called after every group commit round
// that flushed this log (nil: none).
func (l *Log) SetFlushListener(f func()) {
	if f == nil {
		l.onFlushed.Store(nil)
		return
	}
	l.onFlushed.Store(&f)
}

// SetLogStartListener sets the function called after every move of the
// log start offset: retention, DeleteRecords, a follower following its
// leader, a full truncation (nil: none). It runs with the log's locks held
// and must take leaf locks only.
func (l *Log) SetLogStartListener(f func()) {
	if f == nil {
		l.onLogStart.Store(nil)
		return
	}
	l.onLogStart.Store(&f)
}

// checkpointMoved notes a move of an offset the manager checkpoints
// (recovery point, HW, log start, cleaner offset): a load, and a store only
// when the flag is clear, so that busy logs do not contend on it.
func (l *Log) checkpointMoved() {
	if d := l.opts.checkpointDirty; d != nil && !d.Load() {
		d.Store(true)
	}
}

// setLogStart moves the log start offset and tells the listener.
func (l *Log) setLogStart(offset int64) {
	l.logStartOffset.Store(offset)
	l.checkpointMoved()
	if f := l.onLogStart.Load(); f != nil {
		(*f)()
	}
}

func (l *Log) notifyFlushed() {
	if f := l.onFlushed.Load(); f != nil {
		(*f)()
	}
}

// fail makes the log refuse writes with err (its log dir went offline).
// It takes no lock: the dir may go offline from inside a write of this
// very log (a checkpoint written during a truncation).
func (l *Log) fail(err error) {
	l.dirFailure.CompareAndSwap(nil, &err)
}

// failedLocked is the error the log refuses writes with, nil while it
// takes them. Must be called with appendMu held.
func (l *Log) failedLocked() error {
	if l.failed != nil {
		return l.failed
	}
	if p := l.dirFailure.Load(); p != nil {
		return *p
	}
	return nil
}

func (l *Log) appendAsLeader(batches []record.Batch, leaderEpoch int32, opt AppendOptions) (AppendInfo, bool, error) {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if err := l.checkWritableLocked(); err != nil {
		return AppendInfo{}, false, err
	}
	now := l.now()
	appendTime := int64(-1)
	if opt.LogAppendTime {
		appendTime = now.UnixMilli()
		if !opt.Now.IsZero() {
			appendTime = opt.Now.UnixMilli()
		}
	}
	next := l.logEndOffset.Load()
	for i := range batches {
		b := &batches[i]
		b.SetBaseOffset(next)
		b.SetPartitionLeaderEpoch(leaderEpoch)
		if appendTime >= 0 {
			b.SetLogAppendTime(appendTime)
		}
		next = b.Header().NextOffset()
	}
	buf, p, err := leaderAppend(batches)
	if err != nil {
		return AppendInfo{}, false, err
	}
	info := p.finish()
	info.LogAppendTime = appendTime
	upd, err := l.producers.checkLeaderAppend(&p, opt.TxnVerification, opt.Coordinator)
	if err != nil {
		return AppendInfo{}, false, err
	}
	if err := l.writeLocked(buf, &p, now); err != nil {
		return AppendInfo{}, false, err
	}
	failErr := l.indexTxnsLocked(l.activeLocked(), l.producers.apply(upd))
	if leaderEpoch > l.epochs.LatestEpoch() {
		failErr = errors.Join(failErr, l.epochs.Assign(leaderEpoch, info.FirstOffset))
	}
	flush := l.publishAppendLocked(info.LastOffset+1, p.records)
	info.LogStartOffset = l.logStartOffset.Load()
	return info, flush, l.failOnEpochErrorLocked(failErr)
}

// failOnEpochErrorLocked makes a failed epoch checkpoint or transaction
// index write sticky: the batches are written but the epoch cache or the
// aborted index on disk is behind, which would break OffsetForLeaderEpoch
// or read_committed after a restart. Must be called with appendMu held.
func (l *Log) failOnEpochErrorLocked(err error) error {
	if err == nil {
		return nil
	}
	l.failed = err
	l.logger.Error("storage: leader epoch checkpoint or transaction index write failed; log refuses writes", "err", err)
	return fmt.Errorf("%w: %w", ErrLogFailed, err)
}

// AppendAsFollower appends batches fetched from the leader: offsets and
// epochs are already set. The first batch must start at the log end offset
// (a compacted log may skip offsets: at or after it), offsets must increase,
// CRCs must be valid. Producer state is updated without sequence checks and
// the epoch cache learns new epochs.
func (l *Log) AppendAsFollower(batches []byte) (AppendInfo, error) {
	p, err := parseFollowerAppend(batches)
	if err != nil {
		return AppendInfo{}, err
	}
	info, flush, err := l.appendAsFollower(batches, &p)
	if err == nil && flush {
		err = l.flushAfterAppend()
	}
	return info, err
}

func (l *Log) appendAsFollower(buf []byte, p *parsedAppend) (AppendInfo, bool, error) {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if err := l.checkWritableLocked(); err != nil {
		return AppendInfo{}, false, err
	}
	leo := l.logEndOffset.Load()
	if first := p.headers[0].BaseOffset; first < leo || (first > leo && !l.cfg.Compact) {
		return AppendInfo{}, false, fmt.Errorf("%w: first batch at offset %d, log end offset is %d", ErrInvalidOffset, first, leo)
	}
	for i := 1; i < len(p.headers); i++ {
		if prev, h := p.headers[i-1], p.headers[i]; h.BaseOffset <= prev.LastOffset() ||
			(h.BaseOffset != prev.NextOffset() && !l.cfg.Compact) {
			return AppendInfo{}, false, fmt.Errorf("%w: batch at offset %d follows batch ending at %d", ErrInvalidOffset, h.BaseOffset, prev.LastOffset())
		}
	}
	info := p.finish()
	if last := info.LastOffset; last-info.FirstOffset > 1<<31-1 {
		return AppendInfo{}, false, fmt.Errorf("%w: append spans offsets %d-%d", ErrInvalidOffset, info.FirstOffset, last)
	}
	if err := l.writeLocked(buf, p, l.now()); err != nil {
		return AppendInfo{}, false, err
	}
	epochErr := l.replicateBatchesLocked(l.activeLocked(), p)
	for _, h := range p.headers {
		if h.PartitionLeaderEpoch > l.epochs.LatestEpoch() {
			epochErr = errors.Join(epochErr, l.epochs.Assign(h.PartitionLeaderEpoch, h.BaseOffset))
		}
	}
	flush := l.publishAppendLocked(info.LastOffset+1, p.records)
	info.LogStartOffset = l.logStartOffset.Load()
	return info, flush, l.failOnEpochErrorLocked(epochErr)
}

// publishAppendLocked moves the log end offset and reports whether
// flush.messages is reached. Must be called with appendMu held.
func (l *Log) publishAppendLocked(leo, records int64) bool {
	l.logEndOffset.Store(leo)
	l.unflushedMessages += records
	return l.unflushedMessages >= l.cfg.FlushMessages
}

// writeLocked rolls if needed, reserves disk space and copies the batches.
// Nothing is written if it fails. Must be called with appendMu held.
func (l *Log) writeLocked(buf []byte, p *parsedAppend, now time.Time) error {
	n := int64(len(buf))
	if n > l.cfg.SegmentBytes {
		return fmt.Errorf("%w: %d bytes, segment.bytes is %d", ErrRecordBatchTooLarge, n, l.cfg.SegmentBytes)
	}
	seg := l.activeLocked()
	first, last := p.headers[0].BaseOffset, p.headers[len(p.headers)-1].LastOffset()
	if reason := seg.rollReason(&l.cfg, n, len(p.headers), last, now); reason != "" {
		var err error
		if seg, err = l.rollLocked(first, reason, now); err != nil {
			return err
		}
	} else if seg.size.Load() == 0 && n > seg.capacity {
		// An empty active segment mapped for a smaller segment.bytes:
		// map it again with the current size (nobody can hold bytes of it).
		seg.beginExclusive()
		err := seg.activate(l.cfg.segmentParams())
		seg.endExclusive()
		if err != nil {
			return err
		}
	}
	if err := seg.reserve(n, len(p.headers)); err != nil {
		return err
	}
	return seg.append(buf, p.batches, int64(l.cfg.IndexIntervalBytes), now)
}

// rollLocked makes a new active segment starting at base. The old one is
// trimmed and stays mapped for readers until evicted. A producer snapshot is
// taken at the new base, and the rolled segment is flushed by the next
// flush check. Must be called with appendMu held.
func (l *Log) rollLocked(base int64, reason string, now time.Time) (*segment, error) {
	old := l.activeLocked()
	seg, err := createSegment(l.dir, base, l.cfg.segmentParams(), l.env, now)
	if err != nil {
		return nil, err
	}
	if err := old.deactivate(); err != nil {
		l.logger.Error("storage: trimming rolled segment failed", "segment", old.String(), "err", err)
	}
	segs := l.segmentList()
	next := make([]*segment, len(segs), len(segs)+1)
	copy(next, segs)
	l.setSegments(append(next, seg))
	l.maps.note(old)
	if err := l.producers.writeSnapshot(l.logEndOffset.Load()); err != nil {
		l.logger.Warn("storage: producer snapshot at roll failed", "err", err)
	}
	l.rollFlushPending, l.dirDirty = true, true
	l.logger.Debug("storage: rolled segment", "base_offset", base, "reason", reason, "previous_size", old.size.Load())
	return seg, nil
}

// acquireSegment takes a read reference, registering a new mapping or
// marking an inactive one recently used. last says s is the last segment
// (the active one, never in the mapped set).
func (l *Log) acquireSegment(s *segment, last bool) (bool, error) {
	ok, newly, err := s.acquire()
	if ok {
		if newly {
			l.maps.note(s)
		} else if !last {
			l.maps.touch(s)
		}
	}
	return ok, err
}

// retireLocked removes segments from service, deleting their files if del.
// Must be called with appendMu held.
func (l *Log) retireLocked(segs []*segment, del bool, reason string) error {
	l.maps.forget(segs...)
	var errs []error
	for _, s := range segs {
		if err := s.retire(del); err != nil {
			errs = append(errs, err)
		}
		if del {
			l.logger.Info("storage: deleted segment", "segment", s.String(), "size", s.size.Load(),
				"next_offset", s.nextOffset.Load(), "reason", reason)
		}
	}
	if del && len(segs) > 0 {
		l.dirDirty = true
	}
	return errors.Join(errs...)
}

// Flush writes every appended byte to disk (msync of data and indexes up to
// the log end offset) and advances the recovery point. A failure leaves the
// log failed: appends return ErrLogFailed from then on.
func (l *Log) Flush() error {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.appendMu.Lock()
	if err := l.checkWritableLocked(); err != nil {
		l.appendMu.Unlock()
		return err
	}
	leo, segs, rp := l.logEndOffset.Load(), l.segmentList(), l.recoveryPoint.Load()
	sizes := make([]int64, len(segs))
	for i, s := range segs {
		sizes[i] = s.size.Load()
	}
	dirDirty, unflushed, truncations := l.dirDirty, l.unflushedMessages, l.truncations.Load()
	l.dirDirty, l.rollFlushPending = false, false
	l.appendMu.Unlock()

	err := l.flushSegments(segs, sizes, rp)
	if err == nil && dirDirty {
		err = syncDir(l.env.fs, l.dir)
	}

	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if err != nil {
		l.failed = err
		l.dirDirty = l.dirDirty || dirDirty
		l.logger.Error("storage: flush failed; log refuses writes", "err", err)
		return fmt.Errorf("%w: %w", ErrLogFailed, err)
	}
	l.unflushedMessages = max(l.unflushedMessages-unflushed, 0)
	l.lastFlush = l.now()
	if l.opts.counters != nil {
		l.opts.counters.logFlushes.Add(1)
	}
	if truncations == l.truncations.Load() && leo > l.recoveryPoint.Load() {
		l.recoveryPoint.Store(leo)
		l.checkpointMoved()
	}
	return nil
}

// flushSegments msyncs the segments holding offsets at or after rp.
func (l *Log) flushSegments(segs []*segment, sizes []int64, rp int64) error {
	for i, s := range segs {
		if i+1 < len(segs) && segs[i+1].baseOffset <= rp && s.trimSynced.Load() {
			continue // entirely below the recovery point
		}
		if s.flushedSize.Load() >= sizes[i] && i+1 < len(segs) && s.trimSynced.Load() {
			continue
		}
		ok, err := l.acquireSegment(s, i == len(segs)-1)
		if err != nil {
			return err
		}
		if !ok {
			continue // retired meanwhile
		}
		err = s.flush(sizes[i])
		s.release()
		if err != nil {
			return err
		}
	}
	return nil
}

// flushIfDue flushes when flush.ms elapsed with unflushed messages, or a
// rolled segment awaits its flush. The manager's loop calls it.
func (l *Log) flushIfDue(now time.Time) error {
	l.appendMu.Lock()
	due := !l.closed && l.failedLocked() == nil && (l.rollFlushPending ||
		(l.unflushedMessages > 0 && now.Sub(l.lastFlush).Milliseconds() >= l.cfg.FlushMs))
	l.appendMu.Unlock()
	if !due {
		return nil
	}
	return l.Flush()
}

// Producers lists the idempotent producers of the partition (for
// DescribeProducers).
func (l *Log) Producers() []ProducerEntry { return l.producers.entries() }

// ProducerIDExpire forgets producers whose last batch timestamp is older
// than maxAge (producer.id.expiration.ms) and returns how many.
func (l *Log) ProducerIDExpire(now time.Time, maxAge time.Duration) int {
	return l.producers.expire(now, maxAge)
}

// Close flushes, trims the active segment, writes a producer snapshot at
// the log end offset, and releases the segments; mappings are unmapped once
// readers release them. Reads and appends fail with ErrLogClosed afterwards.
func (l *Log) Close() error {
	flushErr := l.Flush()
	if errors.Is(flushErr, ErrLogClosed) {
		return nil
	}
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	l.isClosed.Store(true)
	var errs []error
	if flushErr != nil {
		errs = append(errs, flushErr)
	}
	segs := l.segmentList()
	if err := segs[len(segs)-1].deactivate(); err != nil {
		errs = append(errs, err)
	}
	// The snapshot's write syncs the dir after the trim above (and
	// retiring the segments below changes no entry): a second sync of the
	// same dir made closing a log three fsyncs instead of two, and closing
	// 10,000 of them on SIGTERM took longer than the minute a shutdown gets.
	dirSynced := false
	if l.failedLocked() == nil {
		if err := l.producers.writeSnapshot(l.logEndOffset.Load()); err != nil {
			errs = append(errs, err)
		} else {
			dirSynced = true
		}
	}
	if err := l.retireLocked(segs, false, "close"); err != nil {
		errs = append(errs, err)
	}
	if !dirSynced {
		if err := syncDir(l.env.fs, l.dir); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// closeUnsynced is Close without a single sync: what it writes (the
// flushed data, trims, the producer snapshot, renames) is durable only once
// the caller syncs the file system holding the log (Manager.Close: one
// SyncFS per log dir instead of a few fsyncs per log, which the journal
// serialises: 10,000 logs took 23-60 s to close). Until then the recovery
// point it moves must not reach a checkpoint.
func (l *Log) closeUnsynced() error {
	l.env.syncsDeferred.Store(true)
	return l.Close()
}

// Delete closes the log and removes its directory.
func (l *Log) Delete() error {
	err := l.Close()
	if rmErr := l.env.fs.RemoveAll(l.dir); rmErr != nil {
		err = errors.Join(err, fmt.Errorf("storage: remove log dir: %w", rmErr))
	}
	return err
}

// segmentFor returns the index of the segment holding offset: the last one
// whose base offset is <= offset (0 if offset is below every base).
func segmentFor(segs []*segment, offset int64) int {
	i := sort.Search(len(segs), func(i int) bool { return segs[i].baseOffset > offset }) - 1
	return max(i, 0)
}

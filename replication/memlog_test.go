package replication

import (
	"fmt"
	"slices"
	"sort"
	"sync"

	"github.com/kbroker/kbroker/record"
	"github.com/kbroker/kbroker/storage"
)

// memLog is a ReplicaLog in memory with storage.Log's contract (ReplicaLog's
// doc; log_contract_test.go checks both against the same cases), for the
// replication simulator, which runs thousands of schedules where a log on
// disk would take minutes. Its epoch history is a storage.EpochCache kept in
// memory, so the epoch semantics are the real ones.
//
// It also models what a crash keeps, with Kafka's default flush policy
// (log.flush.interval.messages and .ms unset): nothing is flushed on append;
// a segment roll flushes what came before it (the storage manager flushes a
// rolled segment soon after); a truncation is durable at once (storage
// fsyncs the cut file); the leader-epoch checkpoint is written on every
// change. crash drops every batch at or after the flushed offset and
// reopens the log the way storage.OpenLog recovers one.
//
// ListOffsets by time is answered per batch: exact for batches of one
// record, which is all the simulator writes. Idempotent producer state is
// not modelled (the simulator's batches carry no producer id).
type memLog struct {
	segmentBytes int64

	// mu guards the fields below for tests that share a log between
	// goroutines; the simulator, on one goroutine, turns it off (single),
	// which the race detector would otherwise make its largest cost.
	mu       sync.Mutex
	single   bool
	batches  []memBatch // ascending offsets
	segments []int64    // base offsets; the last is the active segment
	logStart int64
	// onLogStart is told of every log start move (SetLogStartListener).
	onLogStart func()
	leo        int64
	hw         int64
	flushed    int64 // every batch below is durable (the recovery point)
	// hwCheckpoint is the HW last written to the replication-offset
	// checkpoint, what a restart starts from.
	hwCheckpoint int64
	epochs       *storage.EpochCache
	// cuts counts the changes that remove batches (truncations, crashes),
	// so a checker knows when a prefix it compared may have changed.
	cuts int
}

type memBatch struct {
	base, last int64
	maxTS      int64
	epoch      int32
	crc        uint32
	data       []byte
}

// same reports whether b and o are the same batch: offsets, epoch, size and
// CRC (over everything after the epoch; the simulator's records are unique,
// so equal CRCs mean equal bytes), without comparing the bytes.
func (b memBatch) same(o memBatch) bool {
	return b.base == o.base && b.last == o.last && b.epoch == o.epoch && b.crc == o.crc && len(b.data) == len(o.data)
}

// memLogConfig tunes a memLog; zero values are storage's defaults.
type memLogConfig struct {
	SegmentBytes int64
}

func newMemLog(cfg memLogConfig) *memLog {
	if cfg.SegmentBytes <= 0 {
		cfg.SegmentBytes = storage.DefaultSegmentBytes
	}
	l := &memLog{segmentBytes: cfg.SegmentBytes, segments: []int64{0}}
	l.epochs = storage.NewEpochCache(l.LogEndOffset)
	return l
}

var _ ReplicaLog = (*memLog)(nil)

func (l *memLog) lock() {
	if !l.single {
		l.mu.Lock()
	}
}

func (l *memLog) unlock() {
	if !l.single {
		l.mu.Unlock()
	}
}

// The simulator's log is never durable (issue 19's flush.messages=1 is a
// storage.Log mode).
func (l *memLog) Durable() bool           { return false }
func (l *memLog) DurableEnd() int64       { return l.LogEndOffset() }
func (l *memLog) WaitDurable() error      { return nil }
func (l *memLog) SetFlushListener(func()) {}

// SetLogStartListener sets what is told of log start moves, as
// storage.Log's; called with l's lock held.
func (l *memLog) SetLogStartListener(f func()) {
	l.lock()
	defer l.unlock()
	l.onLogStart = f
}

// logStartMoved tells the listener. Must be called with l's lock held.
func (l *memLog) logStartMoved() {
	if l.onLogStart != nil {
		l.onLogStart()
	}
}

func (l *memLog) LogEndOffset() int64 {
	l.lock()
	defer l.unlock()
	return l.leo
}

func (l *memLog) LogStartOffset() int64 {
	l.lock()
	defer l.unlock()
	return l.logStart
}

func (l *memLog) HighWatermark() int64 {
	l.lock()
	defer l.unlock()
	return l.hw
}

func (l *memLog) SetHighWatermark(hw int64) int64 {
	l.lock()
	defer l.unlock()
	l.hw = max(min(hw, l.leo), l.logStart)
	return l.hw
}

func (l *memLog) EpochCache() *storage.EpochCache { return l.epochs }

func (l *memLog) Size() int64 {
	l.lock()
	defer l.unlock()
	var n int64
	for _, b := range l.batches {
		n += int64(len(b.data))
	}
	return n
}

func (l *memLog) NumSegments() int {
	l.lock()
	defer l.unlock()
	return len(l.segments)
}

// parseBatches validates every batch of buf as storage's follower append
// does.
func parseBatches(buf []byte) ([]record.BatchHeader, []int, error) {
	var hs []record.BatchHeader
	var pos []int
	it := record.Batches(buf)
	for it.Next() {
		if _, err := record.Validate(it.Batch()); err != nil {
			return nil, nil, fmt.Errorf("batch %d at byte %d: %w", len(hs), it.Pos(), err)
		}
		hs, pos = append(hs, it.Header()), append(pos, it.Pos())
	}
	if err := it.Err(); err != nil {
		return nil, nil, fmt.Errorf("%w: %w", record.ErrCorruptBatch, err)
	}
	if len(hs) == 0 {
		return nil, nil, fmt.Errorf("%w: no batches", record.ErrCorruptBatch)
	}
	return hs, append(pos, len(buf)), nil
}

// AppendAsLeader takes batches the broker parsed (record.ParseProduce), as
// storage's does.
func (l *memLog) AppendAsLeader(batches []record.Batch, leaderEpoch int32, _ storage.AppendOptions) (storage.AppendInfo, error) {
	if len(batches) == 0 {
		return storage.AppendInfo{}, fmt.Errorf("%w: no batches", record.ErrCorruptBatch)
	}
	l.lock()
	defer l.unlock()
	next := l.leo
	var buf []byte
	hs := make([]record.BatchHeader, len(batches))
	pos := make([]int, 0, len(batches)+1)
	for i := range batches {
		b := &batches[i]
		b.SetBaseOffset(next)
		b.SetPartitionLeaderEpoch(leaderEpoch)
		hs[i] = b.Header()
		pos = append(pos, len(buf))
		buf = append(buf, b.Bytes()...)
		next = hs[i].NextOffset()
	}
	return l.writeLocked(buf, hs, append(pos, len(buf)))
}

func (l *memLog) AppendAsFollower(buf []byte) (storage.AppendInfo, error) {
	hs, pos, err := parseBatches(buf)
	if err != nil {
		return storage.AppendInfo{}, err
	}
	l.lock()
	defer l.unlock()
	if first := hs[0].BaseOffset; first != l.leo {
		return storage.AppendInfo{}, fmt.Errorf("%w: first batch at offset %d, log end offset is %d", storage.ErrInvalidOffset, first, l.leo)
	}
	for i := 1; i < len(hs); i++ {
		if prev, h := hs[i-1], hs[i]; h.BaseOffset != prev.NextOffset() {
			return storage.AppendInfo{}, fmt.Errorf("%w: batch at offset %d follows batch ending at %d", storage.ErrInvalidOffset, h.BaseOffset, prev.LastOffset())
		}
	}
	return l.writeLocked(buf, hs, pos)
}

// writeLocked stores validated batches with final offsets: a roll first if
// the active segment is full (flushing what it holds), then the epoch
// cache learns new epochs. Must be called with mu held.
func (l *memLog) writeLocked(buf []byte, hs []record.BatchHeader, pos []int) (storage.AppendInfo, error) {
	if int64(len(buf)) > l.segmentBytes {
		return storage.AppendInfo{}, fmt.Errorf("%w: %d bytes, segment.bytes is %d", storage.ErrRecordBatchTooLarge, len(buf), l.segmentBytes)
	}
	if active := l.activeBytesLocked(); active > 0 && active+int64(len(buf)) > l.segmentBytes {
		l.segments = append(l.segments, hs[0].BaseOffset)
		l.flushed = l.leo
	}
	info := storage.AppendInfo{FirstOffset: hs[0].BaseOffset, LastOffset: hs[len(hs)-1].LastOffset(),
		MaxTimestamp: -1, OffsetOfMaxTimestamp: -1, LogAppendTime: -1, Bytes: int64(len(buf))}
	var epochErr error
	for i, h := range hs {
		data := slices.Clone(buf[pos[i]:pos[i+1]])
		l.batches = append(l.batches, memBatch{base: h.BaseOffset, last: h.LastOffset(), maxTS: h.MaxTimestamp,
			epoch: h.PartitionLeaderEpoch, crc: h.CRC, data: data})
		info.NumRecords += int64(h.RecordCount)
		if h.MaxTimestamp > info.MaxTimestamp {
			info.MaxTimestamp, info.OffsetOfMaxTimestamp = h.MaxTimestamp, h.LastOffset()
		}
		if h.PartitionLeaderEpoch > l.epochs.LatestEpoch() {
			epochErr = l.epochs.Assign(h.PartitionLeaderEpoch, h.BaseOffset)
		}
	}
	l.leo = info.LastOffset + 1
	info.LogStartOffset = l.logStart
	return info, epochErr
}

// activeBytesLocked is the size of the active segment.
func (l *memLog) activeBytesLocked() int64 {
	base := l.segments[len(l.segments)-1]
	var n int64
	for i := len(l.batches) - 1; i >= 0 && l.batches[i].base >= base; i-- {
		n += int64(len(l.batches[i].data))
	}
	return n
}

func (l *memLog) Read(offset int64, maxBytes int32, maxOffset int64, minOneBatch bool) (storage.ReadResult, error) {
	l.lock()
	defer l.unlock()
	if offset < l.logStart || offset > l.leo {
		return storage.ReadResult{}, fmt.Errorf("%w: offset %d, log start offset %d, log end offset %d",
			storage.ErrOffsetOutOfRange, offset, l.logStart, l.leo)
	}
	res := storage.ReadResult{Release: func() {}, FirstOffset: offset, NextOffset: offset}
	limit := min(maxOffset, l.leo)
	i := sort.Search(len(l.batches), func(i int) bool { return l.batches[i].last >= offset })
	if offset >= limit || i == len(l.batches) {
		return res, nil
	}
	// A read stops at the end of the segment holding its first batch.
	segEnd := int64(1<<63 - 1)
	if s := sort.Search(len(l.segments), func(s int) bool { return l.segments[s] > l.batches[i].base }); s < len(l.segments) {
		segEnd = l.segments[s]
	}
	var data []byte
	first, next := l.batches[i].base, l.batches[i].base
	for ; i < len(l.batches); i++ {
		b := l.batches[i]
		if b.last >= limit || b.base >= segEnd || (int64(len(data)+len(b.data)) > int64(maxBytes) && !(len(data) == 0 && minOneBatch)) {
			break
		}
		data = append(data, b.data...)
		next = b.last + 1
	}
	if len(data) > 0 {
		res.Data, res.FirstOffset, res.NextOffset = data, first, next
	}
	return res, nil
}

func (l *memLog) TruncateTo(offset int64) error {
	if offset < 0 {
		return fmt.Errorf("%w: truncate to %d", storage.ErrInvalidOffset, offset)
	}
	l.lock()
	defer l.unlock()
	if offset >= l.leo {
		return nil
	}
	if offset < l.logStart {
		return l.truncateFullyLocked(offset)
	}
	i := sort.Search(len(l.batches), func(i int) bool { return l.batches[i].last >= offset })
	newEnd := offset
	if i < len(l.batches) {
		newEnd = min(offset, l.batches[i].base)
	}
	l.batches = l.batches[:i:i]
	l.cuts++
	keep := sort.Search(len(l.segments), func(s int) bool { return l.segments[s] > offset })
	l.segments = l.segments[:max(keep, 1)]
	l.leo = newEnd
	l.hw = min(l.hw, newEnd)
	l.flushed = min(l.flushed, newEnd)
	return l.epochs.TruncateFromEnd(newEnd)
}

func (l *memLog) TruncateFullyAndStartAt(offset int64) error {
	if offset < 0 {
		return fmt.Errorf("%w: start at %d", storage.ErrInvalidOffset, offset)
	}
	l.lock()
	defer l.unlock()
	return l.truncateFullyLocked(offset)
}

func (l *memLog) truncateFullyLocked(offset int64) error {
	l.cuts++
	l.batches, l.segments = nil, []int64{offset}
	l.logStart, l.leo, l.hw, l.flushed = offset, offset, offset, offset
	l.logStartMoved()
	return l.epochs.TruncateFromEnd(0) // every entry starts at or after 0: the history empties
}

func (l *memLog) SetLogStartOffset(offset int64) error {
	l.lock()
	defer l.unlock()
	if offset <= l.logStart {
		return nil
	}
	if offset > l.hw {
		return fmt.Errorf("%w: log start offset %d beyond high watermark %d", storage.ErrOffsetOutOfRange, offset, l.hw)
	}
	l.logStart = offset
	l.logStartMoved()
	n := 0
	for n < len(l.segments)-1 && l.segments[n+1] <= offset {
		n++
	}
	l.segments = l.segments[n:]
	keep := sort.Search(len(l.batches), func(i int) bool { return l.batches[i].base >= l.segments[0] })
	l.batches = l.batches[keep:]
	l.cuts++
	return l.epochs.TruncateFromStart(offset)
}

func (l *memLog) MaxTimestamp() (int64, int64) {
	l.lock()
	defer l.unlock()
	ts, off := int64(-1), int64(-1)
	for _, b := range l.batches {
		if b.last >= l.logStart && b.maxTS > ts {
			ts, off = b.maxTS, b.base
		}
	}
	return ts, off
}

func (l *memLog) OffsetForTimestamp(ts int64) (int64, int64, bool) {
	l.lock()
	defer l.unlock()
	for _, b := range l.batches {
		if b.last >= l.logStart && b.maxTS >= ts {
			return max(b.base, l.logStart), b.maxTS, true
		}
	}
	return -1, -1, false
}

// flush makes everything appended durable (Log.Flush).
func (l *memLog) flush() {
	l.lock()
	l.flushed = l.leo
	l.unlock()
}

// checkpointHW writes the HW checkpoint (the storage manager's periodic
// replication-offset-checkpoint).
func (l *memLog) checkpointHW() {
	l.lock()
	l.hwCheckpoint = l.hw
	l.unlock()
}

// crash loses everything not flushed and reopens the log as storage.OpenLog
// would after an unclean shutdown: the log ends at its last durable batch,
// the HW is the checkpointed one clamped into the log, and the epoch
// history is cut to the log.
func (l *memLog) crash() error {
	l.lock()
	defer l.unlock()
	i := sort.Search(len(l.batches), func(i int) bool { return l.batches[i].last >= l.flushed })
	l.batches = l.batches[:i:i]
	l.cuts++
	l.leo = l.logStart
	if i > 0 {
		l.leo = max(l.batches[i-1].last+1, l.logStart)
	}
	keep := sort.Search(len(l.segments), func(s int) bool { return l.segments[s] > l.leo })
	l.segments = l.segments[:max(keep, 1)]
	l.hw = max(min(l.hwCheckpoint, l.leo), l.logStart)
	// The restart's first checkpoint writes the recovered HW back (so a
	// second crash soon after does not revive a checkpoint from before).
	l.hwCheckpoint = l.hw
	l.flushed = l.leo
	if err := l.epochs.TruncateFromEnd(l.leo); err != nil {
		return err
	}
	return l.epochs.TruncateFromStart(l.logStart)
}

// batchesFrom returns the batches whose last offset is in [from, end),
// the log's own slice (see batchesBelow).
func (l *memLog) batchesFrom(from, end int64) []memBatch {
	bs := l.batchesBelow(end)
	i := sort.Search(len(bs), func(i int) bool { return bs[i].last >= from })
	return bs[i:]
}

// batchesBelow returns the batches whose last offset is below end. The
// slice is the log's own, valid until the log next changes: for the
// simulator's single goroutine only.
func (l *memLog) batchesBelow(end int64) []memBatch {
	l.lock()
	defer l.unlock()
	i := sort.Search(len(l.batches), func(i int) bool { return l.batches[i].last >= end })
	return l.batches[:i:i]
}

// The simulator's producers are not transactional: the LSO is the HW and
// nothing is ever aborted.
func (l *memLog) LastStableOffset() int64                                           { return l.HighWatermark() }
func (l *memLog) AbortedTransactions(from, upTo int64) []storage.AbortedTxn         { return nil }
func (l *memLog) BeginTxnVerification(int64, int16, bool) storage.VerificationGuard { return 0 }

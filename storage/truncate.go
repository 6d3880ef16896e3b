package storage

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// TruncateTo drops every batch at or after offset (follower truncation to
// the divergence point): later segments are deleted, the segment holding
// offset is cut (after waiting for its readers), producer state is rebuilt,
// the epoch cache is truncated from the end and HW and recovery point are
// clamped. A batch containing offset is dropped whole; the log end offset
// becomes offset (or that batch's base offset if offset was inside it).
// offset >= log end offset is a no-op; offset below the log start offset
// truncates fully and restarts the log there.
func (l *Log) TruncateTo(offset int64) error {
	if offset < 0 {
		return fmt.Errorf("%w: truncate to %d", ErrInvalidOffset, offset)
	}
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if err := l.checkWritableLocked(); err != nil {
		return err
	}
	if offset >= l.logEndOffset.Load() {
		return nil
	}
	if offset < l.logStartOffset.Load() {
		return l.truncateFullyLocked(offset)
	}
	// Readers that load the new end from now on stop before the cut.
	l.logEndOffset.Store(offset)
	l.truncations.Add(1) // a running cleaning sees it and lets go of the segment
	segs := l.segmentList()
	keep := segmentFor(segs, offset) + 1
	// The cut below syncs the target segment, which makes its kept
	// batches durable: the segments before it must be on disk first, or a
	// power loss could keep the later offsets and lose earlier ones (a
	// rolled segment whose flush had not come yet), a hole (the power-loss
	// journal suite found it).
	if err := l.flushBefore(segs[:keep-1]); err != nil {
		l.failed = err
		return err
	}
	// Newest first: a crash (kill -9 is enough) between two unlinks then
	// leaves a shorter log, never one with a hole where an earlier segment
	// went and a later one stayed (the power-loss journal suite found it).
	delErr := l.retireLocked(newestFirst(segs[keep:]), true, "truncation")
	if keep < len(segs) && delErr == nil {
		// The deleted segments must stay deleted before anything is
		// appended at their offsets: a power cut that brought them back
		// would leave a gap and a diverged history after it (the crash
		// suite found it).
		delErr = syncDir(l.env.fs, l.dir)
	}
	target := segs[keep-1]
	newEnd, err := l.truncateSegmentLocked(target, offset)
	l.setSegments(segs[:keep:keep])
	if err != nil {
		// The segment state is unknown; refuse further writes.
		l.failed = err
		return errors.Join(err, delErr)
	}
	l.logEndOffset.Store(newEnd)
	l.highWatermark.Store(min(l.highWatermark.Load(), newEnd))
	rpErr := l.lowerRecoveryPointLocked(newEnd)
	l.cleanerOffset.Store(min(l.cleanerOffset.Load(), newEnd))
	l.checkpointMoved() // the HW and cleaner offset may have moved
	l.dirDirty = true
	err = errors.Join(delErr, rpErr, target.txn.truncateTo(newEnd), l.epochs.TruncateFromEnd(newEnd), l.rebuildProducerStateLocked(newEnd, newEnd))
	l.logger.Info("storage: truncated log", "offset", offset, "log_end_offset", newEnd)
	return err
}

// lowerRecoveryPointLocked sets the recovery point to at most rp and, if
// it moved down, has the checkpoint written before anything is appended
// again (LogOptions.recoveryPointLowered; the power-loss journal suite
// found recovery trusting a stale checkpoint over unflushed rewritten
// offsets). A failed write fails the log. Must be called with appendMu
// held.
func (l *Log) lowerRecoveryPointLocked(rp int64) error {
	if rp >= l.recoveryPoint.Load() {
		return nil
	}
	l.recoveryPoint.Store(rp)
	l.checkpointMoved()
	if l.opts.recoveryPointLowered == nil {
		return nil
	}
	if err := l.opts.recoveryPointLowered(); err != nil {
		l.failed = err
		return fmt.Errorf("storage: recovery point checkpoint after truncation: %w", err)
	}
	return nil
}

// flushBefore flushes segs (the segments before a truncation's target)
// up to their ends. Must be called with appendMu held.
func (l *Log) flushBefore(segs []*segment) error {
	sizes := make([]int64, len(segs))
	for i, s := range segs {
		sizes[i] = s.size.Load()
	}
	if err := l.flushSegments(segs, sizes, l.recoveryPoint.Load()); err != nil {
		return fmt.Errorf("storage: flush before truncation: %w", err)
	}
	return nil
}

// truncateSegmentLocked cuts s at offset, making it the active segment, and
// returns the new log end offset. Must be called with appendMu held.
func (l *Log) truncateSegmentLocked(s *segment, offset int64) (int64, error) {
	l.maps.forget(s)
	s.beginExclusive()
	defer s.endExclusive()
	if !s.isActive() {
		if err := s.activate(l.cfg.segmentParams()); err != nil {
			return 0, err
		}
	}
	return s.truncateTo(offset)
}

// truncateTo drops the batches of s whose last offset is >= offset. The
// caller holds s exclusive and s is active. It returns the new next offset.
func (s *segment) truncateTo(offset int64) (int64, error) {
	size := s.size.Load()
	pos, h, _, found := s.findBatch(offset, size)
	if !found {
		return offset, nil // offset is after the last batch (a gap)
	}
	newEnd := min(offset, h.BaseOffset)
	s.index.truncateTo(newEnd)
	s.timeIndex.truncateTo(newEnd)
	// Shrink the file so that a crash cannot bring the dropped batches back.
	if err := s.file.Truncate(pos); err != nil {
		return 0, fmt.Errorf("storage: truncate %s: %w", s, err)
	}
	if err := s.file.Sync(); err != nil {
		return 0, fmt.Errorf("storage: sync %s: %w", s, err)
	}
	s.allocated = pos
	s.size.Store(pos)
	s.nextOffset.Store(max(newEnd, s.baseOffset))
	s.flushedSize.Store(min(s.flushedSize.Load(), pos))
	last := s.index.lastEntry()
	s.bytesSinceIndex = pos - last.Position
	if pos == 0 {
		s.rollingTime = time.Time{}
	}
	s.recomputeMaxTimestamp(last.Position, pos)
	return newEnd, nil
}

// recomputeMaxTimestamp sets the largest timestamp after a truncation: the
// time index keeps the maximum up to its last entry, the batches after
// position from (the last offset index entry) are scanned.
func (s *segment) recomputeMaxTimestamp(from, size int64) {
	te := s.timeIndex.lastEntry()
	maxTs, at := te.Timestamp, te.Offset
	if te.Timestamp < 0 {
		at = -1
	}
	for pos := from; ; {
		h, bsize, ok := batchAt(s.data, pos, size)
		if !ok {
			break
		}
		if h.MaxTimestamp > maxTs {
			maxTs, at = h.MaxTimestamp, h.LastOffset()
		}
		pos += bsize
	}
	s.setMaxTimestamp(maxTs, at)
}

// TruncateFullyAndStartAt deletes every segment and restarts the log empty
// at offset (a follower far behind the leader's log start offset).
func (l *Log) TruncateFullyAndStartAt(offset int64) error {
	if offset < 0 {
		return fmt.Errorf("%w: start at %d", ErrInvalidOffset, offset)
	}
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if err := l.checkWritableLocked(); err != nil {
		return err
	}
	return l.truncateFullyLocked(offset)
}

// truncateFullyLocked implements TruncateFullyAndStartAt. Must be called
// with appendMu held.
func (l *Log) truncateFullyLocked(offset int64) error {
	l.truncations.Add(1)
	l.logEndOffset.Store(offset)
	l.setLogStart(offset)
	l.cleanerOffset.Store(min(l.cleanerOffset.Load(), offset))
	delErr := l.retireLocked(l.segmentList(), true, "truncate fully")
	s, err := createSegment(l.dir, offset, l.cfg.segmentParams(), l.env, l.now())
	if err != nil {
		l.failed = err // no active segment: the log cannot take writes
		return errors.Join(err, delErr)
	}
	l.setSegments([]*segment{s})
	l.highWatermark.Store(offset)
	rpErr := l.lowerRecoveryPointLocked(offset)
	l.recoveryPoint.Store(offset)
	l.checkpointMoved()
	l.producers.reset()
	l.producers.removeSnapshotsAfter(-1)
	l.dirDirty = true
	l.logger.Info("storage: truncated log fully", "start_offset", offset)
	return errors.Join(delErr, rpErr, l.epochs.clear())
}

// SetLogStartOffset moves the log start offset forward (DeleteRecords, or
// a follower following its leader). Segments entirely below it are
// deleted; reads below it fail with ErrOffsetOutOfRange. It cannot pass the
// high watermark. A lower offset is a no-op.
func (l *Log) SetLogStartOffset(offset int64) error {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if err := l.checkWritableLocked(); err != nil {
		return err
	}
	if offset <= l.logStartOffset.Load() {
		return nil
	}
	if hw := l.highWatermark.Load(); offset > hw {
		return fmt.Errorf("%w: log start offset %d beyond high watermark %d", ErrOffsetOutOfRange, offset, hw)
	}
	l.setLogStart(offset)
	segs := l.segmentList()
	n := 0
	for n < len(segs)-1 && segs[n+1].baseOffset <= offset {
		n++
	}
	err := l.retireLocked(segs[:n], true, "log start offset")
	l.setSegments(segs[n:])
	l.producers.truncateHead(offset)
	return errors.Join(err, l.epochs.TruncateFromStart(offset))
}

// newestFirst returns segs in reverse order, as a new slice.
func newestFirst(segs []*segment) []*segment {
	out := slices.Clone(segs)
	slices.Reverse(out)
	return out
}

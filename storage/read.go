package storage

import (
	"fmt"
	"os"
	"runtime"
	"sync/atomic"

	"github.com/kbroker/kbroker/record"
)

// ReadResult is the answer of Log.Read.
type ReadResult struct {
	// Data holds whole batches: a slice of the segment mapping, valid until
	// Release is called. It must not be written to.
	Data []byte
	// Release drops the segment reference that keeps Data valid. It must be
	// called exactly once per result (extra calls are ignored); until then
	// retention, truncation and close of that segment wait or defer.
	Release func()
	// FirstOffset is the base offset of the first batch in Data (which may
	// be below the requested offset: a fetch in the middle of a batch gets
	// the whole batch). NextOffset is the offset after the last batch: where
	// to read next. Both equal the requested offset when Data is empty.
	FirstOffset int64
	NextOffset  int64
	// File, when set, is the open segment file whose bytes at FileOffset
	// are Data, so that a writer may send them with sendfile(2) instead
	// of copying them from the mapping (Kafka's transferTo). Only the
	// active segment has one. It may be closed by a roll at any time:
	// use it through SyscallConn, and fall back to Data when it is.
	// Pages handed to sendfile stay referenced by the socket until the
	// peer takes them, past Release: a truncation and rewrite of the
	// segment in between (a leader demoted and truncated) can change bytes
	// still queued. Kafka's transferTo has the same window; followers and
	// clients check each batch's CRC, which catches it.
	File       *os.File
	FileOffset int64
}

func noRelease() {}

// readRef makes Release idempotent.
type readRef struct {
	seg  *segment
	done atomic.Bool
}

func (r *readRef) release() {
	if r.done.CompareAndSwap(false, true) {
		r.seg.release()
	}
}

// Read returns whole batches starting with the one containing offset, up to
// maxBytes, and only batches whose last offset is below maxOffset (the HW
// for consumers, the log end offset for followers). With minOneBatch the
// first batch is returned even if larger than maxBytes (KIP-74). An offset
// below the log start or above the log end is ErrOffsetOutOfRange; at the
// log end or at/after maxOffset the result is empty. A read stops at a
// segment boundary, so callers loop on NextOffset. It never returns a torn
// batch.
func (l *Log) Read(offset int64, maxBytes int32, maxOffset int64, minOneBatch bool) (ReadResult, error) {
	empty := ReadResult{Release: noRelease, FirstOffset: offset, NextOffset: offset}
	for {
		if l.isClosed.Load() {
			return ReadResult{}, ErrLogClosed
		}
		leo, lso := l.logEndOffset.Load(), l.logStartOffset.Load()
		if offset < lso || offset > leo {
			return ReadResult{}, fmt.Errorf("%w: offset %d, log start offset %d, log end offset %d",
				ErrOffsetOutOfRange, offset, lso, leo)
		}
		limit := min(maxOffset, leo)
		if offset >= limit {
			return empty, nil
		}
		res, ok, err := l.readSegments(offset, maxBytes, limit, minOneBatch)
		if err != nil || ok {
			return res, err
		}
		// A segment was retired under us: reload the offsets and list once
		// the mutation that retired it has published the new list.
		runtime.Gosched()
	}
}

// readSegments reads from the segment holding offset, moving to the next
// segment when offset lies after the last batch of one (a gap). ok is false
// when a segment was retired meanwhile.
func (l *Log) readSegments(offset int64, maxBytes int32, limit int64, minOneBatch bool) (ReadResult, bool, error) {
	segs := l.segmentList()
	for i := segmentFor(segs, offset); i < len(segs); i++ {
		s := segs[i]
		ok, err := l.acquireSegment(s, i == len(segs)-1)
		if err != nil || !ok {
			return ReadResult{}, false, err
		}
		res, found := s.read(offset, int64(maxBytes), limit, minOneBatch)
		if len(res.Data) > 0 {
			r := &readRef{seg: s}
			res.Release = r.release
			return res, true, nil
		}
		s.release()
		if found {
			break // a batch is there but excluded by maxBytes or limit
		}
	}
	return ReadResult{Release: noRelease, FirstOffset: offset, NextOffset: offset}, true, nil
}

// read collects whole batches from the first one whose last offset is >=
// offset. found reports that such a batch exists in the segment (even if it
// was excluded by limit or maxBytes). The caller holds a reference.
func (s *segment) read(offset, maxBytes, limit int64, minOneBatch bool) (ReadResult, bool) {
	size := s.size.Load()
	start, h, bsize, found := s.findBatch(offset, size)
	if !found {
		return ReadResult{}, false
	}
	res := ReadResult{FirstOffset: h.BaseOffset, NextOffset: h.BaseOffset}
	end := start
	for {
		if h.LastOffset() >= limit {
			break
		}
		if end-start+bsize > maxBytes && !(end == start && minOneBatch) {
			break
		}
		end += bsize
		res.NextOffset = h.NextOffset()
		var ok bool
		if h, bsize, ok = batchAt(s.data, end, size); !ok {
			break
		}
	}
	if end > start {
		res.Data = s.data[start:end:end]
		res.File, res.FileOffset = s.openFile.Load(), start
	}
	return res, true
}

// OffsetForTimestamp returns the offset and timestamp of the first record
// whose timestamp is >= ts (ListOffsets by timestamp), at or after the log
// start offset. It uses the time index to find a position, then decodes
// the records of the first batch whose maxTimestamp reaches ts
// (decompressing it if needed), as Kafka's LogSegment.findOffsetByTimestamp.
func (l *Log) OffsetForTimestamp(ts int64) (offset, timestamp int64, ok bool) {
	lso := l.logStartOffset.Load()
	segs := l.segmentList()
	for i, s := range segs {
		if s.nextOffset.Load() <= lso || s.largestTimestamp() < ts {
			continue
		}
		held, err := l.acquireSegment(s, i == len(segs)-1)
		if err != nil || !held {
			continue
		}
		rec, found := s.findOffsetByTimestamp(ts, lso)
		s.release()
		if found {
			return rec.Offset, rec.Timestamp, true
		}
	}
	return -1, -1, false
}

// findOffsetByTimestamp searches one segment. The caller holds a reference.
func (s *segment) findOffsetByTimestamp(ts, startingOffset int64) (recordInfo, bool) {
	size := s.size.Load()
	te := s.timeIndex.lookup(ts)
	pos := s.index.lookup(max(te.Offset, startingOffset)).Position
	if pos >= size {
		pos = 0
	}
	for {
		h, bsize, ok := batchAt(s.data, pos, size)
		if !ok {
			return recordInfo{}, false
		}
		if h.MaxTimestamp >= ts && h.LastOffset() >= startingOffset {
			if rec, found := firstRecord(s.data[pos:pos+bsize], func(r recordInfo) bool {
				return r.Timestamp >= ts && r.Offset >= startingOffset
			}); found {
				return rec, true
			}
		}
		pos += bsize
	}
}

// recordInfo is what ListOffsets needs of a record.
type recordInfo struct {
	Offset    int64
	Timestamp int64
}

// firstRecord decodes batch and returns its first record matching pred. A
// batch whose records do not decode has no match.
func firstRecord(batch []byte, pred func(recordInfo) bool) (recordInfo, bool) {
	it, err := record.Records(batch)
	if err != nil {
		return recordInfo{}, false
	}
	for it.Next() {
		if r := (recordInfo{Offset: it.Offset(), Timestamp: it.Timestamp()}); pred(r) {
			return r, true
		}
	}
	return recordInfo{}, false
}

// MaxTimestamp returns the largest record timestamp of the log and the
// offset of the first record carrying it (ListOffsets -3, KIP-734), or
// (-1, -1) for a log without timestamps.
func (l *Log) MaxTimestamp() (ts int64, offset int64) {
	lso := l.logStartOffset.Load()
	segs := l.segmentList()
	best := -1
	var bestTs int64 = -1
	for i, s := range segs {
		if t, _ := s.maxTimestampAndOffset(); t > bestTs && s.nextOffset.Load() > lso {
			best, bestTs = i, t
		}
	}
	if best < 0 {
		return -1, -1
	}
	s := segs[best]
	held, err := l.acquireSegment(s, best == len(segs)-1)
	if err != nil || !held {
		return -1, -1
	}
	defer s.release()
	return s.locateMaxTimestamp()
}

// locateMaxTimestamp locates the record with the segment's largest
// timestamp. The caller holds a reference.
func (s *segment) locateMaxTimestamp() (int64, int64) {
	maxTs, shallow := s.maxTimestampAndOffset()
	size := s.size.Load()
	pos := s.index.lookup(shallow).Position
	if pos >= size {
		pos = 0
	}
	for {
		h, bsize, ok := batchAt(s.data, pos, size)
		if !ok {
			return -1, -1
		}
		if h.MaxTimestamp == maxTs {
			rec, found := firstRecord(s.data[pos:pos+bsize], func(r recordInfo) bool { return r.Timestamp == maxTs })
			if !found {
				return -1, -1
			}
			return maxTs, rec.Offset
		}
		pos += bsize
	}
}

package storage

import (
	"errors"
	"time"
)

// DeleteOldSegments applies retention and returns how many segments it
// deleted. Like Kafka, oldest segments go first and the walk stops at the
// first one that must stay:
//   - retention.ms: a segment whose largest timestamp (its last modification
//     time if it has none) is more than retention.ms before now;
//   - retention.bytes: while the log minus the oldest segment is still at
//     least retention.bytes;
//   - segments entirely below the log start offset (after DeleteRecords).
//
// The active segment is never deleted, nor a segment holding the high
// watermark or anything beyond it (deletable only if the next segment
// starts at or below HW). A compacted log skips the time and size rules
// unless CompactDelete is set. The log start offset moves to the first
// remaining segment.
func (l *Log) DeleteOldSegments(now time.Time) (int, error) {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if l.closed {
		return 0, ErrLogClosed
	}
	segs := l.segmentList()
	hw, lso := l.highWatermark.Load(), l.logStartOffset.Load()
	deletable := func(i int) bool { return i < len(segs)-1 && segs[i+1].baseOffset <= hw }
	n := 0
	reason := ""
	if l.cfg.retentionApplies() {
		if l.cfg.RetentionMs >= 0 {
			for deletable(n) && now.UnixMilli()-segs[n].largestTimestamp() > l.cfg.RetentionMs {
				n, reason = n+1, "retention.ms"
			}
		}
		if l.cfg.RetentionBytes >= 0 {
			var size int64
			for _, s := range segs[n:] {
				size += s.size.Load()
			}
			for diff := size - l.cfg.RetentionBytes; deletable(n) && diff-segs[n].size.Load() >= 0; n++ {
				diff -= segs[n].size.Load()
				reason = "retention.bytes"
			}
		}
	}
	for n < len(segs)-1 && segs[n+1].baseOffset <= lso {
		n, reason = n+1, "log start offset"
	}
	if n == 0 {
		return 0, nil
	}
	err := l.retireLocked(segs[:n], true, reason)
	l.setSegments(segs[n:])
	if newStart := segs[n].baseOffset; newStart > lso {
		l.setLogStart(newStart)
		l.producers.truncateHead(newStart)
		err = errors.Join(err, l.epochs.TruncateFromStart(newStart))
	}
	return n, err
}

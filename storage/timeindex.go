package storage

import (
	"encoding/binary"
	"fmt"
	"sort"
)

// timeIndex maps timestamps to offsets: each entry is (timestamp, relative
// offset) where timestamp is the largest batch maxTimestamp seen so far in
// the segment and the offset is the last offset of the batch that carried it.
// Entries are added with the offset index entries (every IndexIntervalBytes)
// when the largest timestamp has grown, and once more when the segment
// becomes inactive, exactly like Kafka's TimeIndex.maybeAppend. Timestamps
// are therefore strictly increasing and the last entry holds the segment's
// largest timestamp.
type timeIndex struct {
	indexFile
	baseOffset int64
}

// timeEntry is a decoded time index entry.
type timeEntry struct {
	Timestamp int64
	Offset    int64
}

func newTimeIndex(path string, baseOffset int64, env *fileEnv) *timeIndex {
	return &timeIndex{indexFile: indexFile{path: path, entrySize: timeIndexEntrySize, env: env}, baseOffset: baseOffset}
}

func (x *timeIndex) at(i int64) timeEntry {
	e := x.entry(i)
	return timeEntry{
		Timestamp: int64(binary.BigEndian.Uint64(e)),
		Offset:    x.baseOffset + int64(binary.BigEndian.Uint32(e[8:])),
	}
}

// lastEntry is the last entry, or (-1, baseOffset) when empty.
func (x *timeIndex) lastEntry() timeEntry {
	if n := x.count.Load(); n > 0 {
		return x.at(n - 1)
	}
	return timeEntry{Timestamp: -1, Offset: x.baseOffset}
}

// lookup returns the entry with the largest timestamp <= ts, or
// (-1, baseOffset) when every entry is newer.
func (x *timeIndex) lookup(ts int64) timeEntry {
	n := x.count.Load()
	i := sort.Search(int(n), func(i int) bool { return x.at(int64(i)).Timestamp > ts }) - 1
	if i < 0 {
		return timeEntry{Timestamp: -1, Offset: x.baseOffset}
	}
	return x.at(int64(i))
}

// maybeAppend adds (ts, offset) if ts is larger than the last entry's
// timestamp. It reports whether it appended. The caller reserved room.
func (x *timeIndex) maybeAppend(ts, offset int64) bool {
	n := x.count.Load()
	if n > 0 && ts <= x.at(n-1).Timestamp {
		return false
	}
	if n >= x.maxEntries() {
		return false
	}
	e := x.entry(n)
	binary.BigEndian.PutUint64(e, uint64(ts))
	binary.BigEndian.PutUint32(e[8:], uint32(offset-x.baseOffset))
	x.publish(n + 1)
	return true
}

// truncateTo drops entries with offset >= offset.
func (x *timeIndex) truncateTo(offset int64) {
	n := x.count.Load()
	keep := sort.Search(int(n), func(i int) bool { return x.at(int64(i)).Offset >= offset })
	x.publish(int64(keep))
}

// check validates every entry: timestamps strictly increasing, offsets
// non-decreasing, within [baseOffset, nextOffset).
func (x *timeIndex) check(nextOffset int64) error {
	n := x.count.Load()
	prev := timeEntry{Timestamp: -1 << 63, Offset: x.baseOffset}
	for i := int64(0); i < n; i++ {
		e := x.at(i)
		if e.Timestamp <= prev.Timestamp || e.Offset < prev.Offset || e.Offset >= nextOffset {
			return fmt.Errorf("%w: %s entry %d (ts %d, offset %d) after (%d, %d), next offset %d",
				ErrCorruptIndex, x.path, i, e.Timestamp, e.Offset, prev.Timestamp, prev.Offset, nextOffset)
		}
		prev = e
	}
	return nil
}

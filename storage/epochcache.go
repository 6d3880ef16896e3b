package storage

import (
	"errors"
	"fmt"
	"github.com/kbroker/kbroker/storage/vfs"
	"io/fs"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
)

// EpochEntry says that leader epoch Epoch wrote its first batch at
// StartOffset.
type EpochEntry struct {
	Epoch       int32
	StartOffset int64
}

// Undefined epoch and offset of OffsetForLeaderEpoch answers.
const (
	UndefinedEpoch       int32 = -1
	UndefinedEpochOffset int64 = -1
)

// EpochCache is Kafka's LeaderEpochFileCache: the sequence of leader epochs
// of a partition with their start offsets, persisted in the partition dir
// as leader-epoch-checkpoint (text: "0\n<count>\n<epoch> <startOffset>\n...").
// Every change rewrites the file atomically. Entries are strictly increasing
// in both epoch and start offset. Safe for concurrent use.
type EpochCache struct {
	fs   vfs.FS
	path string
	leo  func() int64 // the log end offset, for the latest epoch's end

	mu      sync.RWMutex // guards the following
	entries []EpochEntry
}

// loadEpochCache reads the checkpoint file of dir. A missing file gives an
// empty cache; a corrupt one returns an error wrapping ErrCorruptCheckpoint
// and an empty cache (the caller rebuilds it from the log).
func loadEpochCache(fsys vfs.FS, dir string, leo func() int64) (*EpochCache, error) {
	c := &EpochCache{fs: fsys, path: filepath.Join(dir, LeaderEpochCheckpointFile), leo: leo}
	rows, err := readCheckpoint(c.fs, c.path, 2)
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return c, err
	}
	for _, r := range rows {
		e, err1 := strconv.ParseInt(r[0], 10, 32)
		o, err2 := strconv.ParseInt(r[1], 10, 64)
		if err1 != nil || err2 != nil || e < 0 || o < 0 {
			return c, fmt.Errorf("%w: %s: entry %v", ErrCorruptCheckpoint, c.path, r)
		}
		entry := EpochEntry{Epoch: int32(e), StartOffset: o}
		if n := len(c.entries); n > 0 && (entry.Epoch <= c.entries[n-1].Epoch || entry.StartOffset < c.entries[n-1].StartOffset) {
			c.entries = nil
			return c, fmt.Errorf("%w: %s: entries not increasing", ErrCorruptCheckpoint, c.path)
		}
		c.entries = append(c.entries, entry)
	}
	return c, nil
}

// NewEpochCache returns an empty cache kept in memory only, without a
// checkpoint file, for a log that lives in memory (replication's simulator
// runs its replicas on one). leo gives that log's end offset.
func NewEpochCache(leo func() int64) *EpochCache { return &EpochCache{leo: leo} }

// writeLocked persists the entries (a cache without a path has no file).
// Must be called with mu held.
func (c *EpochCache) writeLocked() error {
	if c.path == "" {
		return nil
	}
	lines := make([]string, len(c.entries))
	for i, e := range c.entries {
		lines[i] = fmt.Sprintf("%d %d", e.Epoch, e.StartOffset)
	}
	return writeFileAtomic(c.fs, c.path, encodeCheckpoint(lines))
}

// Assign records that epoch starts at startOffset. An epoch not larger than
// the latest is ignored. Entries at or after startOffset (left by a log that
// was not truncated first) are dropped to keep offsets increasing, as
// Kafka's maybeTruncateNonMonotonicEntries does.
func (c *EpochCache) Assign(epoch int32, startOffset int64) error {
	if epoch < 0 || startOffset < 0 {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := len(c.entries); n > 0 && epoch <= c.entries[n-1].Epoch {
		return nil
	}
	for n := len(c.entries); n > 0 && c.entries[n-1].StartOffset >= startOffset; n-- {
		c.entries = c.entries[:n-1]
	}
	c.entries = append(c.entries, EpochEntry{Epoch: epoch, StartOffset: startOffset})
	return c.writeLocked()
}

// LatestEpoch is the largest epoch, or UndefinedEpoch if the cache is empty.
func (c *EpochCache) LatestEpoch() int32 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if n := len(c.entries); n > 0 {
		return c.entries[n-1].Epoch
	}
	return UndefinedEpoch
}

// EndOffsetFor answers OffsetForLeaderEpoch like Kafka's
// LeaderEpochFileCache.endOffsetFor: the largest epoch <= requested and the
// start offset of the epoch after it, or the log end offset when requested
// is the latest epoch. (-1, -1) when requested is undefined, larger than
// every epoch, or the cache is empty. When requested is smaller than every
// cached epoch (older epochs were removed with their data), Kafka answers
// (requested, start offset of the first epoch) so the follower truncates to
// the leader's start; so does this.
func (c *EpochCache) EndOffsetFor(requested int32) (int32, int64) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	n := len(c.entries)
	switch {
	case requested == UndefinedEpoch || n == 0:
		return UndefinedEpoch, UndefinedEpochOffset
	case c.entries[n-1].Epoch == requested:
		return requested, c.leo()
	}
	higher := sort.Search(n, func(i int) bool { return c.entries[i].Epoch > requested })
	switch {
	case higher == n:
		return UndefinedEpoch, UndefinedEpochOffset
	case higher == 0:
		return requested, c.entries[0].StartOffset
	}
	return c.entries[higher-1].Epoch, c.entries[higher].StartOffset
}

// TruncateFromEnd removes entries whose start offset is >= endOffset (the
// log was truncated to endOffset).
func (c *EpochCache) TruncateFromEnd(endOffset int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(c.entries)
	keep := sort.Search(n, func(i int) bool { return c.entries[i].StartOffset >= endOffset })
	if keep == n {
		return nil
	}
	c.entries = c.entries[:keep]
	return c.writeLocked()
}

// TruncateFromStart removes entries that start at or before startOffset
// except the last of them, which is moved to start at startOffset (the log
// start offset moved).
func (c *EpochCache) TruncateFromStart(startOffset int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(c.entries)
	upTo := sort.Search(n, func(i int) bool { return c.entries[i].StartOffset > startOffset })
	if upTo == 0 || (upTo == 1 && c.entries[0].StartOffset == startOffset) {
		return nil
	}
	first := EpochEntry{Epoch: c.entries[upTo-1].Epoch, StartOffset: startOffset}
	c.entries = append([]EpochEntry{first}, c.entries[upTo:]...)
	return c.writeLocked()
}

// Entries returns a copy of the entries, oldest first.
func (c *EpochCache) Entries() []EpochEntry {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return append([]EpochEntry(nil), c.entries...)
}

// replace sets the entries wholesale (rebuild from the log) and persists.
func (c *EpochCache) replace(entries []EpochEntry) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entries = entries
	return c.writeLocked()
}

// clear empties the cache and persists (TruncateFullyAndStartAt).
func (c *EpochCache) clear() error { return c.replace(nil) }

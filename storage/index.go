package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/kbroker/kbroker/storage/vfs"
	"io/fs"
	"os"
	"sort"
	"sync/atomic"
)

const (
	offsetIndexEntrySize = 8  // relative offset u32, position u32
	timeIndexEntrySize   = 12 // timestamp i64, relative offset u32

	// indexAllocChunk is the largest step in which an index file gets disk
	// blocks while it grows (the file itself is preallocated sparse to its
	// maximum size, as Kafka does); the step starts at a page and doubles
	// with the allocated size, so that an idle partition's indexes hold a
	// page each.
	indexAllocChunk = 64 << 10
)

// indexFile is the part shared by the offset and time indexes: a file of
// fixed-size big-endian entries, memory-mapped.
//
// A writable index (active segment) has its file set to the maximum size
// (ftruncate, sparse), the whole range mapped read-write, and disk blocks
// allocated in chunks ahead of the entries written (reserve), so writing an
// entry through the mapping can never fault on ENOSPC. A read-only index
// (inactive segment) is mapped over its trimmed file.
//
// No index keeps a descriptor open: the mapping outlives it, and the rare
// operations that need one (reserve, once per chunk; trim, once per
// segment) open the file for the call. A partition therefore holds one
// descriptor, its active .log, however many segments it has.
//
// Concurrency: only the appender (holding Log.appendMu) writes entries and
// calls reserve/trim/truncate; readers call lookups. The entry bytes are
// written before count is stored, and readers load count first, so they
// never see a half-written entry. truncate runs only when the segment has
// no readers (segment.waitIdleLocked).
type indexFile struct {
	path      string
	entrySize int
	env       *fileEnv

	data      []byte       // the mapping; nil when empty/unmapped
	count     atomic.Int64 // valid entries
	writable  bool         // mapped read-write for the appender (reserve, trim)
	allocated int64        // bytes allocated on disk (writable only)
}

// maxEntries is how many entries the mapping can hold.
func (x *indexFile) maxEntries() int64 { return int64(len(x.data) / x.entrySize) }

// isFull reports whether n more entries would not fit.
func (x *indexFile) isFull(n int64) bool { return x.count.Load()+n > x.maxEntries() }

// entry returns the bytes of entry i.
func (x *indexFile) entry(i int64) []byte {
	off := i * int64(x.entrySize)
	return x.data[off : off+int64(x.entrySize)]
}

// openWritable maps the index read-write with room for maxBytes, keeping the
// first entries entries. The file is created if missing. The descriptor is
// closed at once: the mapping outlives it.
func (x *indexFile) openWritable(maxBytes int64, entries int64) error {
	maxBytes = maxBytes / int64(x.entrySize) * int64(x.entrySize)
	if min := (entries + 1) * int64(x.entrySize); maxBytes < min {
		maxBytes = min
	}
	f, err := x.env.fs.OpenFile(x.path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return diskError("open index", err)
	}
	defer f.Close()
	if err := f.Truncate(maxBytes); err != nil {
		return diskError("grow index "+x.path, err)
	}
	data, err := mmapFile(f, maxBytes, true)
	if err != nil {
		return err
	}
	x.data, x.writable, x.allocated = data, true, entries*int64(x.entrySize)
	x.count.Store(entries)
	return nil
}

// openReadOnly maps the (trimmed) index file read-only. A missing file maps
// as empty. The descriptor is closed at once: the mapping outlives it.
func (x *indexFile) openReadOnly() error {
	f, err := vfs.Open(x.env.fs, x.path)
	if errors.Is(err, fs.ErrNotExist) {
		x.data = nil
		x.count.Store(0)
		return nil
	}
	if err != nil {
		return diskError("open index", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return diskError("stat index", err)
	}
	n := st.Size() / int64(x.entrySize)
	data, err := mmapFile(f, n*int64(x.entrySize), false)
	if err != nil {
		return err
	}
	x.data = data
	x.count.Store(n)
	return nil
}

// reserve makes sure disk blocks exist for n more entries. It opens the
// file for the fallocate: once per chunk, a few times per segment.
func (x *indexFile) reserve(n int64) error {
	need := (x.count.Load() + n) * int64(x.entrySize)
	if need <= x.allocated {
		return nil
	}
	step := min(indexAllocChunk, max(pageSize, x.allocated))
	target := min(int64(len(x.data)), (need+step-1)/step*step)
	f, err := x.env.fs.OpenFile(x.path, os.O_RDWR, 0)
	if err != nil {
		return diskError("open index", err)
	}
	defer f.Close()
	if err := x.env.allocate(f, x.allocated, target-x.allocated, false); err != nil {
		return err
	}
	x.allocated = target
	return nil
}

// publish makes entry i (already written) visible to readers.
func (x *indexFile) publish(n int64) { x.count.Store(n) }

// trim shrinks the file to its entries and ends the writable state. The
// mapping stays (readers only touch entries below count, which stay inside
// the file).
func (x *indexFile) trim() error {
	if !x.writable {
		return nil
	}
	x.writable = false
	size := x.count.Load() * int64(x.entrySize)
	if err := x.env.fs.Truncate(x.path, size); err != nil {
		return diskError("trim index "+x.path, err)
	}
	x.allocated = min(x.allocated, size)
	return nil
}

// close unmaps. Must only run once no reader can touch data.
func (x *indexFile) close() error {
	err := munmap(x.data)
	x.data, x.writable = nil, false
	return err
}

// offsetIndex maps offsets to byte positions in the segment's .log. Like
// Kafka, each entry is (last offset of a batch - base offset, position of
// that batch); one is added every IndexIntervalBytes of log.
type offsetIndex struct {
	indexFile
	baseOffset int64
}

func newOffsetIndex(path string, baseOffset int64, env *fileEnv) *offsetIndex {
	return &offsetIndex{indexFile: indexFile{path: path, entrySize: offsetIndexEntrySize, env: env}, baseOffset: baseOffset}
}

// indexEntry is a decoded offset index entry.
type indexEntry struct {
	Offset   int64
	Position int64
}

func (x *offsetIndex) at(i int64) indexEntry {
	e := x.entry(i)
	return indexEntry{
		Offset:   x.baseOffset + int64(binary.BigEndian.Uint32(e)),
		Position: int64(binary.BigEndian.Uint32(e[4:])),
	}
}

// lookup returns the entry with the largest offset <= target, or
// (baseOffset, 0) when there is none.
func (x *offsetIndex) lookup(target int64) indexEntry {
	n := x.count.Load()
	i := sort.Search(int(n), func(i int) bool { return x.at(int64(i)).Offset > target }) - 1
	if i < 0 {
		return indexEntry{Offset: x.baseOffset, Position: 0}
	}
	return x.at(int64(i))
}

// append writes an entry; the caller reserved room and checked ordering.
func (x *offsetIndex) append(offset, position int64) {
	n := x.count.Load()
	e := x.entry(n)
	binary.BigEndian.PutUint32(e, uint32(offset-x.baseOffset))
	binary.BigEndian.PutUint32(e[4:], uint32(position))
	x.publish(n + 1)
}

// lastEntry is the last entry, or (baseOffset, 0).
func (x *offsetIndex) lastEntry() indexEntry {
	if n := x.count.Load(); n > 0 {
		return x.at(n - 1)
	}
	return indexEntry{Offset: x.baseOffset}
}

// truncateTo drops entries with offset >= offset (Kafka OffsetIndex.truncateTo).
func (x *offsetIndex) truncateTo(offset int64) {
	n := x.count.Load()
	keep := sort.Search(int(n), func(i int) bool { return x.at(int64(i)).Offset >= offset })
	x.publish(int64(keep))
}

// check validates every entry: offsets strictly increasing, positions
// non-decreasing and inside a log of logSize bytes.
func (x *offsetIndex) check(logSize int64) error {
	n := x.count.Load()
	prev := indexEntry{Offset: x.baseOffset - 1, Position: -1}
	for i := int64(0); i < n; i++ {
		e := x.at(i)
		if e.Offset <= prev.Offset || e.Position < prev.Position || e.Position >= logSize {
			return fmt.Errorf("%w: %s entry %d (offset %d, position %d) after (%d, %d), log size %d",
				ErrCorruptIndex, x.path, i, e.Offset, e.Position, prev.Offset, prev.Position, logSize)
		}
		prev = e
	}
	return nil
}

// syncMapped msyncs the entries through whatever mapping is present.
func (x *indexFile) syncMapped() error {
	if x.data == nil {
		return nil
	}
	return msyncRange(x.env.fs, x.path, x.data, 0, min(int64(len(x.data)), x.count.Load()*int64(x.entrySize)))
}

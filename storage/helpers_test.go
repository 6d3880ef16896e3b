package storage

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"

	"github.com/kbroker/kbroker/internal/testsupport"
)

// batchSpec describes a test batch; build encodes it in the v2 format with
// real records (varint fields), compressing them if asked.
type batchSpec struct {
	baseOffset  int64
	leaderEpoch int32
	timestamps  []int64 // one per record (CreateTime)
	valueSize   int
	compression Compression
	xerial      bool // snappy with the Java client's framing
	producerID  int64
	epoch       int16
	baseSeq     int32
	control     bool
}

// spec returns a batch of n records with timestamps ts0, ts0+1, ...
func spec(n int, ts0 int64) batchSpec {
	ts := make([]int64, n)
	for i := range ts {
		ts[i] = ts0 + int64(i)
	}
	return batchSpec{timestamps: ts, valueSize: 10, producerID: -1, epoch: -1, baseSeq: -1, leaderEpoch: -1}
}

func (s batchSpec) idempotent(pid int64, epoch int16, seq int32) batchSpec {
	s.producerID, s.epoch, s.baseSeq = pid, epoch, seq
	return s
}

func appendVarint(b []byte, v int64) []byte { return binary.AppendVarint(b, v) }

func (s batchSpec) records() []byte {
	var out []byte
	base := s.timestamps[0]
	for i, ts := range s.timestamps {
		var r []byte
		r = append(r, 0)
		r = appendVarint(r, ts-base)
		r = appendVarint(r, int64(i))
		r = appendVarint(r, 1)
		r = append(r, byte('k'))
		r = appendVarint(r, int64(s.valueSize))
		r = append(r, bytes.Repeat([]byte{byte('a' + i%26)}, s.valueSize)...)
		r = appendVarint(r, 0)
		out = appendVarint(out, int64(len(r)))
		out = append(out, r...)
	}
	return out
}

func compress(t testing.TB, c Compression, xerial bool, raw []byte) []byte {
	var buf bytes.Buffer
	switch c {
	case CompressionNone:
		return raw
	case CompressionGzip:
		w := gzip.NewWriter(&buf)
		w.Write(raw)
		w.Close()
	case CompressionSnappy:
		block := s2.EncodeSnappy(nil, raw)
		if !xerial {
			return block
		}
		buf.Write(xerialMagic)
		buf.Write([]byte{0, 0, 0, 1, 0, 0, 0, 1})
		// two chunks to exercise the framing loop
		half := len(raw) / 2
		for _, part := range [][]byte{raw[:half], raw[half:]} {
			blk := s2.EncodeSnappy(nil, part)
			binary.Write(&buf, binary.BigEndian, uint32(len(blk)))
			buf.Write(blk)
		}
	case CompressionLZ4:
		w := lz4.NewWriter(&buf)
		w.Write(raw)
		w.Close()
	case CompressionZstd:
		enc, err := zstd.NewWriter(nil)
		if err != nil {
			t.Fatal(err)
		}
		defer enc.Close()
		return enc.EncodeAll(raw, nil)
	}
	return buf.Bytes()
}

func (s batchSpec) build(t testing.TB) []byte {
	recs := compress(t, s.compression, s.xerial, s.records())
	b := make([]byte, BatchHeaderSize, BatchHeaderSize+len(recs))
	maxTs := s.timestamps[0]
	for _, ts := range s.timestamps {
		maxTs = max(maxTs, ts)
	}
	be := binary.BigEndian
	be.PutUint64(b[0:], uint64(s.baseOffset))
	be.PutUint32(b[8:], uint32(BatchHeaderSize+len(recs)-12))
	be.PutUint32(b[12:], uint32(s.leaderEpoch))
	b[16] = 2
	attrs := uint16(s.compression)
	if s.control {
		attrs |= attrControl
	}
	be.PutUint16(b[21:], attrs)
	be.PutUint32(b[23:], uint32(len(s.timestamps)-1))
	be.PutUint64(b[27:], uint64(s.timestamps[0]))
	be.PutUint64(b[35:], uint64(maxTs))
	be.PutUint64(b[43:], uint64(s.producerID))
	be.PutUint16(b[51:], uint16(s.epoch))
	be.PutUint32(b[53:], uint32(s.baseSeq))
	be.PutUint32(b[57:], uint32(len(s.timestamps)))
	b = append(b, recs...)
	be.PutUint32(b[17:], crc32.Checksum(b[21:], castagnoli))
	return b
}

// batchOfSize builds an uncompressed single-record batch of exactly size
// bytes (size >= 72).
func batchOfSize(t testing.TB, size int, ts int64) []byte {
	s := spec(1, ts)
	s.valueSize = 0
	overhead := len(s.build(t))
	for v := size - overhead; v >= 0; v-- {
		s.valueSize = v
		if b := s.build(t); len(b) == size {
			return b
		}
	}
	t.Fatalf("cannot build batch of %d bytes", size)
	return nil
}

// newFakeClock is the tests' manual clock, at a fixed start.
func newFakeClock() *testsupport.Clock {
	return testsupport.NewClock(time.UnixMilli(1_700_000_000_000))
}

// logBuffer captures log output for assertions.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func testLogger(t testing.TB) (*slog.Logger, *logBuffer) {
	lb := &logBuffer{}
	var w io.Writer = lb
	if testing.Verbose() {
		w = io.MultiWriter(lb, os.Stderr)
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug})), lb
}

// testEnv bundles what tests pass to OpenLog.
type testEnv struct {
	t     testing.TB
	dir   string
	clock *testsupport.Clock
	logs  *logBuffer
	opts  LogOptions
}

func newTestEnv(t testing.TB) *testEnv {
	logger, lb := testLogger(t)
	clock := newFakeClock()
	return &testEnv{
		t: t, dir: filepath.Join(t.TempDir(), "topic-0"), clock: clock, logs: lb,
		opts: LogOptions{Now: clock.Now, Logger: logger},
	}
}

func smallConfig() LogConfig {
	c := DefaultLogConfig()
	c.SegmentBytes = 4096
	c.IndexIntervalBytes = 256
	c.MaxIndexBytes = 1024
	c.PreallocateChunkBytes = 1024
	return c
}

func (e *testEnv) open(cfg LogConfig, st LogState) *Log {
	e.t.Helper()
	l, err := OpenLog(e.dir, cfg, st, e.opts)
	if err != nil {
		e.t.Fatalf("OpenLog: %v", err)
	}
	return l
}

// appendN appends n single-batch produce requests of recs records each and
// returns the infos.
func appendN(t testing.TB, l *Log, n, recs int, ts0 int64) []AppendInfo {
	t.Helper()
	var infos []AppendInfo
	for i := 0; i < n; i++ {
		info, err := l.AppendAsLeader(spec(recs, ts0+int64(i*recs)).build(t), 0, AppendOptions{})
		if err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
		infos = append(infos, info)
	}
	return infos
}

// readAll reads every batch from offset to maxOffset and returns their
// headers, copying nothing it does not need.
func readAll(t testing.TB, l *Log, from, maxOffset int64) []BatchHeader {
	t.Helper()
	var out []BatchHeader
	for off := from; ; {
		res, err := l.Read(off, 1<<20, maxOffset, true)
		if err != nil {
			t.Fatalf("read at %d: %v", off, err)
		}
		it := Batches(res.Data)
		for it.Next() {
			if err := ValidateBatch(it.Batch()); err != nil {
				t.Fatalf("read returned invalid batch: %v", err)
			}
			out = append(out, it.Header())
		}
		if it.Err() != nil {
			t.Fatalf("read returned torn data: %v", it.Err())
		}
		res.Release()
		if len(res.Data) == 0 {
			return out
		}
		off = res.NextOffset
	}
}

// checkContiguous asserts the headers cover [from, to) without gaps.
func checkContiguous(t testing.TB, hs []BatchHeader, from, to int64) {
	t.Helper()
	next := from
	for _, h := range hs {
		if h.BaseOffset != next {
			t.Fatalf("batch at %d, expected %d", h.BaseOffset, next)
		}
		next = h.NextOffset()
	}
	if next != to {
		t.Fatalf("batches end at %d, expected %d", next, to)
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

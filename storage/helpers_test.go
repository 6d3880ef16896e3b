package storage

import (
	"bytes"
	"encoding/binary"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/kbroker/kbroker/internal/testsupport"
	"github.com/kbroker/kbroker/record"
)

// batchSpec describes a test batch; build encodes it in the v2 format with
// real records (varint fields), compressing them if asked.
type batchSpec struct {
	baseOffset  int64
	leaderEpoch int32
	timestamps  []int64 // one per record (CreateTime)
	valueSize   int
	compression record.Compression
	xerial      bool // snappy with the Java client's framing
	producerID  int64
	epoch       int16
	baseSeq     int32
	control     bool
	txn         bool // transactional attribute
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

// compress compresses a records section with the record package's
// Compressor (the record package tests decompression against other
// encoders).
func compress(t testing.TB, c record.Compression, xerial bool, raw []byte) []byte {
	var comp record.Compressor
	defer comp.Close()
	out, err := comp.Compress(c, raw, xerial)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func (s batchSpec) build(t testing.TB) []byte {
	maxTs := s.timestamps[0]
	for _, ts := range s.timestamps {
		maxTs = max(maxTs, ts)
	}
	attrs := int16(s.compression)
	if s.control {
		attrs |= record.AttrControl
	}
	if s.txn {
		attrs |= record.AttrTransactional
	}
	h := record.BatchHeader{
		BaseOffset: s.baseOffset, PartitionLeaderEpoch: s.leaderEpoch, Attributes: attrs,
		LastOffsetDelta: int32(len(s.timestamps) - 1), BaseTimestamp: s.timestamps[0], MaxTimestamp: maxTs,
		ProducerID: s.producerID, ProducerEpoch: s.epoch, BaseSequence: s.baseSeq, RecordCount: int32(len(s.timestamps)),
	}
	b := record.NewBatch(h, compress(t, s.compression, s.xerial, s.records()))
	return b.Bytes()
}

// leaderBatches parses the batches of buf as a produce's (the broker's
// record.ParseProduce), for Log.AppendAsLeader.
func leaderBatches(t testing.TB, buf []byte) []record.Batch {
	t.Helper()
	var out []record.Batch
	it := record.Batches(buf)
	for it.Next() {
		b, err := record.ParseProduce(it.Batch())
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	return out
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
		info, err := l.AppendAsLeader(leaderBatches(t, spec(recs, ts0+int64(i*recs)).build(t)), 0, AppendOptions{})
		if err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
		infos = append(infos, info)
	}
	return infos
}

// readAll reads every batch from offset to maxOffset and returns their
// headers, copying nothing it does not need.
func readAll(t testing.TB, l *Log, from, maxOffset int64) []record.BatchHeader {
	t.Helper()
	var out []record.BatchHeader
	for off := from; ; {
		res, err := l.Read(off, 1<<20, maxOffset, true)
		if err != nil {
			t.Fatalf("read at %d: %v", off, err)
		}
		it := record.Batches(res.Data)
		for it.Next() {
			if _, err := record.Validate(it.Batch()); err != nil {
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
func checkContiguous(t testing.TB, hs []record.BatchHeader, from, to int64) {
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

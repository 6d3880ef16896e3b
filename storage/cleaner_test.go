package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kbroker/kbroker/internal/testsupport"
	"github.com/kbroker/kbroker/record"
)

// kv is a test record; a nil value is a tombstone, a nil key is keyless.
type kv struct {
	key, value []byte
	ts         int64
}

func rec(k, v string, ts int64) kv { return kv{key: []byte(k), value: []byte(v), ts: ts} }
func tomb(k string, ts int64) kv   { return kv{key: []byte(k), ts: ts} }

// kvBatch is a test batch of kv records, each with one header
// "h" = key+"/"+value so that header preservation is visible.
type kvBatch struct {
	recs        []kv
	codec       record.Compression
	xerial      bool
	pid         int64
	epoch       int16
	seq         int32
	leaderEpoch int32
	txn         bool // transactional attribute
}

func batchOf(recs ...kv) kvBatch { return kvBatch{recs: recs, pid: -1, epoch: -1, seq: -1} }

func appendBytesField(b, v []byte) []byte {
	if v == nil {
		return binary.AppendVarint(b, -1)
	}
	return append(binary.AppendVarint(b, int64(len(v))), v...)
}

func (b kvBatch) records() []byte {
	var out []byte
	for i, r := range b.recs {
		body := []byte{0}
		body = binary.AppendVarint(body, r.ts-b.recs[0].ts)
		body = binary.AppendVarint(body, int64(i))
		body = appendBytesField(body, r.key)
		body = appendBytesField(body, r.value)
		body = binary.AppendVarint(body, 1)
		body = appendBytesField(body, []byte("h"))
		body = appendBytesField(body, []byte(string(r.key)+"/"+string(r.value)))
		out = append(binary.AppendVarint(out, int64(len(body))), body...)
	}
	return out
}

func (b kvBatch) build(t testing.TB) []byte {
	maxTs := b.recs[0].ts
	for _, r := range b.recs {
		maxTs = max(maxTs, r.ts)
	}
	attrs := int16(b.codec)
	if b.txn {
		attrs |= record.AttrTransactional
	}
	h := record.BatchHeader{
		PartitionLeaderEpoch: b.leaderEpoch, Attributes: attrs, LastOffsetDelta: int32(len(b.recs) - 1),
		BaseTimestamp: b.recs[0].ts, MaxTimestamp: maxTs, ProducerID: b.pid, ProducerEpoch: b.epoch,
		BaseSequence: b.seq, RecordCount: int32(len(b.recs)),
	}
	return record.NewBatch(h, compress(t, b.codec, b.xerial, b.records())).Bytes()
}

// gotRec is a record as a consumer sees it.
type gotRec struct {
	offset    int64
	key       string
	value     string
	tombstone bool
	ts        int64
	header    string
}

func (r gotRec) String() string {
	if r.tombstone {
		return fmt.Sprintf("%d:%s=<tombstone>@%d", r.offset, r.key, r.ts)
	}
	return fmt.Sprintf("%d:%s=%s@%d", r.offset, r.key, r.value, r.ts)
}

// decodeGot decodes the records of one batch as a consumer would.
func decodeGot(t testing.TB, batch []byte) []gotRec {
	t.Helper()
	it, err := record.Records(batch)
	if err != nil {
		t.Fatalf("decode batch: %v", err)
	}
	var out []gotRec
	for it.Next() {
		r := it.Record()
		if len(r.Headers) != 1 {
			t.Fatalf("record at %d has %d headers", it.Offset(), len(r.Headers))
		}
		out = append(out, gotRec{offset: it.Offset(), key: string(r.Key), value: string(r.Value),
			tombstone: r.Value == nil, ts: it.Timestamp(), header: string(r.Headers[0].Value)})
	}
	if err := it.Err(); err != nil {
		t.Fatalf("record: %v", err)
	}
	return out
}

// readBatches returns every batch of the log (copies), checking CRCs and
// that offsets strictly increase.
func readBatches(t testing.TB, l *Log) [][]byte {
	t.Helper()
	var out [][]byte
	prev := int64(-1)
	for off := l.LogStartOffset(); ; {
		res, err := l.Read(off, 1<<20, math.MaxInt64, true)
		if err != nil {
			t.Fatalf("read at %d: %v", off, err)
		}
		it := record.VerifiedBatches(res.Data)
		for it.Next() {
			if h := it.Header(); h.BaseOffset <= prev {
				t.Fatalf("batch at %d after offset %d", h.BaseOffset, prev)
			}
			prev = it.Header().LastOffset()
			out = append(out, slices.Clone(it.Batch()))
		}
		if it.Err() != nil {
			t.Fatalf("read returned invalid data: %v", it.Err())
		}
		res.Release()
		if len(res.Data) == 0 {
			return out
		}
		off = res.NextOffset
	}
}

func readRecords(t testing.TB, l *Log) []gotRec {
	t.Helper()
	var out []gotRec
	for _, b := range readBatches(t, l) {
		for _, r := range decodeGot(t, b) {
			if n := len(out); n > 0 && r.offset <= out[n-1].offset {
				t.Fatalf("record offset %d after %d", r.offset, out[n-1].offset)
			}
			out = append(out, r)
		}
	}
	return out
}

// compacted is what a first cleaning of records must leave: below upTo,
// only the last record of each key; from upTo on, everything.
func compacted(all []gotRec, upTo int64) []gotRec {
	last := map[string]int64{}
	for _, r := range all {
		if r.offset < upTo {
			last[r.key] = r.offset
		}
	}
	var out []gotRec
	for _, r := range all {
		if r.offset >= upTo || last[r.key] == r.offset {
			out = append(out, r)
		}
	}
	return out
}

func sameRecords(t testing.TB, got, want []gotRec) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("records differ\n got %v\nwant %v", got, want)
	}
}

// compactConfig rolls segments by time only (the tests advance the clock
// to start a new segment) unless a test lowers SegmentBytes.
func compactConfig() LogConfig {
	c := smallConfig()
	c.SegmentBytes = 64 << 10
	c.SegmentMs = time.Minute
	c.Compact = true
	return c
}

// appendInNewSegment appends the batches in a segment of their own (the
// clock moves past segment.ms first).
func appendInNewSegment(t testing.TB, clock *testsupport.Clock, l *Log, batches ...kvBatch) {
	t.Helper()
	clock.Advance(2 * time.Minute)
	for _, b := range batches {
		if _, err := l.AppendAsLeader(leaderBatches(t, b.build(t)), 0, AppendOptions{}); err != nil {
			t.Fatalf("append: %v", err)
		}
	}
}

// updates returns n single-record batches writing keys k0..k(keys-1) in
// turn with values v<i>.
func updates(from, n, keys int, ts int64) []kvBatch {
	var out []kvBatch
	for i := from; i < from+n; i++ {
		out = append(out, batchOf(rec(fmt.Sprintf("k%d", i%keys), fmt.Sprintf("v%d", i), ts+int64(i))))
	}
	return out
}

func mustCompact(t testing.TB, l *Log, now time.Time) CleanStats {
	t.Helper()
	st, err := l.Compact(now)
	if err != nil {
		t.Fatalf("Compact: %v", err)
	}
	return st
}

func segmentFiles(t testing.TB, dir string) map[string]bool {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, de := range des {
		out[de.Name()] = true
	}
	return out
}

func TestCompactKeepsLatestValuePerKeyAndOffsets(t *testing.T) {
	e := newTestEnv(t)
	l := e.open(compactConfig(), LogState{})
	now := e.clock.Now().UnixMilli()
	for s := 0; s < 5; s++ {
		appendInNewSegment(t, e.clock, l, updates(s*20, 20, 7, now)...)
	}
	// A multi-record batch where only some records are superseded later.
	appendInNewSegment(t, e.clock, l, batchOf(rec("m1", "a", now), rec("k1", "x", now+1), rec("m2", "b", now+2)))
	appendInNewSegment(t, e.clock, l, batchOf(rec("k1", "final", now+3)))
	appendInNewSegment(t, e.clock, l, batchOf(rec("k1", "active", now+4)))
	active := l.Segments()[l.NumSegments()-1].BaseOffset
	l.SetHighWatermark(l.LogEndOffset())
	before := readRecords(t, l)
	segsBefore := l.NumSegments()

	st := mustCompact(t, l, e.clock.Now())
	if !st.Cleaned || st.FirstDirtyOffset != 0 || st.EndOffset != active || st.Keys != 9 {
		t.Fatalf("stats %+v", st)
	}
	if st.BytesAfter >= st.BytesBefore || st.SegmentsBefore != segsBefore-1 || st.SegmentsAfter != 1 || l.NumSegments() != 2 {
		t.Fatalf("stats %+v, %d segments", st, l.NumSegments())
	}
	want := compacted(before, active)
	sameRecords(t, readRecords(t, l), want)
	if !strings.Contains(e.logs.String(), "storage: cleaned log") || !strings.Contains(e.logs.String(), "bytes_before=") {
		t.Fatalf("no cleaning log line: %s", e.logs)
	}
	// The partially kept batch keeps its offset range.
	partial := 0
	for _, b := range readBatches(t, l) {
		h, _ := record.ParseBatchHeader(b)
		if got := decodeGot(t, b); len(got) == 2 {
			partial++
			if h.LastOffsetDelta != 2 || got[0].key != "m1" || got[1].offset != h.BaseOffset+2 {
				t.Fatalf("rebuilt batch %+v records %v", h, got)
			}
		}
	}
	if partial != 1 {
		t.Fatalf("%d partially kept batches", partial)
	}
	// Nothing left over, and it all survives a reopen.
	for name := range segmentFiles(t, e.dir) {
		if strings.HasSuffix(name, cleanedSuffix) || strings.HasSuffix(name, swapSuffix) {
			t.Fatalf("left %s", name)
		}
	}
	l.Close()
	l2 := e.open(compactConfig(), LogState{CleanerCheckpoint: st.EndOffset})
	defer l2.Close()
	sameRecords(t, readRecords(t, l2), want)
	// Nothing dirty: a second cleaning has nothing to do.
	l2.SetHighWatermark(l2.LogEndOffset())
	if st := mustCompact(t, l2, e.clock.Now()); st.Cleaned || st.Reason == "" {
		t.Fatalf("second cleaning %+v", st)
	}
}

// Kafka cleans only below min(HW, active segment): the segment holding the
// HW and everything after it stay byte for byte, and a key rewritten after
// the HW does not remove its earlier record below it.
func TestCompactStopsAtHighWatermarkAndActiveSegment(t *testing.T) {
	e := newTestEnv(t)
	l := e.open(compactConfig(), LogState{})
	defer l.Close()
	now := e.clock.Now().UnixMilli()
	for s := 0; s < 4; s++ {
		appendInNewSegment(t, e.clock, l, updates(s*10, 10, 3, now)...)
	}
	appendInNewSegment(t, e.clock, l, updates(40, 5, 3, now)...) // active
	segs := l.Segments()
	l.SetHighWatermark(segs[2].BaseOffset + 3) // inside the third segment
	files := map[int64][]byte{}
	for _, s := range segs[2:] {
		files[s.BaseOffset], _ = os.ReadFile(segmentFileName(e.dir, s.BaseOffset, logSuffix))
	}
	before := readRecords(t, l)

	st := mustCompact(t, l, e.clock.Now())
	if !st.Cleaned || st.EndOffset != segs[2].BaseOffset {
		t.Fatalf("stats %+v", st)
	}
	sameRecords(t, readRecords(t, l), compacted(before, segs[2].BaseOffset))
	for base, data := range files {
		got, _ := os.ReadFile(segmentFileName(e.dir, base, logSuffix))
		if !bytes.Equal(got, data) {
			t.Fatalf("segment %d at or after the HW was rewritten", base)
		}
	}
	// HW at the log end: the active segment still stays.
	l.SetHighWatermark(l.LogEndOffset())
	mustCompact(t, l, e.clock.Now())
	last := l.Segments()[l.NumSegments()-1]
	got, _ := os.ReadFile(segmentFileName(e.dir, last.BaseOffset, logSuffix))
	if !bytes.Equal(got[:last.Size], files[last.BaseOffset][:last.Size]) || last.BaseOffset != segs[4].BaseOffset {
		t.Fatal("the active segment was touched")
	}
}

// KIP-534: the first cleaning that keeps a tombstone stamps its batch with
// a delete horizon (now + delete.retention.ms); a cleaning after it
// removes the tombstone.
func TestCompactTombstonesKeptForDeleteRetention(t *testing.T) {
	e := newTestEnv(t)
	cfg := compactConfig()
	cfg.DeleteRetentionMs = time.Hour.Milliseconds()
	l := e.open(cfg, LogState{})
	defer l.Close()
	t0 := e.clock.Now()
	now := t0.UnixMilli()
	appendInNewSegment(t, e.clock, l, batchOf(rec("a", "1", now)), batchOf(rec("b", "1", now+1)))
	appendInNewSegment(t, e.clock, l, batchOf(tomb("a", now+2), rec("c", "1", now+3)))
	dirty := func(i int) {
		appendInNewSegment(t, e.clock, l, batchOf(rec(fmt.Sprintf("x%d", i), "v", now+10)))
		appendInNewSegment(t, e.clock, l, batchOf(rec("active", "v", now+11)))
		l.SetHighWatermark(l.LogEndOffset())
	}
	dirty(0)
	mustCompact(t, l, t0)
	got := readRecords(t, l)
	if got[0].key != "b" || got[1] != (gotRec{offset: 2, key: "a", tombstone: true, ts: now + 2, header: "a/"}) {
		t.Fatalf("after first cleaning %v", got)
	}
	var h record.BatchHeader
	for _, b := range readBatches(t, l) {
		if h, _ = record.ParseBatchHeader(b); h.BaseOffset == 2 {
			break
		}
	}
	if hz, ok := h.DeleteHorizon(); !ok || hz != now+time.Hour.Milliseconds() {
		t.Fatalf("tombstone batch %+v has no delete horizon", h)
	}

	dirty(1)
	mustCompact(t, l, t0.Add(59*time.Minute))
	if got := readRecords(t, l); got[1].key != "a" || !got[1].tombstone {
		t.Fatalf("tombstone removed before delete.retention.ms: %v", got)
	}
	dirty(2)
	st := mustCompact(t, l, t0.Add(time.Hour))
	got = readRecords(t, l)
	for _, r := range got {
		if r.key == "a" {
			t.Fatalf("tombstone kept after delete.retention.ms: %v", got)
		}
	}
	if st.TombstonesRemoved != 1 || got[0].key != "b" || got[1].key != "c" {
		t.Fatalf("stats %+v records %v", st, got)
	}
}

// Superseded records inside compressed batches: the batch is rebuilt with
// the same codec (snappy keeps its framing), the same header fields and
// each record's offset, timestamp and headers; a batch whose records all
// stay is kept byte for byte.
func TestCompactCompressedBatches(t *testing.T) {
	codecs := []struct {
		name   string
		codec  record.Compression
		xerial bool
	}{{"none", record.CompressionNone, false}, {"gzip", record.CompressionGzip, false}, {"snappy", record.CompressionSnappy, false},
		{"snappy-xerial", record.CompressionSnappy, true}, {"lz4", record.CompressionLZ4, false}, {"zstd", record.CompressionZstd, false}}
	for _, c := range codecs {
		t.Run(c.name, func(t *testing.T) {
			e := newTestEnv(t)
			l := e.open(compactConfig(), LogState{})
			defer l.Close()
			now := e.clock.Now().UnixMilli()
			var recs []kv
			for i := 0; i < 50; i++ {
				recs = append(recs, rec(fmt.Sprintf("k%d", i), strings.Repeat("v", 30), now+int64(i%7)))
			}
			mixed := batchOf(recs...)
			mixed.codec, mixed.xerial, mixed.pid, mixed.epoch, mixed.seq, mixed.leaderEpoch = c.codec, c.xerial, 42, 3, 100, 0
			kept := batchOf(rec("z1", "1", now), rec("z2", "2", now))
			kept.codec, kept.xerial = c.codec, c.xerial
			appendInNewSegment(t, e.clock, l, mixed, kept)
			appendInNewSegment(t, e.clock, l, updates(0, 20, 20, now)...) // supersede k0..k19
			appendInNewSegment(t, e.clock, l, batchOf(rec("active", "v", now)))
			l.SetHighWatermark(l.LogEndOffset())
			before := readBatches(t, l)
			beforeRecs := readRecords(t, l)
			mustCompact(t, l, e.clock.Now())

			after := readBatches(t, l)
			sameRecords(t, readRecords(t, l), compacted(beforeRecs, l.Segments()[1].BaseOffset))
			oh, _ := record.ParseBatchHeader(before[0])
			nh, _ := record.ParseBatchHeader(after[0])
			if nh.Compression() != c.codec || nh.BaseOffset != 0 || nh.LastOffsetDelta != 49 || nh.RecordCount != 30 ||
				nh.ProducerID != 42 || nh.ProducerEpoch != 3 || nh.BaseSequence != 100 || nh.PartitionLeaderEpoch != 0 ||
				nh.MaxTimestamp != oh.MaxTimestamp {
				t.Fatalf("rebuilt header %+v from %+v", nh, oh)
			}
			if xerial := record.IsXerial(after[0][record.BatchHeaderSize:]); xerial != c.xerial {
				t.Fatalf("xerial framing %v, want %v", xerial, c.xerial)
			}
			if !bytes.Equal(after[1], before[1]) {
				t.Fatal("a batch whose records all stay was rewritten")
			}
		})
	}
}

func TestCompactMinCompactionLag(t *testing.T) {
	e := newTestEnv(t)
	cfg := compactConfig()
	cfg.MinCompactionLagMs = time.Hour.Milliseconds()
	l := e.open(cfg, LogState{})
	defer l.Close()
	now := e.clock.Now().UnixMilli()
	appendInNewSegment(t, e.clock, l, updates(0, 10, 2, now-3*3600_000)...) // old enough
	appendInNewSegment(t, e.clock, l, updates(10, 10, 2, now-2*3600_000)...)
	appendInNewSegment(t, e.clock, l, updates(20, 10, 2, now-30*60_000)...) // too young
	appendInNewSegment(t, e.clock, l, updates(30, 10, 2, now-3*3600_000)...)
	appendInNewSegment(t, e.clock, l, batchOf(rec("active", "v", now)))
	l.SetHighWatermark(l.LogEndOffset())
	young := l.Segments()[2].BaseOffset
	before := readRecords(t, l)
	st := mustCompact(t, l, e.clock.Now())
	if st.EndOffset != young {
		t.Fatalf("cleaned up to %d, the young segment starts at %d", st.EndOffset, young)
	}
	sameRecords(t, readRecords(t, l), compacted(before, young))
	// An hour later the young segment may be cleaned too.
	st = mustCompact(t, l, e.clock.Now().Add(time.Hour))
	if st.EndOffset != l.Segments()[l.NumSegments()-1].BaseOffset {
		t.Fatalf("second cleaning %+v", st)
	}
}

// The background cleaner's choice (Kafka's grabFilthiestCompactedLog):
// dirty ratio above min.cleanable.dirty.ratio, or a dirty batch older than
// max.compaction.lag.ms.
func TestCompactDirtyRatioAndMaxCompactionLag(t *testing.T) {
	e := newTestEnv(t)
	cfg := compactConfig()
	l := e.open(cfg, LogState{})
	defer l.Close()
	now := e.clock.Now().UnixMilli()
	appendInNewSegment(t, e.clock, l, updates(0, 200, 200, now)...) // 200 distinct keys: nothing to remove
	appendInNewSegment(t, e.clock, l, batchOf(rec("active", "v", now)))
	l.SetHighWatermark(l.LogEndOffset())
	due := func() CleanStats {
		t.Helper()
		st, err := l.compact(e.clock.Now(), nil, true)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	if st := due(); !st.Cleaned || st.DirtyRatio != 1 {
		t.Fatalf("fully dirty log not cleaned: %+v", st)
	}
	// A small dirty segment: ratio well below 0.5.
	appendInNewSegment(t, e.clock, l, updates(0, 10, 200, now)...)
	appendInNewSegment(t, e.clock, l, batchOf(rec("active", "v", now)))
	l.SetHighWatermark(l.LogEndOffset())
	if st := due(); st.Cleaned || st.DirtyRatio >= 0.5 || st.DirtyRatio <= 0 || st.Reason != "below min.cleanable.dirty.ratio" {
		t.Fatalf("cleaned below the ratio: %+v", st)
	}
	// A lower ratio makes it due.
	cfg.MinCleanableDirtyRatio = 0.01
	l.UpdateConfig(cfg)
	if st := due(); !st.Cleaned {
		t.Fatalf("not cleaned above the ratio: %+v", st)
	}
	// max.compaction.lag.ms forces a log whose ratio is low.
	cfg.MinCleanableDirtyRatio = 0.9
	cfg.MaxCompactionLagMs = time.Hour.Milliseconds()
	l.UpdateConfig(cfg)
	appendInNewSegment(t, e.clock, l, updates(0, 10, 200, now)...)
	appendInNewSegment(t, e.clock, l, batchOf(rec("active", "v", now)))
	l.SetHighWatermark(l.LogEndOffset())
	e.clock.Advance(30 * time.Minute)
	if st := due(); st.Cleaned {
		t.Fatalf("cleaned before max.compaction.lag.ms: %+v", st)
	}
	e.clock.Advance(time.Hour)
	if st := due(); !st.Cleaned {
		t.Fatalf("not cleaned after max.compaction.lag.ms: %+v", st)
	}
}

// max.compaction.lag.ms also rolls the active segment of a compacted log
// (Kafka's LogConfig.maxSegmentMs).
func TestMaxCompactionLagRollsActiveSegment(t *testing.T) {
	e := newTestEnv(t)
	cfg := compactConfig()
	cfg.SegmentMs = 24 * time.Hour
	cfg.MaxCompactionLagMs = time.Minute.Milliseconds()
	l := e.open(cfg, LogState{})
	defer l.Close()
	appendInNewSegment(t, e.clock, l, batchOf(rec("a", "1", 0)))
	appendInNewSegment(t, e.clock, l, batchOf(rec("a", "2", 0)))
	if l.NumSegments() != 2 {
		t.Fatalf("%d segments", l.NumSegments())
	}
}

// Fetches across cleaned segments get valid batches with gaps in their
// offsets; a fetch at a removed offset gets the next batch; a follower
// replicates the gaps as they are.
func TestCompactReadsAcrossCleanedSegments(t *testing.T) {
	e := newTestEnv(t)
	cfg := compactConfig()
	cfg.SegmentBytes = 1024
	l := e.open(cfg, LogState{})
	now := e.clock.Now().UnixMilli()
	for i := 0; i < 300; i++ {
		key := i % 40
		if i%2 == 0 {
			key = i % 7 // frequent keys: their old records leave gaps
		}
		b := batchOf(rec(fmt.Sprintf("k%d", key), strings.Repeat("x", 20+i%13), now+int64(i)))
		if _, err := l.AppendAsLeader(leaderBatches(t, b.build(t)), 0, AppendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	l.SetHighWatermark(l.LogEndOffset())
	before := readRecords(t, l)
	// Groups are made of input segments of at most segment.bytes, as Kafka:
	// full segments are cleaned one by one, and the small cleaned segments
	// merge at the next cleaning.
	if st := mustCompact(t, l, e.clock.Now()); st.SegmentsAfter != st.SegmentsBefore || st.SegmentsBefore < 30 {
		t.Fatalf("first cleaning %+v", st)
	}
	sameRecords(t, readRecords(t, l), compacted(before, l.Segments()[l.NumSegments()-1].BaseOffset))
	empty := 0
	for _, s := range l.Segments() {
		if s.Size == 0 {
			empty++
		}
	}
	if empty == 0 {
		t.Fatal("no segment was emptied")
	}
	// Empty cleaned segments survive a full recovery.
	want := readRecords(t, l)
	l.Close()
	l = e.open(cfg, LogState{})
	defer l.Close()
	sameRecords(t, readRecords(t, l), want)
	l.SetHighWatermark(l.LogEndOffset())
	appendInNewSegment(t, e.clock, l, batchOf(rec("k1", "again", now)))
	l.SetHighWatermark(l.LogEndOffset())
	before = readRecords(t, l)
	segsBefore := l.NumSegments()
	st := mustCompact(t, l, e.clock.Now())
	if st.SegmentsAfter < 2 || st.SegmentsAfter >= st.SegmentsBefore || l.NumSegments() != segsBefore-st.SegmentsBefore+st.SegmentsAfter {
		t.Fatalf("grouping: %+v, %d segments before, %d after", st, segsBefore, l.NumSegments())
	}
	for _, s := range l.Segments() {
		if s.Size > cfg.SegmentBytes {
			t.Fatalf("cleaned segment of %d bytes", s.Size)
		}
	}
	got := readRecords(t, l)
	sameRecords(t, got, compacted(before, l.Segments()[l.NumSegments()-1].BaseOffset))
	gaps := 0
	for i := 1; i < len(got); i++ {
		if got[i].offset == got[i-1].offset+1 {
			continue
		}
		gaps++
		// A fetch at an offset that was removed returns the next batch.
		res, err := l.Read(got[i-1].offset+1, 1<<20, math.MaxInt64, false)
		if err != nil || len(res.Data) == 0 || res.FirstOffset != got[i].offset {
			t.Fatalf("read at removed offset %d: %+v %v", got[i-1].offset+1, res, err)
		}
		res.Release()
	}
	if gaps == 0 {
		t.Fatal("no gaps")
	}

	fe := newTestEnv(t)
	f := fe.open(cfg, LogState{})
	defer f.Close()
	for _, b := range readBatches(t, l) {
		if _, err := f.AppendAsFollower(b); err != nil {
			t.Fatal(err)
		}
	}
	sameRecords(t, readRecords(t, f), got)
}

// The idempotent producer's last batch stays (as an empty batch when all
// its records were superseded), so its retry is still a duplicate after
// compaction, after a reopen, and after producer state is rebuilt from the
// log alone.
func TestCompactKeepsLastBatchOfProducer(t *testing.T) {
	e := newTestEnv(t)
	cfg := compactConfig()
	l := e.open(cfg, LogState{})
	e.clock.Advance(2 * time.Minute)
	var last AppendInfo
	for seq := int32(0); seq < 5; seq++ {
		info, err := produce(t, l, 7, 0, seq, 1) // key "k"
		if err != nil {
			t.Fatal(err)
		}
		last = info
	}
	appendInNewSegment(t, e.clock, l, batchOf(rec("k", "newer", 0))) // supersedes every producer record
	appendInNewSegment(t, e.clock, l, batchOf(rec("active", "v", 0)))
	l.SetHighWatermark(l.LogEndOffset())
	st := mustCompact(t, l, e.clock.Now())
	if st.EmptyBatches != 1 || st.RecordsRetained != 1 {
		t.Fatalf("stats %+v", st)
	}
	batches := readBatches(t, l)
	h, _ := record.ParseBatchHeader(batches[0])
	if h.RecordCount != 0 || h.ProducerID != 7 || h.BaseSequence != 4 || h.BaseOffset != last.FirstOffset ||
		h.BaseTimestamp != -1 || len(batches[0]) != record.BatchHeaderSize {
		t.Fatalf("kept producer batch %+v (%d bytes)", h, len(batches[0]))
	}
	checkDuplicate := func(l *Log) {
		t.Helper()
		_, err := produce(t, l, 7, 0, 4, 1)
		var dup *DuplicateBatchError
		if !errors.As(err, &dup) || dup.FirstOffset != last.FirstOffset {
			t.Fatalf("retry of the last batch: %v", err)
		}
	}
	checkDuplicate(l)
	l.Close()
	l = e.open(cfg, LogState{CleanShutdown: true, RecoveryPoint: l.LogEndOffset()})
	checkDuplicate(l)
	crashClone(t, l, e)
	snaps, _ := filepath.Glob(filepath.Join(e.dir, "*"+snapshotSuffix))
	for _, s := range snaps {
		os.Remove(s)
	}
	l = e.open(cfg, LogState{})
	defer l.Close()
	checkDuplicate(l)
	if _, err := produce(t, l, 7, 0, 5, 1); err != nil {
		t.Fatalf("next sequence after compaction: %v", err)
	}
	// Once the producer moved on, the empty batch goes at the next cleaning.
	appendInNewSegment(t, e.clock, l, batchOf(rec("active", "v", 0)))
	l.SetHighWatermark(l.LogEndOffset())
	mustCompact(t, l, e.clock.Now())
	for _, b := range readBatches(t, l) {
		if h, _ := record.ParseBatchHeader(b); h.RecordCount == 0 {
			t.Fatalf("stale empty batch %+v kept", h)
		}
	}
}

// A crash at each step of the swap, then a reopen (full recovery, and the
// clean-shutdown path): the log holds either the old segments or the
// cleaned one, never both, never less.
func TestCompactCrashAtEachSwapStep(t *testing.T) {
	for _, tc := range []struct {
		step        string
		removeOldB  bool // the old .log at the group's base is gone too
		wantCleaned bool
	}{
		{"cleaned", false, false},
		{"swap", false, true},
		{"swap", true, true},
		{"deleted", false, true},
		{"deleted", true, true},
		{"renamed", false, true},
	} {
		for _, clean := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/removeOld=%v/cleanShutdown=%v", tc.step, tc.removeOldB, clean), func(t *testing.T) {
				e := newTestEnv(t)
				l := e.open(compactConfig(), LogState{})
				now := e.clock.Now().UnixMilli()
				for s := 0; s < 4; s++ {
					appendInNewSegment(t, e.clock, l, updates(s*15, 15, 6, now)...)
				}
				appendInNewSegment(t, e.clock, l, batchOf(rec("active", "v", now)))
				l.SetHighWatermark(l.LogEndOffset())
				before := readRecords(t, l)
				leo := l.LogEndOffset()
				crashDir := e.dir + "-crash"
				l.cleanerHook = func(step string) {
					if step == tc.step {
						if err := os.CopyFS(crashDir, os.DirFS(e.dir)); err != nil {
							t.Error(err)
						}
					}
				}
				mustCompact(t, l, e.clock.Now())
				after := readRecords(t, l)
				l.Close()
				if tc.removeOldB {
					if err := os.Remove(filepath.Join(crashDir, "00000000000000000000.log")); err != nil {
						t.Fatal(err)
					}
				}
				e.dir = crashDir
				st := LogState{}
				if clean {
					st = LogState{CleanShutdown: true, RecoveryPoint: leo, HighWatermark: leo}
				}
				l2 := e.open(compactConfig(), st)
				defer l2.Close()
				want := before
				if tc.wantCleaned {
					want = after
				}
				sameRecords(t, readRecords(t, l2), want)
				if l2.LogEndOffset() != leo {
					t.Fatalf("LEO %d, want %d", l2.LogEndOffset(), leo)
				}
				for name := range segmentFiles(t, e.dir) {
					if strings.HasSuffix(name, cleanedSuffix) || strings.HasSuffix(name, swapSuffix) {
						t.Fatalf("left %s", name)
					}
				}
				// The recovered log appends and cleans normally.
				appendInNewSegment(t, e.clock, l2, batchOf(rec("k1", "again", now)))
				l2.SetHighWatermark(l2.LogEndOffset())
				mustCompact(t, l2, e.clock.Now())
				got := readRecords(t, l2)
				sameRecords(t, got[:len(got)-1], compacted(want, leo))
			})
		}
	}
}

// A reader holding a batch of a segment that compaction replaces keeps
// valid bytes until it releases them.
func TestCompactReadersKeepOldSegments(t *testing.T) {
	e := newTestEnv(t)
	e.opts.MaxMappedSegments = 1
	l := e.open(compactConfig(), LogState{})
	defer l.Close()
	now := e.clock.Now().UnixMilli()
	for s := 0; s < 3; s++ {
		appendInNewSegment(t, e.clock, l, updates(s*10, 10, 2, now)...)
	}
	appendInNewSegment(t, e.clock, l, batchOf(rec("active", "v", now)))
	l.SetHighWatermark(l.LogEndOffset())
	held, err := l.Read(0, 1<<20, math.MaxInt64, true)
	if err != nil {
		t.Fatal(err)
	}
	snapshot := slices.Clone(held.Data)
	mustCompact(t, l, e.clock.Now())
	if !bytes.Equal(held.Data, snapshot) {
		t.Fatal("held bytes changed under the reader")
	}
	held.Release()
	if got := readRecords(t, l); len(got) != 3 {
		t.Fatalf("records %v", got)
	}
}

// A truncation while a cleaning runs aborts it: nothing is swapped, the
// .cleaned files go, the checkpoint does not move.
func TestCompactAbortedByTruncation(t *testing.T) {
	e := newTestEnv(t)
	l := e.open(compactConfig(), LogState{})
	defer l.Close()
	now := e.clock.Now().UnixMilli()
	for s := 0; s < 3; s++ {
		appendInNewSegment(t, e.clock, l, updates(s*10, 10, 2, now)...)
	}
	appendInNewSegment(t, e.clock, l, batchOf(rec("active", "v", now)))
	l.SetHighWatermark(l.LogEndOffset())
	before := readRecords(t, l)
	l.cleanerHook = func(step string) {
		if step == "cleaned" {
			if err := l.TruncateTo(l.LogEndOffset() - 1); err != nil {
				t.Error(err)
			}
		}
	}
	st := mustCompact(t, l, e.clock.Now())
	if st.Cleaned || st.Reason != "aborted" || l.cleanerOffset.Load() != 0 {
		t.Fatalf("stats %+v, checkpoint %d", st, l.cleanerOffset.Load())
	}
	sameRecords(t, readRecords(t, l), before[:len(before)-1])
	for name := range segmentFiles(t, e.dir) {
		if strings.HasSuffix(name, cleanedSuffix) {
			t.Fatalf("left %s", name)
		}
	}
}

// A tiny dedupe buffer maps part of the dirty section; the next cleaning
// continues from there, and the result is the same.
func TestCompactPartialOffsetMap(t *testing.T) {
	e := newTestEnv(t)
	e.opts.CleanerDedupeBufferBytes = 4 * (2 + offsetMapEntryOverhead) // four keys
	l := e.open(compactConfig(), LogState{})
	defer l.Close()
	now := e.clock.Now().UnixMilli()
	for s := 0; s < 4; s++ {
		appendInNewSegment(t, e.clock, l, updates(s*10, 10, 10, now)...) // k0..k9 in every segment
	}
	appendInNewSegment(t, e.clock, l, batchOf(rec("active", "v", now)))
	active := l.Segments()[4].BaseOffset
	l.SetHighWatermark(l.LogEndOffset())
	before := readRecords(t, l)
	st := mustCompact(t, l, e.clock.Now())
	if st.EndOffset != 4 || st.Keys != 4 {
		t.Fatalf("partial map: %+v", st)
	}
	for i := 0; st.EndOffset < active; i++ {
		if i > 20 {
			t.Fatal("no progress")
		}
		st = mustCompact(t, l, e.clock.Now())
	}
	sameRecords(t, readRecords(t, l), compacted(before, active))
}

// The cleaner drops records without a key (Kafka counts them invalid).
func TestCompactDropsKeylessRecords(t *testing.T) {
	e := newTestEnv(t)
	l := e.open(compactConfig(), LogState{})
	defer l.Close()
	appendInNewSegment(t, e.clock, l, batchOf(kv{value: []byte("no key")}, rec("a", "1", 0)))
	appendInNewSegment(t, e.clock, l, batchOf(rec("active", "v", 0)))
	l.SetHighWatermark(l.LogEndOffset())
	if st := mustCompact(t, l, e.clock.Now()); st.KeylessRemoved != 1 {
		t.Fatalf("stats %+v", st)
	}
	if got := readRecords(t, l); len(got) != 2 || got[0].key != "a" {
		t.Fatalf("records %v", got)
	}
}

// cleanup.policy=compact,delete: both compaction and time retention.
func TestCompactDeletePolicy(t *testing.T) {
	e := newTestEnv(t)
	cfg := compactConfig()
	cfg.CompactDelete = true
	cfg.RetentionMs = time.Hour.Milliseconds()
	l := e.open(cfg, LogState{})
	defer l.Close()
	now := e.clock.Now().UnixMilli()
	appendInNewSegment(t, e.clock, l, updates(0, 10, 2, now-2*3600_000)...)
	appendInNewSegment(t, e.clock, l, updates(10, 10, 2, now)...)
	appendInNewSegment(t, e.clock, l, batchOf(rec("active", "v", now)))
	l.SetHighWatermark(l.LogEndOffset())
	if st := mustCompact(t, l, e.clock.Now()); !st.Cleaned {
		t.Fatalf("compact,delete not compacted: %+v", st)
	}
	if n, _ := l.DeleteOldSegments(e.clock.Now()); n != 0 {
		t.Fatal("the merged segment holds fresh records: nothing to delete")
	}
	e.clock.Advance(2 * time.Hour)
	if n, _ := l.DeleteOldSegments(e.clock.Now()); n != 1 {
		t.Fatalf("retention deleted %d", n)
	}
}

func TestCompactConfigValidation(t *testing.T) {
	for _, mut := range []func(*LogConfig){
		func(c *LogConfig) { c.DeleteRetentionMs = -1 },
		func(c *LogConfig) { c.MinCompactionLagMs = -1 },
		func(c *LogConfig) { c.MaxCompactionLagMs = -5 },
		func(c *LogConfig) { c.MinCleanableDirtyRatio = 1.5 },
		func(c *LogConfig) { c.MinCompactionLagMs, c.MaxCompactionLagMs = 10, 5 },
	} {
		c := compactConfig()
		mut(&c)
		if err := c.Validate(); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
	d := LogConfig{}.withDefaults()
	if d.DeleteRetentionMs != 86400000 || d.MaxCompactionLagMs != math.MaxInt64 || d.MinCleanableDirtyRatio != 0.5 || d.MinCompactionLagMs != 0 {
		t.Fatalf("defaults %+v", d)
	}
}

// The Manager's cleaner goroutine cleans due logs on its ticker and
// persists the cleaner offsets (cleaner-offset-checkpoint), so that a
// restart does not clean everything again.
func TestManagerCleanerLoopAndCheckpoint(t *testing.T) {
	root := t.TempDir()
	m, clock, lb, ft := newTestManager(t, []string{root})
	tp := TopicPartition{Topic: "__consumer_offsets", Partition: 0}
	cfg := compactConfig()
	l, err := m.Open(tp, [16]byte{}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	plain, _ := m.Open(TopicPartition{Topic: "plain", Partition: 0}, [16]byte{}, smallConfig())
	now := clock.Now().UnixMilli()
	for s := 0; s < 3; s++ {
		appendInNewSegment(t, clock, l, updates(s*10, 10, 3, now)...)
	}
	appendInNewSegment(t, clock, l, batchOf(rec("active", "v", now)))
	l.SetHighWatermark(l.LogEndOffset())
	appendN(t, plain, 5, 1, now)
	plain.SetHighWatermark(plain.LogEndOffset())
	active := l.Segments()[l.NumSegments()-1].BaseOffset

	m.Run(t.Context())
	ft.chans[15*time.Second] <- clock.Now()
	want := fmt.Sprintf("__consumer_offsets 0 %d\n", active)
	waitFor(t, "cleaner checkpoint", func() bool {
		data, _ := os.ReadFile(filepath.Join(root, CleanerOffsetCheckpointFile))
		return strings.Contains(string(data), want)
	})
	if got := readRecords(t, l); len(got) != 4 || !strings.Contains(lb.String(), "storage: cleaned log") {
		t.Fatalf("records %v", got)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(root, CleanerOffsetCheckpointFile))
	if string(data) != "0\n1\n"+want {
		t.Fatalf("cleaner-offset-checkpoint %q", data)
	}

	m2, _, _, _ := newTestManager(t, []string{root})
	defer m2.Close()
	l2, err := m2.Open(tp, [16]byte{}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := l2.compact(clock.Now(), nil, true); err != nil || st.Cleaned || st.FirstDirtyOffset != active {
		t.Fatalf("after restart: %+v %v", st, err)
	}
}

// Appends, fetches and cleanings run together; every read sees valid
// batches in order and the end result keeps the latest value per key.
func TestCompactConcurrentWithAppendsAndReads(t *testing.T) {
	e := newTestEnv(t)
	e.opts.MaxMappedSegments = 2
	cfg := compactConfig()
	cfg.SegmentBytes = 2048
	l := e.open(cfg, LogState{})
	defer l.Close()

	var stop atomic.Bool
	var wg sync.WaitGroup
	errc := make(chan error, 8)
	for range 2 {
		wg.Go(func() {
			for off := int64(0); !stop.Load(); {
				res, err := l.Read(off, 4096, math.MaxInt64, true)
				if err != nil {
					errc <- err
					return
				}
				prev := int64(-1)
				it := record.VerifiedBatches(res.Data)
				for it.Next() {
					if it.Header().BaseOffset <= prev {
						errc <- errors.New("batches out of order")
					}
					prev = it.Header().LastOffset()
				}
				if it.Err() != nil {
					errc <- it.Err()
				}
				res.Release()
				off = res.NextOffset
				if len(res.Data) == 0 {
					off = l.LogStartOffset()
				}
			}
		})
	}
	var written []gotRec
	appended := make(chan struct{})
	go func() {
		defer close(appended)
		for i := 0; i < 1500; i++ {
			r := rec(fmt.Sprintf("k%d", i%25), fmt.Sprintf("v%d", i), int64(i))
			info, err := l.AppendAsLeader(leaderBatches(t, batchOf(r).build(t)), 0, AppendOptions{})
			if err != nil {
				errc <- err
				return
			}
			l.SetHighWatermark(info.LastOffset + 1)
			written = append(written, gotRec{offset: info.FirstOffset, key: string(r.key), value: string(r.value),
				ts: r.ts, header: string(r.key) + "/" + string(r.value)})
		}
	}()
	cleanings := 0
	for done := false; !done; {
		select {
		case <-appended:
			done = true
		default:
		}
		st, err := l.Compact(e.clock.Now())
		if err != nil {
			t.Fatal(err)
		}
		if st.Cleaned {
			cleanings++
		}
	}
	stop.Store(true)
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	mustCompact(t, l, e.clock.Now())
	if cleanings == 0 {
		t.Fatal("no cleaning ran during the appends")
	}
	sameRecords(t, readRecords(t, l), compacted(written, l.Segments()[l.NumSegments()-1].BaseOffset))
}

// Corrupt data makes the cleaning fail without touching the log; the
// background cleaner then skips the log (Kafka's uncleanable partitions).
func TestCompactCorruptSegmentIsUncleanable(t *testing.T) {
	e := newTestEnv(t)
	l := e.open(compactConfig(), LogState{})
	defer l.Close()
	appendInNewSegment(t, e.clock, l, updates(0, 10, 2, 0)...)
	appendInNewSegment(t, e.clock, l, batchOf(rec("active", "v", 0)))
	l.SetHighWatermark(l.LogEndOffset())
	path := segmentFileName(e.dir, 0, logSuffix)
	data, _ := os.ReadFile(path)
	data[len(data)-2] ^= 0xff // inside the last batch's records: its CRC fails
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Compact(e.clock.Now()); !errors.Is(err, record.ErrCorruptBatch) {
		t.Fatalf("cleaning corrupt data: %v", err)
	}
	if st, err := l.compact(e.clock.Now(), nil, true); err != nil || st.Cleaned || !strings.Contains(st.Reason, "uncleanable") {
		t.Fatalf("background cleaning of an uncleanable log: %+v %v", st, err)
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, data) || l.NumSegments() != 2 {
		t.Fatal("the corrupt segment was rewritten")
	}
	for name := range segmentFiles(t, e.dir) {
		if strings.HasSuffix(name, cleanedSuffix) {
			t.Fatalf("left %s", name)
		}
	}
}

// A rebuilt LogAppendTime batch keeps its type and its maxTimestamp, the
// timestamp consumers see for each record.
func TestCompactLogAppendTimeBatch(t *testing.T) {
	e := newTestEnv(t)
	l := e.open(compactConfig(), LogState{})
	defer l.Close()
	e.clock.Advance(2 * time.Minute)
	appendTime := e.clock.Now().Add(-time.Second)
	b := batchOf(rec("a", "1", 5), rec("b", "1", 6), rec("c", "1", 7))
	b.codec = record.CompressionLZ4
	if _, err := l.AppendAsLeader(leaderBatches(t, b.build(t)), 0, AppendOptions{LogAppendTime: true, Now: appendTime}); err != nil {
		t.Fatal(err)
	}
	appendInNewSegment(t, e.clock, l, batchOf(rec("b", "2", 8)))
	appendInNewSegment(t, e.clock, l, batchOf(rec("active", "v", 9)))
	l.SetHighWatermark(l.LogEndOffset())
	mustCompact(t, l, e.clock.Now())
	batches := readBatches(t, l)
	h, _ := record.ParseBatchHeader(batches[0])
	got := decodeGot(t, batches[0])
	if h.TimestampType() != record.LogAppendTime || h.MaxTimestamp != appendTime.UnixMilli() || h.Compression() != record.CompressionLZ4 ||
		len(got) != 2 || got[0].ts != appendTime.UnixMilli() || got[1].key != "c" || got[1].offset != 2 {
		t.Fatalf("rebuilt LogAppendTime batch %+v records %v", h, got)
	}
}

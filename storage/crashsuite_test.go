package storage

import (
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kbroker/kbroker/internal/testsupport"
	"github.com/kbroker/kbroker/record"
	"github.com/kbroker/kbroker/storage/vfs"
)

// The storage crash suite (issue 19): seeded sequences of appends, rolls,
// flushes, truncations, compaction, retention and checkpoint writes on a
// Manager over a vfs.CrashFS, with the power cut at a random file system
// call (inside any of those operations) and a random part of the unsynced
// writes kept. After the reboot the log must be a prefix of what was
// written, hold every flushed record, serve no torn batch, and its indexes,
// epoch cache and checkpoints must agree with it.
//
//	go test -run TestCrashSuite ./storage/ -crash.seeds=100000 -crash.seed=N
var (
	crashSeeds = flag.Int("crash.seeds", 0, "crash suite: number of seeded sequences (default 600 under -race, 2500 without; -short 100)")
	crashSeed  = flag.Int64("crash.seed", -1, "crash suite: run only this seed")
)

// crashRecord is one appended record: its unique value and key.
type crashRecord struct {
	offset int64
	key    string
}

// crashModel is what the test knows was written and what must survive.
type crashModel struct {
	// written maps each value ever appended to its offset and key.
	written map[string]crashRecord
	// required: values whose record was flushed (and not since truncated,
	// deleted by retention or superseded by compaction), by offset.
	required map[int64]string
	// current: the values in the log now, by offset (for new requirements).
	current map[int64]string
	// batchOf: the base offset of the batch holding each current offset.
	batchOf map[int64]int64
	// logStart is the log start offset before the cut; retentionInFlight
	// says the cut may have hit a retention that moved it.
	logStart           int64
	retentionInFlight  bool
	compacted          bool
	cleanedUpTo        int64
	nextValue          int
	leaderEpoch        int32
	expectedEpochStart map[int32]int64
	// nextProducer numbers the transactional producers of
	// crashAbortedTxn; aborted holds their records' values (the cleaner
	// may remove them).
	nextProducer int64
	aborted      map[string]bool
}

func TestCrashSuite(t *testing.T) {
	n := *crashSeeds
	if n == 0 {
		n = 2500
		if raceEnabled {
			n = 600
		}
		if testing.Short() {
			n = 100
		}
	}
	first, last := int64(0), int64(n)
	if *crashSeed >= 0 {
		first, last = *crashSeed, *crashSeed+1
	}
	root := crashRoot(t)
	start := time.Now()
	cuts := 0
	for seed := first; seed < last; seed++ {
		dir := filepath.Join(root, strconv.FormatInt(seed, 10))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if runCrashSequence(t, seed, dir) {
			cuts++
		}
		os.RemoveAll(dir)
		if t.Failed() {
			t.Fatalf("seed %d failed; replay with -run TestCrashSuite -crash.seed=%d -v", seed, seed)
		}
	}
	t.Logf("%d sequences (%d cut inside an operation) in %v", last-first, cuts, time.Since(start).Round(time.Millisecond))
}

// crashConfig draws the topic configuration of a sequence.
func crashConfig(rng *rand.Rand) LogConfig {
	c := DefaultLogConfig()
	c.SegmentBytes = int64(2048 + rng.IntN(4)*2048)
	c.IndexIntervalBytes = int32(128 << rng.IntN(3))
	c.MaxIndexBytes = int32(256 << rng.IntN(3))
	c.PreallocateChunkBytes = 1024
	switch rng.IntN(3) {
	case 0:
		c.Compact = true
		c.MinCleanableDirtyRatio = 0.01
	case 1:
		c.RetentionBytes = int64(4096 + rng.IntN(3)*4096)
	}
	if rng.IntN(4) == 0 {
		c.FlushMessages = 1
	}
	return c
}

// crashRun is one seeded sequence, as both crash suites run it: its
// configuration, clock and model of what was written and must survive.
type crashRun struct {
	seed   int64
	rng    *rand.Rand
	clock  *testsupport.Clock
	cfg    LogConfig
	logDir string
	model  *crashModel
}

var crashTP = TopicPartition{Topic: "crash", Partition: 0}

// newCrashRun draws seed's configuration; its log dir is dir/data.
func newCrashRun(seed int64, dir string) *crashRun {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x19))
	return &crashRun{seed: seed, rng: rng, clock: newFakeClock(), cfg: crashConfig(rng), logDir: filepath.Join(dir, "data"),
		model: &crashModel{written: map[string]crashRecord{}, required: map[int64]string{}, current: map[int64]string{},
			batchOf: map[int64]int64{}, expectedEpochStart: map[int32]int64{}, aborted: map[string]bool{}}}
}

// run starts a Manager on fsys, arms the cut (after the start: arm draws
// the cut point from the sequence's random source), opens the log and runs
// the sequence's steps until one fails (the cut) or all ran; hit reports a
// cut inside an operation.
func (r *crashRun) run(t *testing.T, fsys vfs.FS, arm func()) (m *Manager, hit bool) {
	m, err := NewManager([]string{r.logDir}, ManagerOptions{FS: fsys, Now: r.clock.Now, Logger: discardLogger(),
		ResourceLimits: unlimitedResources})
	if err != nil {
		t.Fatalf("seed %d: NewManager: %v", r.seed, err)
	}
	arm()
	l, err := m.Open(crashTP, [16]byte{1}, r.cfg)
	if err == nil {
		hit = crashSteps(t, r.seed, r.rng, r.clock, m, l, r.model)
	} else if !errors.Is(err, vfs.ErrPowerCut) {
		t.Fatalf("seed %d: open: %v", r.seed, err)
	}
	return m, hit
}

// reopenAndCheck reopens the log on the operating system's file system,
// as after the reboot, and checks it against the model.
func (r *crashRun) reopenAndCheck(t *testing.T) {
	m2, err := NewManager([]string{r.logDir}, ManagerOptions{Now: r.clock.Now, Logger: discardLogger(), ResourceLimits: unlimitedResources})
	if err != nil {
		t.Fatalf("seed %d: reopen manager: %v", r.seed, err)
	}
	defer m2.Close()
	l2, err := m2.Open(crashTP, [16]byte{1}, r.cfg)
	if err != nil {
		t.Fatalf("seed %d: reopen log: %v", r.seed, err)
	}
	checkRecovered(t, r.seed, l2, r.model)
}

// runCrashSequence runs one seed and reports whether the cut hit an
// operation (rather than the end of the sequence).
func runCrashSequence(t *testing.T, seed int64, dir string) bool {
	r := newCrashRun(seed, dir)
	if err := os.MkdirAll(r.logDir, 0o755); err != nil {
		t.Fatal(err)
	}
	cfs, err := vfs.NewCrashFS(dir)
	if err != nil {
		t.Fatal(err)
	}
	if *crashTrace {
		cfs.SetInjector(func(op vfs.Op, path string) error {
			t.Logf("%s %s", op, strings.TrimPrefix(path, dir))
			return nil
		})
	}
	m, hit := r.run(t, cfs, func() {
		cfs.CutAfter(int64(1+r.rng.IntN(400)), rand.New(rand.NewPCG(uint64(seed), 0xc07)))
	})
	img := cfs.Cut(rand.New(rand.NewPCG(uint64(seed), 0xc07)))
	m.Close() // fails its writes: the power is off; releases mappings
	if err := cfs.Restore(img); err != nil {
		t.Fatal(err)
	}
	r.reopenAndCheck(t)
	return hit
}

func unlimitedResources() (ResourceLimits, uint64, error) {
	return ResourceLimits{OpenFiles: 1 << 20, OpenFilesHard: 1 << 20, MaxMapCount: 1 << 20}, 0, nil
}

// crashSteps runs random operations until the power is cut or 60 steps;
// it reports whether the cut came during them.
func crashSteps(t *testing.T, seed int64, rng *rand.Rand, clock *testsupport.Clock, m *Manager, l *Log, model *crashModel) bool {
	for step := 0; step < 60; step++ {
		clock.Advance(time.Duration(rng.IntN(2000)) * time.Millisecond)
		model.logStart = l.LogStartOffset()
		var err error
		switch k := rng.IntN(20); {
		case k < 10:
			err = crashAppend(t, rng, l, model)
		case k < 11:
			err = crashAbortedTxn(t, rng, l, model)
		case k < 14:
			leo := l.LogEndOffset()
			if err = l.Flush(); err == nil {
				model.requireBelow(leo)
			}
		case k < 15:
			// Never below what the cleaner may have compacted (Kafka
			// cleans below the HW, which a truncation does not pass).
			lo := max(l.LogStartOffset(), min(model.cleanedUpTo, l.LogEndOffset()))
			to := lo + rng.Int64N(l.LogEndOffset()-lo+1)
			if base, ok := model.batchOf[to]; ok {
				to = base // truncation removes the whole batch holding to
			}
			model.truncate(to)
			if *crashTrace {
				t.Logf("truncate to %d", to)
			}
			if err = l.TruncateTo(to); err == nil {
				l.SetHighWatermark(min(l.HighWatermark(), to))
			}
		case k < 16:
			if l.Config().Compact {
				// The cleaner works below the HW; a record it drops is
				// superseded by one that may be lost with the page cache
				// unless the HW counts only flushed data (durable acks).
				l.SetHighWatermark(l.RecoveryPoint())
				model.cleanedUpTo = max(model.cleanedUpTo, l.HighWatermark())
				model.compacted = true
				_, err = l.Compact(clock.Now())
			}
		case k < 17:
			l.SetHighWatermark(l.LogEndOffset())
			model.retentionInFlight = true
			if _, err = l.DeleteOldSegments(clock.Now()); err == nil {
				model.retentionInFlight = false
				model.dropBelow(l.LogStartOffset())
			}
		case k < 19:
			l.SetHighWatermark(l.LogEndOffset())
			err = m.WriteCheckpoints()
		default:
			model.leaderEpoch++
		}
		if err == nil {
			model.logStart = l.LogStartOffset()
		}
		if *crashTrace {
			t.Logf("step %d: start %d leo %d rp %d hw %d err %v", step, l.LogStartOffset(), l.LogEndOffset(), l.RecoveryPoint(), l.HighWatermark(), err)
		}
		if err != nil {
			if errors.Is(err, vfs.ErrPowerCut) {
				return true
			}
			if errors.Is(err, ErrLogFailed) || errors.Is(err, ErrLogClosed) {
				return true // the cut failed an earlier call of the log
			}
			t.Fatalf("seed %d step %d: %v", seed, step, err)
		}
	}
	return false
}

// crashBatch builds a batch of n records with unique values (returned
// with their keys) and header h's producer fields.
func crashBatch(rng *rand.Rand, model *crashModel, n int, h record.BatchHeader) (batch []byte, vals, keys []string) {
	var recs []byte
	ts := int64(1_700_000_000_000 + model.nextValue)
	for i := range n {
		v := fmt.Sprintf("v%06d-%s", model.nextValue, pad(rng))
		model.nextValue++
		k := fmt.Sprintf("k%d", rng.IntN(8))
		vals, keys = append(vals, v), append(keys, k)
		var r []byte
		r = append(r, 0)
		r = appendVarint(r, int64(i))
		r = appendVarint(r, int64(i))
		r = appendVarint(r, int64(len(k)))
		r = append(r, k...)
		r = appendVarint(r, int64(len(v)))
		r = append(r, v...)
		r = appendVarint(r, 0)
		recs = appendVarint(recs, int64(len(r)))
		recs = append(recs, r...)
	}
	h.LastOffsetDelta, h.BaseTimestamp, h.MaxTimestamp, h.RecordCount = int32(n-1), ts, ts+int64(n-1), int32(n)
	return record.NewBatch(h, recs).Bytes(), vals, keys
}

// crashAppend appends 1-3 batches of 1-4 records; values are unique.
func crashAppend(t *testing.T, rng *rand.Rand, l *Log, model *crashModel) error {
	var buf []byte
	var vals, keys []string
	var counts []int
	for range 1 + rng.IntN(3) {
		n := 1 + rng.IntN(4)
		counts = append(counts, n)
		b, v, k := crashBatch(rng, model, n, record.BatchHeader{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1})
		buf, vals, keys = append(buf, b...), append(vals, v...), append(keys, k...)
	}
	return crashAppendBatches(t, l, model, buf, vals, keys, counts, AppendOptions{})
}

// crashAbortedTxn appends a transaction of a new producer (one batch of
// 1-4 records, verified as a partition leader verifies it) and its ABORT
// marker: the segment holding the marker gets a .txnindex entry, which
// checkTxnIndex compares with the recovered log.
func crashAbortedTxn(t *testing.T, rng *rand.Rand, l *Log, model *crashModel) error {
	pid := 1000 + model.nextProducer
	model.nextProducer++
	n := 1 + rng.IntN(4)
	b, vals, keys := crashBatch(rng, model, n, record.BatchHeader{ProducerID: pid, ProducerEpoch: 0, BaseSequence: 0,
		Attributes: record.AttrTransactional})
	for _, v := range vals {
		model.aborted[v] = true
	}
	guard := l.BeginTxnVerification(pid, 0, false)
	if err := crashAppendBatches(t, l, model, b, vals, keys, []int{n}, AppendOptions{TxnVerification: guard}); err != nil {
		return err
	}
	marker := record.NewEndTxnMarkerBatch(pid, 0, 0, record.EndTxnMarker{Type: record.ControlAbort})
	return crashAppendBatches(t, l, model, marker.Bytes(), nil, nil, []int{1}, AppendOptions{})
}

// crashAppendBatches appends buf (batches of counts records holding vals
// and keys; a control batch has none) and records it in the model.
func crashAppendBatches(t *testing.T, l *Log, model *crashModel, buf []byte, vals, keys []string, counts []int, opts AppendOptions) error {
	info, err := l.AppendAsLeader(leaderBatches(t, buf), model.leaderEpoch, opts)
	if errors.Is(err, ErrRecordBatchTooLarge) {
		return nil // refused whole (MESSAGE_TOO_LARGE): nothing was written
	}
	if err != nil {
		if errors.Is(err, ErrLogFailed) || errors.Is(err, vfs.ErrPowerCut) || errors.Is(err, ErrDiskFull) {
			// The write may or may not have reached the page cache: the
			// values may come back; they are not required.
			for i, v := range vals {
				model.written[v] = crashRecord{offset: info.FirstOffset + int64(i), key: keys[i]}
			}
			if !errors.Is(err, ErrDiskFull) {
				return err
			}
		}
		return err
	}
	if _, ok := model.expectedEpochStart[model.leaderEpoch]; !ok {
		model.expectedEpochStart[model.leaderEpoch] = info.FirstOffset
	}
	for i, v := range vals {
		off := info.FirstOffset + int64(i)
		model.written[v] = crashRecord{offset: off, key: keys[i]}
		model.current[off] = v
	}
	base := info.FirstOffset
	for _, n := range counts {
		for off := base; off < base+int64(n); off++ {
			model.batchOf[off] = base
		}
		base += int64(n)
	}
	if l.Durable() {
		// Group commit: the append is queued for the dir's next round.
		if err := l.WaitDurable(); err != nil {
			return err
		}
		model.requireBelow(info.LastOffset + 1)
	}
	return nil
}

// pad is 0-200 bytes, so that batches cross sectors and pages.
func pad(rng *rand.Rand) string {
	b := make([]byte, rng.IntN(200))
	for i := range b {
		b[i] = 'a' + byte(rng.IntN(26))
	}
	return string(b)
}

func (m *crashModel) requireBelow(leo int64) {
	for off, v := range m.current {
		if off < leo {
			m.required[off] = v
		}
	}
}

func (m *crashModel) truncate(to int64) {
	for off := range m.current {
		if off >= to {
			delete(m.current, off)
			delete(m.required, off)
		}
	}
	// Offsets past the cut may be written again in other batches: a stale
	// entry would round a later truncation to a batch that is gone.
	for off := range m.batchOf {
		if off >= to {
			delete(m.batchOf, off)
		}
	}
}

func (m *crashModel) dropBelow(start int64) {
	for off := range m.current {
		if off < start {
			delete(m.current, off)
			delete(m.required, off)
		}
	}
}

// checkRecovered checks the reopened log against the model.
func checkRecovered(t *testing.T, seed int64, l *Log, model *crashModel) {
	t.Helper()
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("seed %d: "+format, append([]any{seed}, args...)...)
	}
	start, leo := l.LogStartOffset(), l.LogEndOffset()
	if hw, rp := l.HighWatermark(), l.RecoveryPoint(); hw < start || hw > leo || rp < start || rp > leo {
		fail("offsets out of order: start %d hw %d recovery point %d leo %d", start, hw, rp, leo)
	}
	if start > model.logStart && !model.retentionInFlight {
		fail("log start %d passed the log start %d of before the cut", start, model.logStart)
	}
	got := map[int64]crashRecord{}
	keysAfter := map[string]int64{} // key -> largest offset recovered
	next := int64(-1)
	for off := start; off < leo; {
		res, err := l.Read(off, 1<<30, leo, true)
		if err != nil {
			fail("read at %d: %v", off, err)
		}
		if len(res.Data) == 0 {
			if l.Config().Compact {
				break // a compacted log may end in a hole (see recovery's gap rule)
			}
			fail("read at %d below the log end offset %d returned nothing", off, leo)
		}
		off = res.NextOffset
		it := record.Batches(res.Data)
		for it.Next() {
			h := it.Header()
			if _, err := record.Validate(it.Batch()); err != nil {
				fail("torn or corrupt batch at %d served: %v", h.BaseOffset, err)
			}
			if next >= 0 && h.BaseOffset < next {
				fail("batch at %d overlaps the previous one ending at %d", h.BaseOffset, next)
			}
			if !l.Config().Compact && next >= 0 && h.BaseOffset != next {
				fail("gap: batch at %d after %d", h.BaseOffset, next)
			}
			next = h.NextOffset()
			if e := epochOf(l.EpochCache().Entries(), h.BaseOffset); e != h.PartitionLeaderEpoch {
				fail("epoch cache gives epoch %d at offset %d, the batch has %d", e, h.BaseOffset, h.PartitionLeaderEpoch)
			}
			if h.IsControl() {
				continue // a transaction marker (crashAbortedTxn)
			}
			recs, err := record.Records(it.Batch())
			if err != nil {
				fail("records of %d: %v", h.BaseOffset, err)
			}
			for recs.Next() {
				r := recs.Record()
				w, ok := model.written[string(r.Value)]
				if !ok || w.offset != recs.Offset() || w.key != string(r.Key) {
					fail("record at %d (%q=%q) was never written there (written: %+v, %v)", recs.Offset(), r.Key, r.Value, w, ok)
				}
				got[recs.Offset()] = w
				keysAfter[w.key] = max(keysAfter[w.key], recs.Offset())
			}
			if recs.Err() != nil {
				fail("records of %d: %v", h.BaseOffset, recs.Err())
			}
		}
		res.Release()
		if it.Err() != nil {
			fail("read returned torn data: %v", it.Err())
		}
	}
	if next >= 0 && next != leo && !l.Config().Compact {
		fail("batches end at %d, log end offset %d", next, leo)
	}
	for off, v := range model.required {
		if off < start && model.retentionInFlight {
			continue
		}
		if r, ok := got[off]; ok && r == model.written[v] {
			continue
		}
		if model.compacted && (keysAfter[model.written[v].key] > off || model.aborted[v]) {
			continue // superseded by a later record of its key, or of an aborted transaction
		}
		fail("flushed record at %d (%s, key %s) lost; log [%d, %d) holds %+v there, compact %v", off, v[:7], model.written[v].key, start, leo, got[off], l.Config().Compact)
	}
	checkIndexes(t, seed, l)
	checkTxnIndex(t, seed, l, model)
}

// checkTxnIndex compares the recovered aborted-transaction index with the
// ABORT markers of the recovered log, unless the cleaner ran: each marker
// has its entry (producer, marker offset) and each entry its marker. (A
// cleaning that removed a transaction's data drops its entry while the
// marker waits for its delete horizon, as Kafka's cleaner does.)
func checkTxnIndex(t *testing.T, seed int64, l *Log, model *crashModel) {
	t.Helper()
	if model.compacted {
		return
	}
	start, leo := l.LogStartOffset(), l.LogEndOffset()
	type key struct{ pid, marker int64 }
	markers := map[key]bool{}
	for off := start; off < leo; {
		res, err := l.Read(off, 1<<30, leo, true)
		if err != nil || len(res.Data) == 0 {
			break // checkRecovered read the log already
		}
		off = res.NextOffset
		it := record.Batches(res.Data)
		for it.Next() {
			if h := it.Header(); h.IsControl() {
				if recs, err := record.Records(it.Batch()); err == nil && recs.Next() {
					if typ, err := record.ParseControlKey(recs.Record().Key); err == nil && typ == record.ControlAbort {
						markers[key{h.ProducerID, h.BaseOffset}] = true
					}
				}
			}
		}
		res.Release()
	}
	entries := map[key]bool{}
	for _, a := range l.AbortedTransactions(start, leo) {
		entries[key{a.ProducerID, a.LastOffset}] = true
		if a.LastOffset >= start && !markers[key{a.ProducerID, a.LastOffset}] {
			t.Fatalf("seed %d: transaction index entry %+v names no ABORT marker of the recovered log [%d, %d)", seed, a, start, leo)
		}
	}
	for k := range markers {
		if !entries[k] {
			t.Fatalf("seed %d: ABORT marker of producer %d at %d has no transaction index entry", seed, k.pid, k.marker)
		}
	}
}

// epochOf is the epoch the cache assigns to offset.
func epochOf(entries []EpochEntry, offset int64) int32 {
	e := UndefinedEpoch
	for _, x := range entries {
		if x.StartOffset <= offset {
			e = x.Epoch
		}
	}
	return e
}

// checkIndexes validates every segment's indexes against its log: every
// offset index entry names the last offset of the batch at its position,
// every time index entry an offset inside the segment; and a lookup of
// every offset through the index finds its batch.
func checkIndexes(t *testing.T, seed int64, l *Log) {
	t.Helper()
	segs := l.segmentList()
	for i, s := range segs {
		ok, err := l.acquireSegment(s, i == len(segs)-1)
		if err != nil || !ok {
			t.Fatalf("seed %d: acquire %s: %v", seed, s, err)
		}
		size := s.size.Load()
		if err := s.index.check(size); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if err := s.timeIndex.check(s.nextOffset.Load()); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		for j := int64(0); j < s.index.count.Load(); j++ {
			e := s.index.at(j)
			h, _, ok := batchAt(s.data, e.Position, size)
			if !ok || h.LastOffset() != e.Offset {
				t.Fatalf("seed %d: %s index entry (%d, %d) does not name a batch's last offset", seed, s, e.Offset, e.Position)
			}
		}
		s.release()
	}
	for off := l.LogStartOffset(); off < l.LogEndOffset(); off++ {
		res, err := l.Read(off, 1, l.LogEndOffset(), true)
		if err != nil {
			t.Fatalf("seed %d: read %d: %v", seed, off, err)
		}
		it := record.Batches(res.Data)
		if it.Next() {
			if h := it.Header(); h.LastOffset() < off {
				t.Fatalf("seed %d: read at %d returned batch [%d, %d]", seed, off, h.BaseOffset, h.LastOffset())
			}
		}
		res.Release()
	}
}

// crashTrace, when set, prints every call of a seed's CrashFS.
var crashTrace = flag.Bool("crash.trace", false, "crash suite: log every file system call")

// crashRoot is a temporary directory on tmpfs when there is one: the crash
// model needs no disk, and a disk's metadata journal makes thousands of
// sequences take minutes instead of seconds.
func crashRoot(t *testing.T) string {
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		if dir, err := os.MkdirTemp("/dev/shm", "kbroker-crash-"); err == nil {
			t.Cleanup(func() { os.RemoveAll(dir) })
			return dir
		}
	}
	return t.TempDir()
}

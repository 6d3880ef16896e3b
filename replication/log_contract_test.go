package replication

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"log/slog"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/kbroker/kbroker/record"
	"github.com/kbroker/kbroker/storage"
)

// The ReplicaLog contract, run against *storage.Log and the simulator's
// memLog alike so that the fake cannot drift from the real log: every case
// drives both through the interface and asserts the same outcome.

// contractLog is one implementation under test; reopen flushes, closes and
// opens it again with hwCheckpoint as the checkpointed HW (what a restart
// after a flush sees).
type contractLog struct {
	ReplicaLog
	reopen func(hwCheckpoint int64) ReplicaLog
}

type logFactory func(t *testing.T, segmentBytes int64) contractLog

func logImplementations() map[string]logFactory {
	return map[string]logFactory{"storage": openContractStorageLog, "memlog": openContractMemLog}
}

func openContractStorageLog(t *testing.T, segmentBytes int64) contractLog {
	dir := filepath.Join(t.TempDir(), "t-0")
	cfg := storage.DefaultLogConfig()
	if segmentBytes > 0 {
		cfg.SegmentBytes = segmentBytes
	}
	opts := storage.LogOptions{Logger: slog.New(slog.DiscardHandler)}
	open := func(st storage.LogState) *storage.Log {
		l, err := storage.OpenLog(dir, cfg, st, opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		return l
	}
	l := open(storage.LogState{})
	return contractLog{ReplicaLog: l, reopen: func(hw int64) ReplicaLog {
		must(t, l.Flush())
		st := storage.LogState{HighWatermark: hw, LogStartOffset: l.LogStartOffset(), RecoveryPoint: l.LogEndOffset()}
		must(t, l.Close())
		return open(st)
	}}
}

func openContractMemLog(_ *testing.T, segmentBytes int64) contractLog {
	l := newMemLog(memLogConfig{SegmentBytes: segmentBytes})
	return contractLog{ReplicaLog: l, reopen: func(hw int64) ReplicaLog {
		l.flush()
		l.lock()
		l.hwCheckpoint = hw
		l.unlock()
		if err := l.crash(); err != nil {
			panic(err)
		}
		return l
	}}
}

// forEachLog runs f against every implementation.
func forEachLog(t *testing.T, segmentBytes int64, f func(t *testing.T, l contractLog)) {
	for name, open := range logImplementations() {
		t.Run(name, func(t *testing.T) { f(t, open(t, segmentBytes)) })
	}
}

// tsBatch is a one-record batch whose record has timestamp ts.
func tsBatch(ts int64) []record.Batch {
	b := rawBatch(1)
	binary.BigEndian.PutUint64(b[27:], uint64(ts)) // baseTimestamp
	binary.BigEndian.PutUint64(b[35:], uint64(ts)) // maxTimestamp
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	pb, err := record.ParseProduce(b)
	if err != nil {
		panic(err)
	}
	return []record.Batch{pb}
}

func appendLeader(t *testing.T, l ReplicaLog, epoch int32, b []record.Batch) storage.AppendInfo {
	t.Helper()
	info, err := l.AppendAsLeader(b, epoch, storage.AppendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return info
}

func wantEpochs(t *testing.T, l ReplicaLog, want ...storage.EpochEntry) {
	t.Helper()
	if got := l.EpochCache().Entries(); !slices.Equal(got, want) {
		t.Fatalf("epoch entries %v, want %v", got, want)
	}
}

func wantOffsets(t *testing.T, l ReplicaLog, logStart, hw, leo int64) {
	t.Helper()
	if s, h, e := l.LogStartOffset(), l.HighWatermark(), l.LogEndOffset(); s != logStart || h != hw || e != leo {
		t.Fatalf("log start %d, HW %d, LEO %d; want %d, %d, %d", s, h, e, logStart, hw, leo)
	}
}

// readBatches reads from offset and returns the base offsets of the batches.
func readBatches(t *testing.T, l ReplicaLog, offset int64, maxBytes int32, maxOffset int64, minOne bool) ([]int64, storage.ReadResult) {
	t.Helper()
	res, err := l.Read(offset, maxBytes, maxOffset, minOne)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Release()
	var bases []int64
	for it := record.Batches(res.Data); it.Next(); {
		bases = append(bases, it.Header().BaseOffset)
	}
	return bases, res
}

func TestLogContractLeaderAppendAndRead(t *testing.T) {
	forEachLog(t, 0, func(t *testing.T, l contractLog) {
		info := appendLeader(t, l, 3, batch(3))
		if info.FirstOffset != 0 || info.LastOffset != 2 || info.NumRecords != 3 {
			t.Fatalf("append info %+v", info)
		}
		appendLeader(t, l, 3, batch(2))
		appendLeader(t, l, 5, batch(1))
		wantOffsets(t, l, 0, 0, 6)
		wantEpochs(t, l, storage.EpochEntry{Epoch: 3, StartOffset: 0}, storage.EpochEntry{Epoch: 5, StartOffset: 5})

		// A read in the middle of a batch gets the whole batch; maxOffset
		// (the HW for consumers) cuts whole batches.
		bases, res := readBatches(t, l, 1, 1<<20, 6, false)
		if !slices.Equal(bases, []int64{0, 3, 5}) || res.FirstOffset != 0 || res.NextOffset != 6 {
			t.Fatalf("read from 1: batches %v, first %d, next %d", bases, res.FirstOffset, res.NextOffset)
		}
		if bases, _ := readBatches(t, l, 0, 1<<20, 4, false); !slices.Equal(bases, []int64{0}) {
			t.Fatalf("read below 4: batches %v, want [0]", bases)
		}
		// maxBytes holds whole batches; minOneBatch returns the first anyway.
		if bases, _ := readBatches(t, l, 0, 10, 6, false); len(bases) != 0 {
			t.Fatalf("10 bytes without minOneBatch: batches %v", bases)
		}
		if bases, _ := readBatches(t, l, 0, 10, 6, true); !slices.Equal(bases, []int64{0}) {
			t.Fatalf("10 bytes with minOneBatch: batches %v", bases)
		}
		if bases, res := readBatches(t, l, 6, 1<<20, 6, true); len(bases) != 0 || res.NextOffset != 6 {
			t.Fatalf("read at the log end: batches %v, next %d", bases, res.NextOffset)
		}
		if _, err := l.Read(7, 1<<20, 7, true); !errors.Is(err, storage.ErrOffsetOutOfRange) {
			t.Fatalf("read beyond the log end: %v", err)
		}
	})
}

func TestLogContractFollowerAppend(t *testing.T) {
	forEachLog(t, 0, func(t *testing.T, l contractLog) {
		b := stamp(rawBatch(2), 0, 4)
		if _, err := l.AppendAsFollower(b); err != nil {
			t.Fatal(err)
		}
		gap := leaderBatch(5, 1)
		if _, err := l.AppendAsFollower(gap); !errors.Is(err, storage.ErrInvalidOffset) {
			t.Fatalf("append at 5 with the log end at 2: %v, want ErrInvalidOffset", err)
		}
		corrupt := leaderBatch(2, 1)
		corrupt[len(corrupt)-1] ^= 0xFF
		if _, err := l.AppendAsFollower(corrupt); !errors.Is(err, record.ErrCorruptBatch) {
			t.Fatalf("append of a batch with a bad CRC: %v, want ErrCorruptBatch", err)
		}
		if _, err := l.AppendAsFollower(leaderBatch(2, 1)); err != nil {
			t.Fatal(err)
		}
		wantOffsets(t, l, 0, 0, 3)
		// An older epoch in a later batch (compaction never reorders, but
		// a leader may write one) does not enter the history.
		wantEpochs(t, l, storage.EpochEntry{Epoch: 4, StartOffset: 0})
	})
}

func TestLogContractHighWatermarkClamps(t *testing.T) {
	forEachLog(t, 0, func(t *testing.T, l contractLog) {
		appendLeader(t, l, 0, batch(4))
		if got := l.SetHighWatermark(10); got != 4 {
			t.Fatalf("SetHighWatermark(10) stored %d, want the LEO 4", got)
		}
		if got := l.SetHighWatermark(-3); got != 0 {
			t.Fatalf("SetHighWatermark(-3) stored %d, want the log start 0", got)
		}
	})
}

func TestLogContractTruncate(t *testing.T) {
	forEachLog(t, 0, func(t *testing.T, l contractLog) {
		appendLeader(t, l, 1, batch(3)) // 0-2
		appendLeader(t, l, 2, batch(3)) // 3-5
		appendLeader(t, l, 3, batch(3)) // 6-8
		l.SetHighWatermark(9)
		// The epoch history may end with an epoch led without appending.
		must(t, l.EpochCache().Assign(4, 9))
		// At or beyond the log end truncation is a no-op, epochs included.
		must(t, l.TruncateTo(9))
		wantEpochs(t, l, storage.EpochEntry{Epoch: 1, StartOffset: 0}, storage.EpochEntry{Epoch: 2, StartOffset: 3},
			storage.EpochEntry{Epoch: 3, StartOffset: 6}, storage.EpochEntry{Epoch: 4, StartOffset: 9})
		// Inside a batch: the whole batch goes, the HW and epochs follow.
		must(t, l.TruncateTo(4))
		wantOffsets(t, l, 0, 3, 3)
		wantEpochs(t, l, storage.EpochEntry{Epoch: 1, StartOffset: 0})
		if bases, _ := readBatches(t, l, 0, 1<<20, 10, false); !slices.Equal(bases, []int64{0}) {
			t.Fatalf("after truncating to 4: batches %v, want [0]", bases)
		}
		appendLeader(t, l, 6, batch(1))
		wantEpochs(t, l, storage.EpochEntry{Epoch: 1, StartOffset: 0}, storage.EpochEntry{Epoch: 6, StartOffset: 3})
		must(t, l.TruncateFullyAndStartAt(20))
		wantOffsets(t, l, 20, 20, 20)
		wantEpochs(t, l)
		if _, err := l.Read(3, 1<<20, 30, true); !errors.Is(err, storage.ErrOffsetOutOfRange) {
			t.Fatalf("read below the new start: %v", err)
		}
	})
}

func TestLogContractLogStart(t *testing.T) {
	forEachLog(t, 0, func(t *testing.T, l contractLog) {
		appendLeader(t, l, 1, batch(3))
		appendLeader(t, l, 2, batch(3))
		l.SetHighWatermark(4)
		if err := l.SetLogStartOffset(5); !errors.Is(err, storage.ErrOffsetOutOfRange) {
			t.Fatalf("log start beyond the HW: %v", err)
		}
		must(t, l.SetLogStartOffset(4))
		wantOffsets(t, l, 4, 4, 6)
		wantEpochs(t, l, storage.EpochEntry{Epoch: 2, StartOffset: 4})
		if _, err := l.Read(2, 1<<20, 6, true); !errors.Is(err, storage.ErrOffsetOutOfRange) {
			t.Fatalf("read below the log start: %v", err)
		}
		if bases, _ := readBatches(t, l, 4, 1<<20, 6, true); !slices.Equal(bases, []int64{3}) {
			t.Fatalf("read at the log start: batches %v, want the batch holding it", bases)
		}
	})
}

// EndOffsetFor, Kafka's OffsetForLeaderEpoch answer, on the log's history.
func TestLogContractEpochEndOffsets(t *testing.T) {
	forEachLog(t, 0, func(t *testing.T, l contractLog) {
		appendLeader(t, l, 2, batch(2))
		appendLeader(t, l, 4, batch(2))
		for _, tc := range []struct {
			ask       int32
			epoch     int32
			endOffset int64
		}{{1, 1, 0}, {2, 2, 2}, {3, 2, 2}, {4, 4, 4}, {5, -1, -1}, {-1, -1, -1}} {
			if e, end := l.EpochCache().EndOffsetFor(tc.ask); e != tc.epoch || end != tc.endOffset {
				t.Errorf("EndOffsetFor(%d) = (%d, %d), want (%d, %d)", tc.ask, e, end, tc.epoch, tc.endOffset)
			}
		}
		if latest := l.EpochCache().LatestEpoch(); latest != 4 {
			t.Errorf("LatestEpoch = %d, want 4", latest)
		}
	})
}

// Segments roll at segment.bytes, and a read stops at the end of the
// segment holding its first batch.
func TestLogContractSegments(t *testing.T) {
	size := int64(len(rawBatch(1)))
	forEachLog(t, 2*size, func(t *testing.T, l contractLog) {
		for range 5 {
			appendLeader(t, l, 0, batch(1))
		}
		if n := l.NumSegments(); n != 3 {
			t.Fatalf("%d segments, want 3", n)
		}
		if got := l.Size(); got != 5*size {
			t.Fatalf("size %d, want %d", got, 5*size)
		}
		if bases, _ := readBatches(t, l, 0, 1<<20, 5, false); !slices.Equal(bases, []int64{0, 1}) {
			t.Fatalf("read from 0: batches %v, want the first segment's [0 1]", bases)
		}
		if bases, _ := readBatches(t, l, 3, 1<<20, 5, false); !slices.Equal(bases, []int64{3}) {
			t.Fatalf("read from 3: batches %v, want the second segment's rest [3]", bases)
		}
		must(t, l.TruncateTo(3))
		if n := l.NumSegments(); n != 2 {
			t.Fatalf("%d segments after truncating to 3, want 2", n)
		}
	})
}

// A restart after a flush: the log is whole, the HW is the checkpointed
// one (clamped to the log), and an epoch that starts at the log end (led
// without appending) does not survive it.
func TestLogContractReopen(t *testing.T) {
	forEachLog(t, 0, func(t *testing.T, l contractLog) {
		appendLeader(t, l, 1, batch(2))
		appendLeader(t, l, 2, batch(2))
		must(t, l.EpochCache().Assign(3, 4))
		l.SetHighWatermark(4)
		r := l.reopen(2)
		wantOffsets(t, r, 0, 2, 4)
		wantEpochs(t, r, storage.EpochEntry{Epoch: 1, StartOffset: 0}, storage.EpochEntry{Epoch: 2, StartOffset: 2})
	})
}

func TestLogContractTimestamps(t *testing.T) {
	forEachLog(t, 0, func(t *testing.T, l contractLog) {
		now := time.Unix(1000, 0).UnixMilli()
		for _, ts := range []int64{now, now + 30, now + 10} {
			appendLeader(t, l, 0, tsBatch(ts))
		}
		if ts, off := l.MaxTimestamp(); ts != now+30 || off != 1 {
			t.Fatalf("MaxTimestamp = (%d, %d), want (%d, 1)", ts, off, now+30)
		}
		if off, ts, ok := l.OffsetForTimestamp(now + 5); !ok || off != 1 || ts != now+30 {
			t.Fatalf("OffsetForTimestamp(now+5) = (%d, %d, %v), want (1, now+30)", off, ts, ok)
		}
		if _, _, ok := l.OffsetForTimestamp(now + 31); ok {
			t.Fatal("OffsetForTimestamp beyond every timestamp found one")
		}
	})
}

// The simulator's crash model (memLog only: a storage.Log cannot crash
// in-process). With Kafka's default flush policy nothing is durable until a
// segment rolls; a crash keeps the rolled segments, the checkpointed HW
// clamped into what is left, and the epochs that start inside it.
func TestMemLogCrashLosesUnflushedData(t *testing.T) {
	size := int64(len(rawBatch(1)))
	l := newMemLog(memLogConfig{SegmentBytes: 2 * size})
	appendLeader(t, l, 1, batch(1))
	appendLeader(t, l, 1, batch(1))
	appendLeader(t, l, 2, batch(1)) // rolls: offsets 0-1 are flushed
	l.SetHighWatermark(3)
	l.checkpointHW()
	must(t, l.crash())
	wantOffsets(t, l, 0, 2, 2)
	wantEpochs(t, l, storage.EpochEntry{Epoch: 1, StartOffset: 0})
	if n := l.NumSegments(); n != 2 {
		t.Fatalf("%d segments after the crash, want 2 (the rolled one's file is there, empty)", n)
	}
	appendLeader(t, l, 3, batch(1))
	l.flush()
	must(t, l.crash())
	wantOffsets(t, l, 0, 2, 3)
}

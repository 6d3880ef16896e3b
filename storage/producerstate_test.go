package storage

import (
	"errors"
	"math"
	"os"
	"testing"
	"time"
)

func produce(t *testing.T, l *Log, pid int64, epoch int16, seq int32, n int) (AppendInfo, error) {
	t.Helper()
	return l.AppendAsLeader(leaderBatches(t, spec(n, 0).idempotent(pid, epoch, seq).build(t)), 0, AppendOptions{})
}

// Kafka ProducerStateManager rules (KIP-98 idempotence).
func TestProducerSequenceRules(t *testing.T) {
	e := newTestEnv(t)
	l := e.open(smallConfig(), LogState{})
	defer l.Close()

	// Unknown producer: any sequence is accepted.
	if _, err := produce(t, l, 1, 0, 17, 3); err != nil { // seq 17-19, offsets 0-2
		t.Fatal(err)
	}
	if _, err := produce(t, l, 1, 0, 20, 2); err != nil { // 20-21, offsets 3-4
		t.Fatal(err)
	}
	// Duplicate of a cached batch: the original offsets, nothing written.
	_, err := produce(t, l, 1, 0, 17, 3)
	var dup *DuplicateBatchError
	if !errors.As(err, &dup) || dup.FirstOffset != 0 || dup.LastOffset != 2 || !errors.Is(err, ErrDuplicateSequence) {
		t.Fatalf("duplicate: %v", err)
	}
	if l.LogEndOffset() != 5 {
		t.Fatalf("duplicate was written: LEO %d", l.LogEndOffset())
	}
	// Gap.
	if _, err := produce(t, l, 1, 0, 23, 1); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("gap: %v", err)
	}
	// Older epoch.
	if _, err := produce(t, l, 1, -1+0, 22, 1); !errors.Is(err, ErrInvalidProducerEpoch) {
		t.Fatalf("old epoch: %v", err)
	}
	// New epoch must start at 0.
	if _, err := produce(t, l, 1, 1, 5, 1); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("new epoch non-zero seq: %v", err)
	}
	if _, err := produce(t, l, 1, 1, 0, 1); err != nil {
		t.Fatal(err)
	}
	// Batches of one request are checked in sequence.
	buf := append(spec(1, 0).idempotent(1, 1, 1).build(t), spec(1, 0).idempotent(1, 1, 2).build(t)...)
	if _, err := l.AppendAsLeader(leaderBatches(t, buf), 0, AppendOptions{}); err != nil {
		t.Fatalf("in-order pair: %v", err)
	}
	buf = append(spec(1, 0).idempotent(1, 1, 3).build(t), spec(1, 0).idempotent(1, 1, 5).build(t)...)
	if _, err := l.AppendAsLeader(leaderBatches(t, buf), 0, AppendOptions{}); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("gap inside a request: %v", err)
	}
	// Only the last five batches are remembered.
	for seq := int32(3); seq < 8; seq++ {
		if _, err := produce(t, l, 1, 1, seq, 1); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := produce(t, l, 1, 1, 2, 1); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("evicted batch should look out of order, got %v", err)
	}
	if _, err := produce(t, l, 1, 1, 3, 1); !errors.Is(err, ErrDuplicateSequence) {
		t.Fatalf("oldest cached batch: %v", err)
	}
	// Non-idempotent batches are not tracked.
	appendN(t, l, 2, 1, 0)
	ps := l.Producers()
	if len(ps) != 1 || ps[0].ProducerID != 1 || ps[0].Epoch != 1 || len(ps[0].Batches) != 5 || ps[0].LastSeq() != 7 {
		t.Fatalf("producers %+v", ps)
	}
}

func TestProducerSequenceWrap(t *testing.T) {
	e := newTestEnv(t)
	l := e.open(smallConfig(), LogState{})
	defer l.Close()
	if _, err := produce(t, l, 9, 0, math.MaxInt32-1, 2); err != nil {
		t.Fatal(err)
	}
	if _, err := produce(t, l, 9, 0, 0, 1); err != nil {
		t.Fatalf("sequence after MaxInt32 is 0: %v", err)
	}
}

func TestProducerSnapshotRoundTrip(t *testing.T) {
	entries := []ProducerEntry{
		{ProducerID: 1, Epoch: 2, LastTimestamp: 99, CoordinatorEpoch: -1, CurrentTxnFirstOffset: -1,
			Batches: []BatchMetadata{{0, 4, 10, 14, 90}, {5, 5, 20, 20, 99}}},
		{ProducerID: 7, Epoch: 0, LastTimestamp: -1, CoordinatorEpoch: 3, CurrentTxnFirstOffset: 12},
	}
	data := encodeSnapshot(entries)
	got, err := decodeSnapshot(data)
	if err != nil || len(got) != 2 || got[0].Batches[1] != entries[0].Batches[1] || got[1].CurrentTxnFirstOffset != 12 {
		t.Fatalf("round trip %+v %v", got, err)
	}
	for i := range data {
		bad := append([]byte(nil), data...)
		bad[i] ^= 0x40
		if _, err := decodeSnapshot(bad); err == nil {
			t.Fatalf("flipped byte %d not detected", i)
		}
	}
	if _, err := decodeSnapshot(data[:len(data)-1]); err == nil {
		t.Fatal("truncated snapshot accepted")
	}
}

func TestProducerStateSurvivesReopen(t *testing.T) {
	for _, clean := range []bool{true, false} {
		t.Run(map[bool]string{true: "clean", false: "unclean"}[clean], func(t *testing.T) {
			e := newTestEnv(t)
			l := e.open(smallConfig(), LogState{})
			for seq := int32(0); seq < 40; seq += 2 { // rolls several segments: snapshots at rolls
				if _, err := produce(t, l, 5, 3, seq, 2); err != nil {
					t.Fatal(err)
				}
			}
			if clean {
				l.Close()
			} else {
				crashClone(t, l, e)
			}
			l2 := e.open(smallConfig(), LogState{CleanShutdown: clean})
			defer l2.Close()
			if _, err := produce(t, l2, 5, 3, 38, 2); !errors.Is(err, ErrDuplicateSequence) {
				t.Fatalf("duplicate after reopen: %v", err)
			}
			if _, err := produce(t, l2, 5, 3, 41, 1); !errors.Is(err, ErrOutOfOrderSequence) {
				t.Fatalf("gap after reopen: %v", err)
			}
			if _, err := produce(t, l2, 5, 3, 40, 1); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestProducerStateRebuiltOnTruncate(t *testing.T) {
	e := newTestEnv(t)
	l := e.open(smallConfig(), LogState{})
	defer l.Close()
	for seq := int32(0); seq < 60; seq += 2 {
		produce(t, l, 5, 0, seq, 2)
	}
	l.SetHighWatermark(0)
	if err := l.TruncateTo(30); err != nil { // keeps seqs 0..29
		t.Fatal(err)
	}
	ps := l.Producers()
	if len(ps) != 1 || ps[0].LastSeq() != 29 || ps[0].LastOffset() != 29 {
		t.Fatalf("producers after truncation %+v", ps)
	}
	if _, err := produce(t, l, 5, 0, 30, 2); err != nil {
		t.Fatalf("next sequence after truncation: %v", err)
	}
	for _, off := range l.producers.snapshotOffsets() {
		if off > 32 {
			t.Fatalf("snapshot %d beyond the truncation survived", off)
		}
	}
}

func TestProducerExpiration(t *testing.T) {
	e := newTestEnv(t)
	l := e.open(smallConfig(), LogState{})
	defer l.Close()
	now := e.clock.Now()
	l.AppendAsLeader(leaderBatches(t, spec(1, now.Add(-2*time.Hour).UnixMilli()).idempotent(1, 0, 0).build(t)), 0, AppendOptions{})
	l.AppendAsLeader(leaderBatches(t, spec(1, now.UnixMilli()).idempotent(2, 0, 0).build(t)), 0, AppendOptions{})
	if n := l.ProducerIDExpire(now, time.Hour); n != 1 {
		t.Fatalf("expired %d", n)
	}
	if ps := l.Producers(); len(ps) != 1 || ps[0].ProducerID != 2 {
		t.Fatalf("producers %+v", ps)
	}
}

// crashClone simulates a crash of l: its directory, as the kernel would have
// it (data written through the mapping, preallocated tails, untrimmed
// indexes), is copied to e.dir+"-crash" and e.dir is pointed there. The
// original log is then closed so its mappings go away.
func crashClone(t *testing.T, l *Log, e *testEnv) {
	t.Helper()
	dst := e.dir + "-crash"
	if err := os.CopyFS(dst, os.DirFS(e.dir)); err != nil {
		t.Fatal(err)
	}
	l.Close()
	e.dir = dst
}

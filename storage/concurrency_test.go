package storage

import (
	"errors"
	"math"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/kbroker/kbroker/record"
)

// Readers run against an appender, retention and follower truncation. Every
// read must return whole, CRC-valid batches in offset order, or a clean
// out-of-range error; -race checks the publication protocol.
func TestConcurrentReadersAppendRetentionTruncate(t *testing.T) {
	e := newTestEnv(t)
	e.opts.MaxMappedSegments = 2
	cfg := smallConfig()
	cfg.RetentionBytes = 16 << 10
	l := e.open(cfg, LogState{})
	defer l.Close()

	var stop atomic.Bool
	var wg sync.WaitGroup
	errc := make(chan error, 16)
	for r := 0; r < 4; r++ {
		wg.Go(func() {
			for off := int64(0); !stop.Load(); {
				res, err := l.Read(off, 2048, math.MaxInt64, true)
				if errors.Is(err, ErrOffsetOutOfRange) {
					off = l.LogStartOffset()
					continue
				}
				if err != nil {
					errc <- err
					return
				}
				prev := int64(-1)
				it := record.VerifiedBatches(res.Data)
				for it.Next() {
					h := it.Header()
					if h.BaseOffset <= prev {
						errc <- errors.New("batches out of order")
					}
					prev = h.LastOffset()
				}
				if it.Err() != nil {
					errc <- it.Err()
				}
				res.Release()
				if len(res.Data) == 0 {
					off = l.LogStartOffset()
				} else {
					off = res.NextOffset
				}
			}
		})
	}
	for i := 0; i < 1500; i++ {
		if _, err := l.AppendAsLeader(leaderBatches(t, spec(2, int64(i)).build(t)), 0, AppendOptions{}); err != nil {
			t.Fatal(err)
		}
		switch {
		case i%97 == 0:
			l.SetHighWatermark(l.LogEndOffset())
			if _, err := l.DeleteOldSegments(e.clock.Now()); err != nil {
				t.Fatal(err)
			}
		case i%131 == 0:
			if err := l.TruncateTo(l.LogEndOffset() - 6); err != nil {
				t.Fatal(err)
			}
		case i%50 == 0:
			if err := l.Flush(); err != nil {
				t.Fatal(err)
			}
		}
		l.OffsetForTimestamp(int64(i / 2))
	}
	stop.Store(true)
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
}

func TestFlushMessagesAndUpdateConfig(t *testing.T) {
	e := newTestEnv(t)
	cfg := smallConfig()
	cfg.FlushMessages = 4
	l := e.open(cfg, LogState{})
	defer l.Close()
	appendN(t, l, 1, 2, 0)
	if l.RecoveryPoint() != 0 {
		t.Fatal("flushed before flush.messages")
	}
	appendN(t, l, 1, 2, 0)
	if l.RecoveryPoint() != 4 {
		t.Fatalf("flush.messages reached, recovery point %d", l.RecoveryPoint())
	}
	// Bigger segments from the next roll: a batch too large for the old
	// segment.bytes is accepted once the config allows it.
	big := batchOfSize(t, 6000, 0)
	if _, err := l.AppendAsLeader(leaderBatches(t, big), 0, AppendOptions{}); !errors.Is(err, ErrRecordBatchTooLarge) {
		t.Fatal(err)
	}
	cfg.SegmentBytes = 64 << 10
	if err := l.UpdateConfig(cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := l.AppendAsLeader(leaderBatches(t, batchOfSize(t, 6000, 0)), 0, AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	checkContiguous(t, readAll(t, l, 0, math.MaxInt64), 0, 5)
	bad := cfg
	bad.SegmentBytes = -5
	if err := l.UpdateConfig(bad); err == nil {
		t.Fatal("invalid config accepted")
	}
}

func TestLogDelete(t *testing.T) {
	e := newTestEnv(t)
	l := e.open(smallConfig(), LogState{})
	appendN(t, l, 3, 1, 0)
	res, _ := l.Read(0, 100, math.MaxInt64, true)
	if err := l.Delete(); err != nil {
		t.Fatal(err)
	}
	_ = string(res.Data) // still mapped
	res.Release()
	if _, err := l.Read(0, 100, math.MaxInt64, true); !errors.Is(err, ErrLogClosed) {
		t.Fatal(err)
	}
}

func TestEmptyActiveSegmentRemappedForLargerSegmentBytes(t *testing.T) {
	e := newTestEnv(t)
	l := e.open(smallConfig(), LogState{})
	defer l.Close()
	cfg := smallConfig()
	cfg.SegmentBytes = 64 << 10
	l.UpdateConfig(cfg)
	big := batchOfSize(t, 20000, 0)
	if _, err := l.AppendAsLeader(leaderBatches(t, big), 0, AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	if l.NumSegments() != 1 || l.Size() != 20000 {
		t.Fatalf("segments %+v", l.Segments())
	}
	checkContiguous(t, readAll(t, l, 0, math.MaxInt64), 0, 1)
}

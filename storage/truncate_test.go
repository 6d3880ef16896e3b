package storage

import (
	"math"
	"os"
	"testing"
	"time"
)

func TestTruncateTo(t *testing.T) {
	e := newTestEnv(t)
	l := e.open(smallConfig(), LogState{})
	for i := 0; i < 200; i++ {
		l.AppendAsLeader(leaderBatches(t, spec(2, int64(i)).build(t)), int32(i/50), AppendOptions{}) // epochs 0..3 start at 0,100,200,300
	}
	l.SetHighWatermark(400)
	segs := l.Segments()
	cut := segs[2].BaseOffset + 4 // a batch boundary inside segment 2

	if err := l.TruncateTo(cut); err != nil {
		t.Fatal(err)
	}
	if l.LogEndOffset() != cut || l.NumSegments() != 3 || l.HighWatermark() != cut || l.RecoveryPoint() > cut {
		t.Fatalf("LEO %d segs %d HW %d RP %d", l.LogEndOffset(), l.NumSegments(), l.HighWatermark(), l.RecoveryPoint())
	}
	for _, s := range segs[3:] {
		if _, err := os.Stat(segmentFileName(e.dir, s.BaseOffset, logSuffix)); !os.IsNotExist(err) {
			t.Fatalf("segment %d not deleted", s.BaseOffset)
		}
	}
	for _, ep := range l.EpochCache().Entries() {
		if ep.StartOffset >= cut {
			t.Fatalf("epoch entry %+v beyond truncation", ep)
		}
	}
	checkContiguous(t, readAll(t, l, 0, math.MaxInt64), 0, cut)

	// Mid-batch: the whole batch goes, LEO is its base offset.
	if err := l.TruncateTo(cut - 1); err != nil {
		t.Fatal(err)
	}
	if l.LogEndOffset() != cut-2 {
		t.Fatalf("mid-batch truncation: LEO %d", l.LogEndOffset())
	}
	if l.TruncateTo(cut+100) != nil || l.LogEndOffset() != cut-2 {
		t.Fatal("truncating beyond LEO must be a no-op")
	}
	// Appending continues in the truncated segment, which is active again.
	appendN(t, l, 3, 2, 5000)
	checkContiguous(t, readAll(t, l, 0, math.MaxInt64), 0, cut+4)
	if ts, off := l.MaxTimestamp(); ts != 5005 || off != cut+3 {
		t.Fatalf("max timestamp %d at %d", ts, off)
	}

	// The dropped batches do not come back after a crash.
	crashClone(t, l, e)
	l2 := e.open(smallConfig(), LogState{})
	defer l2.Close()
	if l2.LogEndOffset() != cut+4 {
		t.Fatalf("after crash LEO %d, want %d", l2.LogEndOffset(), cut+4)
	}
	checkContiguous(t, readAll(t, l2, 0, math.MaxInt64), 0, cut+4)
}

func TestTruncateWaitsForReaders(t *testing.T) {
	e := newTestEnv(t)
	l := e.open(smallConfig(), LogState{})
	defer l.Close()
	appendN(t, l, 10, 2, 0)
	res, err := l.Read(0, 1<<20, math.MaxInt64, true)
	if err != nil {
		t.Fatal(err)
	}
	want := string(res.Data)
	seg := l.segmentList()[0]
	done := make(chan error)
	go func() { done <- l.TruncateTo(4) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		seg.mu.Lock()
		waiting := seg.exclusive
		seg.mu.Unlock()
		if waiting {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("truncation never started waiting")
		}
		time.Sleep(time.Millisecond) // polling a condition, not synchronising on time
	}
	select {
	case err := <-done:
		t.Fatalf("truncation did not wait for the reader: %v", err)
	default:
	}
	if string(res.Data) != want {
		t.Fatal("data changed under the reader")
	}
	res.Release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if l.LogEndOffset() != 4 {
		t.Fatalf("LEO %d", l.LogEndOffset())
	}
}

func TestTruncateFullyAndStartAt(t *testing.T) {
	e := newTestEnv(t)
	l := e.open(smallConfig(), LogState{})
	appendN(t, l, 100, 2, 0)
	l.AppendAsLeader(leaderBatches(t, spec(1, 0).idempotent(3, 0, 0).build(t)), 4, AppendOptions{})
	if err := l.TruncateFullyAndStartAt(1000); err != nil {
		t.Fatal(err)
	}
	if l.LogStartOffset() != 1000 || l.LogEndOffset() != 1000 || l.NumSegments() != 1 || l.HighWatermark() != 1000 {
		t.Fatalf("LSO %d LEO %d segs %d", l.LogStartOffset(), l.LogEndOffset(), l.NumSegments())
	}
	if len(l.EpochCache().Entries()) != 0 || len(l.Producers()) != 0 {
		t.Fatal("epoch cache or producer state kept")
	}
	s := spec(2, 0)
	s.baseOffset, s.leaderEpoch = 1000, 9
	if _, err := l.AppendAsFollower(s.build(t)); err != nil {
		t.Fatal(err)
	}
	l.Close()
	l2 := e.open(smallConfig(), LogState{LogStartOffset: 1000, CleanShutdown: true, RecoveryPoint: 1002})
	defer l2.Close()
	if l2.LogStartOffset() != 1000 || l2.LogEndOffset() != 1002 || l2.NumSegments() != 1 {
		t.Fatalf("reopened LSO %d LEO %d", l2.LogStartOffset(), l2.LogEndOffset())
	}
	// Truncating below the log start restarts the log too.
	if err := l2.TruncateTo(500); err != nil || l2.LogEndOffset() != 500 || l2.LogStartOffset() != 500 {
		t.Fatalf("%v LSO %d LEO %d", err, l2.LogStartOffset(), l2.LogEndOffset())
	}
}

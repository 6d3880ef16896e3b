package storage

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/kbroker/kbroker/record"
)

// readLoop reads l from its start to its end over and over until stop,
// checking that every result is whole, CRC-valid batches in order, and
// looks up offsets by timestamp on the way.
func readLoop(l *Log, stop *atomic.Bool, errc chan<- error) {
	for off := int64(0); !stop.Load(); {
		res, err := l.Read(off, 2048, math.MaxInt64, true)
		if errors.Is(err, ErrOffsetOutOfRange) {
			off = l.LogStartOffset()
			continue
		}
		if err != nil {
			errc <- fmt.Errorf("%s: read at %d: %w", l.Dir(), off, err)
			return
		}
		prev := int64(-1)
		it := record.VerifiedBatches(res.Data)
		for it.Next() {
			if it.Header().BaseOffset <= prev {
				errc <- fmt.Errorf("%s: batches out of order", l.Dir())
			}
			prev = it.Header().LastOffset()
		}
		if it.Err() != nil {
			errc <- fmt.Errorf("%s: %w", l.Dir(), it.Err())
		}
		res.Release()
		off = res.NextOffset
		if len(res.Data) == 0 {
			off = l.LogStartOffset()
			l.OffsetForTimestamp(int64(off) + 3)
		}
	}
}

// Old segments are read, cleaned, deleted by retention, truncated into and
// recovered while the logs of one manager share a budget of two mapped
// inactive segments (one per log): readers of every log evict each other's
// mappings all the time, and every read still returns whole batches. The
// descriptors stay at one per partition throughout.
func TestOldSegmentsUnderASharedMapBudget(t *testing.T) {
	const parts = 4
	root := t.TempDir()
	fds0, maps0 := procCounts(t)
	open := func() (*Manager, []*Log) {
		m, err := NewManager([]string{root}, ManagerOptions{Logger: discardLogger(), MaxMappedSegments: 1, MaxMappedSegmentsTotal: 2})
		if err != nil {
			t.Fatal(err)
		}
		var logs []*Log
		for p := range parts {
			cfg := smallConfig()
			cfg.RetentionBytes = 12 << 10
			if p%2 == 1 {
				cfg = compactConfig()
				cfg.SegmentBytes = 2048
			}
			l, err := m.Open(TopicPartition{Topic: "t", Partition: int32(p)}, [16]byte{}, cfg)
			if err != nil {
				t.Fatal(err)
			}
			logs = append(logs, l)
		}
		return m, logs
	}
	m, logs := open()
	var stop atomic.Bool
	var wg sync.WaitGroup
	errc := make(chan error, 64)
	for _, l := range logs {
		wg.Go(func() { readLoop(l, &stop, errc) })
	}
	clock := newFakeClock()
	for i := range 300 {
		for p, l := range logs {
			r := rec(fmt.Sprintf("k%d", i%7), fmt.Sprintf("v%d", i), int64(i))
			info, err := l.AppendAsLeader(leaderBatches(t, batchOf(r).build(t)), 0, AppendOptions{})
			if err != nil {
				t.Fatal(err)
			}
			l.SetHighWatermark(info.LastOffset + 1)
			switch {
			case p%2 == 1 && i%50 == 49:
				if _, err := l.Compact(clock.Now()); err != nil {
					t.Fatal(err)
				}
			case p%2 == 0 && i%40 == 39:
				if _, err := l.DeleteOldSegments(clock.Now()); err != nil {
					t.Fatal(err)
				}
			case p%2 == 0 && i%70 == 69 && i < 200:
				// Into the oldest segment left: it is reactivated.
				if err := l.TruncateTo(l.Segments()[0].BaseOffset + 1); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	stop.Store(true)
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	if n := m.maps.mappedSegments(); n > 2 {
		t.Fatalf("%d inactive segments mapped, budget 2", n)
	}
	checkResources(t, "after reads, cleanings, retention and truncations", fds0, maps0, parts, 2)
	before := map[string][]gotRec{}
	for _, l := range logs {
		before[l.Dir()] = readRecords(t, l)
		if l.NumSegments() < 2 {
			t.Fatalf("%s has %d segments: the test reads no old ones", l.Dir(), l.NumSegments())
		}
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	// An unclean restart with no recovery point: every segment is recovered.
	os.Remove(filepath.Join(root, CleanShutdownFile))
	os.Remove(filepath.Join(root, RecoveryPointCheckpointFile))
	m, logs = open()
	defer m.Close()
	for _, l := range logs {
		sameRecords(t, readRecords(t, l), before[l.Dir()])
	}
	checkResources(t, "after a full recovery", fds0, maps0, parts, 2)
}

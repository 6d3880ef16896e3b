package storage

import (
	"fmt"
	"math"
	"path/filepath"
	"testing"

	"github.com/kbroker/kbroker/record"
)

func benchLog(b *testing.B) *Log {
	cfg := DefaultLogConfig()
	cfg.SegmentBytes = 64 << 20
	l, err := OpenLog(filepath.Join(b.TempDir(), "bench-0"), cfg, LogState{}, LogOptions{Logger: discardLogger()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close() })
	return l
}

// BenchmarkAppend appends produce batches of 1 KiB and 64 KiB (validation,
// offset assignment, write into the segment, indexes), rolling 64 MiB
// segments.
func BenchmarkAppend(b *testing.B) {
	for _, size := range []int{1 << 10, 64 << 10} {
		b.Run(fmt.Sprintf("%dKiB", size>>10), func(b *testing.B) {
			l := benchLog(b)
			batch := batchOfSize(b, size, 1)
			b.SetBytes(int64(len(batch)))
			b.ReportAllocs()
			for b.Loop() {
				// Parsed per append, as the broker does per produce.
				pb, err := record.ParseProduce(batch)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := l.AppendAsLeader([]record.Batch{pb}, 0, AppendOptions{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRead fetches 1 MiB at a time through 32 MiB of 1 KiB batches.
func BenchmarkRead(b *testing.B) {
	l := benchLog(b)
	batch := batchOfSize(b, 1024, 1)
	for i := 0; i < 32<<10; i++ {
		if _, err := l.AppendAsLeader(leaderBatches(b, batch), 0, AppendOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	leo := l.LogEndOffset()
	b.ReportAllocs()
	b.SetBytes(1 << 20)
	off := int64(0)
	for b.Loop() {
		res, err := l.Read(off, 1<<20, math.MaxInt64, true)
		if err != nil {
			b.Fatal(err)
		}
		off = res.NextOffset
		res.Release()
		if off >= leo {
			off = 0
		}
	}
}

func formatSize(n int) string {
	if n >= 1<<10 {
		return itoa(int64(n>>10)) + "KiB"
	}
	return itoa(int64(n)) + "B"
}

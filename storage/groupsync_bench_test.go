package storage

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkGroupCommit appends 1 KiB or 16 KiB batches to 12 partitions of one log
// dir from 48 goroutines (the shape of bench w2's leader side), each append
// waiting until it is on disk (durable: flush.messages=1, group commit) or
// not (default). It reports MB/s and, durable, the flush rounds and log
// flushes per second.
//
//	go test -run '^$' -bench BenchmarkGroupCommit -benchtime 3s ./storage/
func BenchmarkGroupCommit(b *testing.B) {
	for _, c := range []struct {
		durable bool
		size    int
	}{{false, 1024}, {true, 1024}, {false, 16 << 10}, {true, 16 << 10}} {
		durable := c.durable
		b.Run(fmt.Sprintf("batch=%d/durable=%v", c.size, durable), func(b *testing.B) {
			m, err := NewManager([]string{b.TempDir()}, ManagerOptions{Logger: discardLogger()})
			if err != nil {
				b.Fatal(err)
			}
			defer m.Close()
			cfg := DefaultLogConfig()
			if durable {
				cfg.FlushMessages = 1
			}
			const parts = 12
			logs := make([]*Log, parts)
			for i := range logs {
				if logs[i], err = m.Open(TopicPartition{Topic: "g", Partition: int32(i)}, [16]byte{1}, cfg); err != nil {
					b.Fatal(err)
				}
			}
			raw := batchOfSize(b, c.size, 1)
			var next atomic.Int64
			b.SetBytes(int64(c.size))
			b.SetParallelism(4) // 4 x GOMAXPROCS goroutines
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					l := logs[next.Add(1)%parts]
					if _, err := l.AppendAsLeader(leaderBatches(b, raw), 0, AppendOptions{}); err != nil {
						b.Error(err)
						return
					}
					if durable {
						if err := l.WaitDurable(); err != nil {
							b.Error(err)
							return
						}
					}
				}
			})
			secs := time.Since(start).Seconds()
			st := m.GroupSyncStats()
			b.ReportMetric(float64(st.Rounds)/secs, "rounds/s")
			b.ReportMetric(float64(st.Syncs)/secs, "logflushes/s")
		})
	}
}

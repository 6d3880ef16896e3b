package storage

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// partitionCostConfig is a partition as the broker makes it: Kafka's
// defaults (1 GiB segments, 10 MiB indexes) with 1 MiB preallocation steps.
func partitionCostConfig() LogConfig {
	c := DefaultLogConfig()
	c.PreallocateChunkBytes = 1 << 20
	return c
}

// processUsage is what the process holds: descriptors, mappings, resident
// memory, Go heap.
type processUsage struct {
	fds, maps  int
	rss, heap  int64
	diskBlocks int64 // of the log dir
}

func measureUsage(b *testing.B, dir string) processUsage {
	b.Helper()
	runtime.GC()
	var u processUsage
	des, _ := os.ReadDir("/proc/self/fd")
	u.fds = len(des)
	maps, _ := os.ReadFile("/proc/self/maps")
	u.maps = strings.Count(string(maps), "\n")
	if statm, err := os.ReadFile("/proc/self/statm"); err == nil {
		if f := strings.Fields(string(statm)); len(f) > 1 {
			pages, _ := strconv.ParseInt(f[1], 10, 64)
			u.rss = pages * int64(os.Getpagesize())
		}
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	u.heap = int64(ms.HeapInuse)
	filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				u.diskBlocks += st.Blocks * 512
			}
		}
		return nil
	})
	return u
}

func reportUsage(b *testing.B, before, after processUsage, n int) {
	per := func(a, z int64) float64 { return float64(z-a) / float64(n) }
	b.ReportMetric(per(int64(before.fds), int64(after.fds)), "fds/partition")
	b.ReportMetric(per(int64(before.maps), int64(after.maps)), "maps/partition")
	b.ReportMetric(per(before.rss, after.rss)/1024, "RSS-KiB/partition")
	b.ReportMetric(per(before.heap, after.heap)/1024, "heap-KiB/partition")
	b.ReportMetric(per(before.diskBlocks, after.diskBlocks)/1024, "disk-KiB/partition")
}

// openPartitions opens n partition logs in m, each with one 1 KiB record.
func openPartitions(b *testing.B, m *Manager, n int, batch []byte) {
	b.Helper()
	for p := range n {
		l, err := m.Open(TopicPartition{Topic: fmt.Sprintf("t%d", p/100), Partition: int32(p % 100)}, [16]byte{}, partitionCostConfig())
		if err != nil {
			b.Fatalf("partition %d: %v", p, err)
		}
		if _, err := l.AppendAsLeader(leaderBatches(b, batch), 0, AppendOptions{}); err != nil {
			b.Fatalf("partition %d: %v", p, err)
		}
	}
}

// BenchmarkPartitionCost is what one more partition costs a broker's
// storage: the time to create its log and append a record (ns/op), and the
// descriptors, mappings, resident memory, heap and disk it then holds. Run
// it at scale with -benchtime 10000x (10,000 partitions in one manager).
func BenchmarkPartitionCost(b *testing.B) {
	root := b.TempDir()
	m, err := NewManager([]string{root}, ManagerOptions{Logger: discardLogger()})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	batch := batchOfSize(b, 1024, time.Now().UnixMilli())
	before := measureUsage(b, root)
	b.ResetTimer()
	openPartitions(b, m, b.N, batch)
	b.StopTimer()
	reportUsage(b, before, measureUsage(b, root), b.N)
}

// BenchmarkPartitionReopen is the restart half: the time to open one
// partition's log again after a clean shutdown (ns/op), with what it holds
// then.
func BenchmarkPartitionReopen(b *testing.B) {
	root := b.TempDir()
	m, err := NewManager([]string{root}, ManagerOptions{Logger: discardLogger()})
	if err != nil {
		b.Fatal(err)
	}
	openPartitions(b, m, b.N, batchOfSize(b, 1024, time.Now().UnixMilli()))
	if err := m.Close(); err != nil {
		b.Fatal(err)
	}
	before := measureUsage(b, root)
	b.ResetTimer()
	m, err = NewManager([]string{root}, ManagerOptions{Logger: discardLogger()})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	for _, pd := range m.OnDisk() {
		if _, err := m.Open(pd.TopicPartition, pd.TopicID, partitionCostConfig()); err != nil {
			b.Fatalf("%s: %v", pd.Dir, err)
		}
	}
	b.StopTimer()
	after := measureUsage(b, root)
	after.diskBlocks, before.diskBlocks = 0, 0 // unchanged by a reopen
	reportUsage(b, before, after, b.N)
}

// BenchmarkManagerClose is a broker's shutdown: closing n logs of one
// record each (flush, trim, producer snapshot), LogWorkersPerDir at once;
// ns/op is per log. Run with -benchtime 2000x.
func BenchmarkManagerClose(b *testing.B) {
	for _, workers := range []int{8, 16, 32} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			root := b.TempDir()
			m, err := NewManager([]string{root}, ManagerOptions{Logger: discardLogger(), LogWorkersPerDir: workers})
			if err != nil {
				b.Fatal(err)
			}
			openPartitions(b, m, b.N, batchOfSize(b, 1024, time.Now().UnixMilli()))
			b.ResetTimer()
			if err := m.Close(); err != nil {
				b.Fatal(err)
			}
		})
	}
}

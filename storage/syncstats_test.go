package storage

import (
	"sync"
	"testing"
	"time"
)

// The sync counters see group commit rounds, the logs they flush, and the
// data and directory syncs that reach the file system.
func TestSyncStatsCount(t *testing.T) {
	var mu sync.Mutex
	var rounds, roundLogs int
	logger, _ := testLogger(t)
	m, err := NewManager([]string{t.TempDir()}, ManagerOptions{Logger: logger, ResourceLimits: unlimitedResources,
		OnGroupCommitRound: func(d time.Duration, logs int) {
			mu.Lock()
			rounds++
			roundLogs += logs
			mu.Unlock()
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	l, err := m.Open(TopicPartition{Topic: "d", Partition: 0}, [16]byte{1}, durableConfig())
	if err != nil {
		t.Fatal(err)
	}
	before := m.SyncStats()
	for i := range 3 {
		if _, err := l.AppendAsLeader(leaderBatches(t, spec(1, int64(i)).build(t)), 0, AppendOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := l.WaitDurable(); err != nil {
			t.Fatal(err)
		}
	}
	st := m.SyncStats()
	if st.GroupCommitRounds-before.GroupCommitRounds < 1 || st.GroupCommitLogFlushes-before.GroupCommitLogFlushes < 1 {
		t.Fatalf("group commit not counted: %+v -> %+v", before, st)
	}
	if st.LogFlushes-before.LogFlushes < st.GroupCommitLogFlushes-before.GroupCommitLogFlushes {
		t.Fatalf("log flushes %d fewer than group commit flushes: %+v", st.LogFlushes, st)
	}
	if st.DataSyncs <= before.DataSyncs {
		t.Fatalf("no data syncs counted: %+v -> %+v", before, st)
	}
	if st.DirSyncs == 0 {
		t.Fatalf("no directory syncs counted (creating the partition syncs its parent): %+v", st)
	}
	mu.Lock()
	defer mu.Unlock()
	if int64(rounds) != st.GroupCommitRounds || int64(roundLogs) != st.GroupCommitLogFlushes {
		t.Fatalf("observer saw %d rounds of %d logs, stats %+v", rounds, roundLogs, st)
	}
}

// Closing a log syncs its dir once: the producer snapshot's write syncs it
// after the active segment is trimmed, and a second sync of the same dir
// made each of 10,000 logs cost one more fsync on SIGTERM.
func TestCloseSyncsTheLogDirOnce(t *testing.T) {
	m, err := NewManager([]string{t.TempDir()}, ManagerOptions{Logger: discardLogger(), ResourceLimits: unlimitedResources})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	l, err := m.Open(TopicPartition{Topic: "d", Partition: 0}, [16]byte{1}, DefaultLogConfig())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.AppendAsLeader(leaderBatches(t, spec(1, 0).build(t)), 0, AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	before := m.SyncStats()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if got := m.SyncStats().DirSyncs - before.DirSyncs; got != 1 {
		t.Fatalf("closing the log synced directories %d times, want 1 (the producer snapshot's)", got)
	}
}

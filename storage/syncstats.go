package storage

import (
	"os"
	"sync/atomic"
	"time"

	"github.com/kbroker/kbroker/storage/vfs"
)

// Sync accounting, for metrics: how many group commit rounds ran and how
// many logs they flushed, how many log flushes of any kind there were
// (group commit, flush.ms, rolls, close, truncation), and how many
// syncs reached the file system: data syncs (fsync of a file, msync of a
// range) and directory syncs. The disk pays for the last two; a group
// commit round costs a few data syncs per log it flushes.

// SyncStats are a Manager's sync counters since it started.
type SyncStats struct {
	GroupCommitRounds     int64 // group commit rounds (each flushes every durable log appended since the last)
	GroupCommitLogFlushes int64 // logs flushed by those rounds
	LogFlushes            int64 // log flushes of any kind that completed
	DataSyncs             int64 // fsyncs and msyncs issued
	DirSyncs              int64 // directory fsyncs issued
}

// syncCounters are shared by a Manager, its logs and its file system.
type syncCounters struct {
	logFlushes, dataSyncs, dirSyncs atomic.Int64
}

// SyncStats returns the sync counters.
func (m *Manager) SyncStats() SyncStats {
	g := m.GroupSyncStats()
	return SyncStats{
		GroupCommitRounds:     g.Rounds,
		GroupCommitLogFlushes: g.Syncs,
		LogFlushes:            m.counters.logFlushes.Load(),
		DataSyncs:             m.counters.dataSyncs.Load(),
		DirSyncs:              m.counters.dirSyncs.Load(),
	}
}

// countingFS counts the syncs that go through a file system.
type countingFS struct {
	vfs.FS
	c *syncCounters
}

func (f countingFS) OpenFile(name string, flag int, perm os.FileMode) (vfs.File, error) {
	file, err := f.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return countingFile{File: file, c: f.c}, nil
}

func (f countingFS) SyncDir(dir string) error {
	f.c.dirSyncs.Add(1)
	return f.FS.SyncDir(dir)
}

func (f countingFS) SyncFS(dir string) error {
	f.c.dataSyncs.Add(1)
	f.c.dirSyncs.Add(1)
	return f.FS.SyncFS(dir)
}

func (f countingFS) Msync(name string, b []byte, from, to int64) error {
	f.c.dataSyncs.Add(1)
	return f.FS.Msync(name, b, from, to)
}

type countingFile struct {
	vfs.File
	c *syncCounters
}

func (f countingFile) Sync() error {
	f.c.dataSyncs.Add(1)
	return f.File.Sync()
}

// roundObserver is told of each group commit round: how long it took and
// how many logs it flushed (ManagerOptions.OnGroupCommitRound).
type roundObserver func(d time.Duration, logs int)

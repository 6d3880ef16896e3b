package storage

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kbroker/kbroker/storage/vfs"
)

// closeSyncLogs is how many one-record logs the close tests hold.
const closeSyncLogs = 10

func openOneRecordLogs(t *testing.T, m *Manager) []TopicPartition {
	t.Helper()
	batch := batchOfSize(t, 200, time.Now().UnixMilli())
	var tps []TopicPartition
	for p := range closeSyncLogs {
		tp := TopicPartition{Topic: "close", Partition: int32(p)}
		l, err := m.Open(tp, [16]byte{2}, DefaultLogConfig())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.AppendAsLeader(leaderBatches(t, batch), 0, AppendOptions{}); err != nil {
			t.Fatal(err)
		}
		tps = append(tps, tp)
	}
	return tps
}

// Closing a manager costs a few syncs per log dir, not a few per log: the
// logs close without syncing and one syncfs of the dir makes them durable
// (with thousands of logs the per-log fsyncs, serialised by the journal,
// took 23-60 s on SIGTERM).
func TestManagerCloseSyncsPerDirNotPerLog(t *testing.T) {
	m, err := NewManager([]string{t.TempDir()}, ManagerOptions{Logger: discardLogger(), ResourceLimits: unlimitedResources})
	if err != nil {
		t.Fatal(err)
	}
	openOneRecordLogs(t, m)
	before := m.SyncStats()
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	after := m.SyncStats()
	data, dirs := after.DataSyncs-before.DataSyncs, after.DirSyncs-before.DirSyncs
	// One syncfs (counted as both) plus the checkpoint files and the
	// marker (an fsync and a dir sync each).
	if data > 8 || dirs > 8 {
		t.Fatalf("closing %d one-record logs took %d data syncs and %d dir syncs; want a few for the dir, none per log",
			closeSyncLogs, data, dirs)
	}
}

// Wherever the power is cut during a manager's close, a clean-shutdown
// marker or a recovery point that made it to disk vouches only for data on
// disk: the crash model counts the syncfs as syncing everything under the
// log dir, and nothing claims more before it.
func TestManagerCloseMarkerOnlyAfterDataDurable(t *testing.T) {
	// A first run counts the close's file system calls.
	total := func() int64 {
		dir := t.TempDir()
		cfs, err := vfs.NewCrashFS(dir)
		if err != nil {
			t.Fatal(err)
		}
		m, err := NewManager([]string{dir}, ManagerOptions{FS: cfs, Logger: discardLogger(), ResourceLimits: unlimitedResources})
		if err != nil {
			t.Fatal(err)
		}
		openOneRecordLogs(t, m)
		start := cfs.Ops()
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
		return cfs.Ops() - start
	}()
	sawMarker := false
	for cut := int64(1); cut <= total+1; cut++ {
		dir := t.TempDir()
		cfs, err := vfs.NewCrashFS(dir)
		if err != nil {
			t.Fatal(err)
		}
		m, err := NewManager([]string{dir}, ManagerOptions{FS: cfs, Logger: discardLogger(), ResourceLimits: unlimitedResources})
		if err != nil {
			t.Fatal(err)
		}
		tps := openOneRecordLogs(t, m)
		cfs.CutAfter(cut, nil)
		m.Close()
		img := cfs.Cut(nil)
		if err := cfs.Restore(img); err != nil {
			t.Fatal(err)
		}
		_, marker := img.Files[CleanShutdownFile]
		sawMarker = sawMarker || marker
		claimed, err := readOffsetCheckpoint(vfs.Default, filepath.Join(dir, RecoveryPointCheckpointFile))
		if err != nil {
			t.Fatal(err)
		}
		m2, err := NewManager([]string{dir}, ManagerOptions{Logger: discardLogger(), ResourceLimits: unlimitedResources})
		if err != nil {
			t.Fatalf("cut %d: reopen: %v", cut, err)
		}
		for _, tp := range tps {
			l, err := m2.Open(tp, [16]byte{2}, DefaultLogConfig())
			if err != nil {
				t.Fatalf("cut %d: open %v: %v", cut, tp, err)
			}
			if leo := l.LogEndOffset(); (marker && leo != 1) || leo < claimed[tp] {
				t.Fatalf("cut %d of %d: %v recovered to %d; marker on disk %v, recovery point on disk %d",
					cut, total, tp, leo, marker, claimed[tp])
			}
		}
		m2.Close()
		os.RemoveAll(dir)
	}
	if !sawMarker {
		t.Fatalf("no cut point left a marker on disk (%d ops in a close)", total)
	}
}

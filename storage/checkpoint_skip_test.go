package storage

import (
	"os"
	"path/filepath"
	"testing"
)

// checkpointFiles are a log dir's offset checkpoint files.
var checkpointFiles = []string{RecoveryPointCheckpointFile, ReplicationCheckpointFile, LogStartOffsetCheckpointFile,
	CleanerOffsetCheckpointFile}

// statCheckpoints returns each checkpoint file's identity: a rewrite (a
// new file renamed over it) changes it.
func statCheckpoints(t *testing.T, dir string) map[string]os.FileInfo {
	t.Helper()
	out := map[string]os.FileInfo{}
	for _, name := range checkpointFiles {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		out[name] = fi
	}
	return out
}

// A checkpoint pass over partitions that did not change since the last
// pass writes nothing (and the one after it reads nothing); a moved HW
// rewrites the replication checkpoint alone, with the new offset.
func TestWriteCheckpointsSkipsUnchangedFiles(t *testing.T) {
	dir := t.TempDir()
	m, _, _, _ := newTestManager(t, []string{dir})
	defer m.Close()
	logs := make([]*Log, 20)
	for p := range logs {
		l, err := m.Open(TopicPartition{"orders", int32(p)}, [16]byte{1}, smallConfig())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.AppendAsLeader(leaderBatches(t, spec(3, 1000).build(t)), 0, AppendOptions{}); err != nil {
			t.Fatal(err)
		}
		logs[p] = l
	}
	if err := m.WriteCheckpoints(); err != nil {
		t.Fatal(err)
	}
	first := statCheckpoints(t, dir)
	for range 2 {
		if err := m.WriteCheckpoints(); err != nil {
			t.Fatal(err)
		}
		for name, fi := range statCheckpoints(t, dir) {
			if !os.SameFile(fi, first[name]) {
				t.Fatalf("%s rewritten by a pass over unchanged partitions", name)
			}
		}
	}
	if m.checkpointDirty.Load() {
		t.Fatal("checkpoints marked dirty with no offset moved: the next pass would read every log")
	}
	logs[4].SetHighWatermark(3)
	logs[4].SetHighWatermark(2)
	if !m.checkpointDirty.Load() {
		t.Fatal("an HW move did not mark the checkpoints dirty")
	}
	if err := m.WriteCheckpoints(); err != nil {
		t.Fatal(err)
	}
	for name, fi := range statCheckpoints(t, dir) {
		if rewritten := !os.SameFile(fi, first[name]); rewritten != (name == ReplicationCheckpointFile) {
			t.Fatalf("%s: rewritten %v after an HW move", name, rewritten)
		}
	}
	hws, err := readOffsetCheckpoint(m.opts.FS, filepath.Join(dir, ReplicationCheckpointFile))
	if err != nil || hws[TopicPartition{"orders", 4}] != 2 || len(hws) != len(logs) {
		t.Fatalf("replication checkpoint %v (%v), want orders-4 at 2 among %d", hws, err, len(logs))
	}
}

// The first pass of a manager writes the checkpoint files even with no
// partition (empty files, as Kafka has them from its first interval).
func TestFirstCheckpointPassWritesEmptyFiles(t *testing.T) {
	dir := t.TempDir()
	m, _, _, _ := newTestManager(t, []string{dir})
	defer m.Close()
	if err := m.WriteCheckpoints(); err != nil {
		t.Fatal(err)
	}
	statCheckpoints(t, dir)
}

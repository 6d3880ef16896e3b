package storage

import (
	"errors"
	"github.com/kbroker/kbroker/storage/vfs"
	"os"
	"path/filepath"
	"testing"
)

func newTestEpochCache(t *testing.T, leo int64) (*EpochCache, string) {
	dir := t.TempDir()
	c, err := loadEpochCache(vfs.Default, dir, func() int64 { return leo })
	if err != nil {
		t.Fatal(err)
	}
	return c, dir
}

// Kafka LeaderEpochFileCache.endOffsetFor semantics (KIP-101, KIP-279).
func TestEpochCacheEndOffsetFor(t *testing.T) {
	c, _ := newTestEpochCache(t, 100)
	if e, o := c.EndOffsetFor(0); e != -1 || o != -1 {
		t.Fatalf("empty cache: (%d, %d)", e, o)
	}
	for _, a := range []EpochEntry{{2, 10}, {4, 30}, {7, 50}} {
		if err := c.Assign(a.Epoch, a.StartOffset); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		req       int32
		wantEpoch int32
		wantEnd   int64
	}{
		{-1, -1, -1}, // undefined
		{7, 7, 100},  // latest epoch: the log end offset
		{4, 4, 50},   // start of the next epoch
		{5, 4, 50},   // unknown epoch between: largest epoch below it
		{3, 2, 30},   //
		{8, -1, -1},  // beyond every epoch
		{1, 1, 10},   // below the first epoch: Kafka answers (requested, first start)
	}
	for _, c2 := range cases {
		if e, o := c.EndOffsetFor(c2.req); e != c2.wantEpoch || o != c2.wantEnd {
			t.Errorf("EndOffsetFor(%d) = (%d, %d), want (%d, %d)", c2.req, e, o, c2.wantEpoch, c2.wantEnd)
		}
	}
}

func TestEpochCacheAssignAndTruncate(t *testing.T) {
	c, dir := newTestEpochCache(t, 100)
	c.Assign(1, 0)
	c.Assign(1, 5) // same epoch: ignored
	c.Assign(0, 7) // older epoch: ignored
	c.Assign(3, 20)
	c.Assign(5, 40)
	if c.LatestEpoch() != 5 || len(c.Entries()) != 3 {
		t.Fatalf("entries %+v", c.Entries())
	}
	// A new epoch starting below existing entries drops them (monotonic).
	c.Assign(6, 20)
	if got := c.Entries(); len(got) != 2 || got[1] != (EpochEntry{6, 20}) {
		t.Fatalf("entries %+v", got)
	}
	c.Assign(8, 60)
	c.Assign(9, 80)
	if err := c.TruncateFromEnd(60); err != nil {
		t.Fatal(err)
	}
	if got := c.Entries(); len(got) != 2 || c.LatestEpoch() != 6 {
		t.Fatalf("after TruncateFromEnd: %+v", got)
	}
	if err := c.TruncateFromStart(25); err != nil {
		t.Fatal(err)
	}
	if got := c.Entries(); len(got) != 1 || got[0] != (EpochEntry{6, 25}) {
		t.Fatalf("after TruncateFromStart: %+v", got)
	}

	// The file is Kafka's text format and round-trips.
	data, err := os.ReadFile(filepath.Join(dir, LeaderEpochCheckpointFile))
	if err != nil || string(data) != "0\n1\n6 25\n" {
		t.Fatalf("file %q %v", data, err)
	}
	c2, err := loadEpochCache(vfs.Default, dir, func() int64 { return 0 })
	if err != nil || len(c2.Entries()) != 1 || c2.Entries()[0] != (EpochEntry{6, 25}) {
		t.Fatalf("reloaded %+v %v", c2.Entries(), err)
	}
}

func TestEpochCacheCorruptFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, LeaderEpochCheckpointFile)
	for _, content := range []string{"0\n2\n1 0\n", "1\n0\n", "0\n1\n1 x\n", "0\n2\n3 0\n2 5\n", "0\n1\n1 0"} {
		os.WriteFile(path, []byte(content), 0o644)
		if _, err := loadEpochCache(vfs.Default, dir, func() int64 { return 0 }); !errors.Is(err, ErrCorruptCheckpoint) {
			t.Errorf("%q: %v", content, err)
		}
	}
}

func TestLogRebuildsMissingEpochCache(t *testing.T) {
	e := newTestEnv(t)
	l := e.open(smallConfig(), LogState{})
	l.AppendAsLeader(leaderBatches(t, spec(2, 0).build(t)), 3, AppendOptions{})
	l.AppendAsLeader(leaderBatches(t, spec(2, 0).build(t)), 5, AppendOptions{})
	l.Close()
	os.Remove(filepath.Join(e.dir, LeaderEpochCheckpointFile))
	l2 := e.open(smallConfig(), LogState{CleanShutdown: true, RecoveryPoint: 4})
	defer l2.Close()
	if got := l2.EpochCache().Entries(); len(got) != 2 || got[0] != (EpochEntry{3, 0}) || got[1] != (EpochEntry{5, 2}) {
		t.Fatalf("rebuilt %+v", got)
	}
}

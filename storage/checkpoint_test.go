package storage

import (
	"errors"
	"github.com/kbroker/kbroker/storage/vfs"
	"os"
	"path/filepath"
	"testing"
)

func TestOffsetCheckpointRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), RecoveryPointCheckpointFile)
	if got, err := readOffsetCheckpoint(vfs.Default, path); err != nil || len(got) != 0 {
		t.Fatalf("missing file: %v %v", got, err)
	}
	in := map[TopicPartition]int64{{"b", 1}: 7, {"a", 10}: 1 << 40, {"a", 2}: 0}
	if err := writeOffsetCheckpoint(vfs.Default, path, in); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	if string(data) != "0\n3\na 2 0\na 10 1099511627776\nb 1 7\n" {
		t.Fatalf("file %q", data)
	}
	out, err := readOffsetCheckpoint(vfs.Default, path)
	if err != nil || len(out) != 3 || out[TopicPartition{"a", 10}] != 1<<40 {
		t.Fatalf("%v %v", out, err)
	}
	if _, err := os.Stat(path + ".tmp"); !os.IsNotExist(err) {
		t.Fatal("temporary file left")
	}
	for _, bad := range []string{"", "0\n", "0\n2\na 0 1\n", "1\n0\n", "0\n1\na 0\n", "0\n1\na x 1\n", "0\n1\na 0 1"} {
		os.WriteFile(path, []byte(bad), 0o644)
		if _, err := readOffsetCheckpoint(vfs.Default, path); !errors.Is(err, ErrCorruptCheckpoint) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

func TestPartitionMetadataFormat(t *testing.T) {
	dir := t.TempDir()
	id := [16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	os.WriteFile(filepath.Join(dir, PartitionMetadataFile), []byte("version: 0\ntopic_id: "+encodeTopicID(id)+"\n"), 0o644)
	got, err := readPartitionMetadata(vfs.Default, dir)
	if err != nil || got != id {
		t.Fatalf("%x %v", got, err)
	}
	os.WriteFile(filepath.Join(dir, PartitionMetadataFile), []byte("version: 1\ntopic_id: x\n"), 0o644)
	if _, err := readPartitionMetadata(vfs.Default, dir); !errors.Is(err, ErrCorruptCheckpoint) {
		t.Fatal(err)
	}
}

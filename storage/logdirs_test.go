package storage

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPrepareLogDirsCreatesDirs(t *testing.T) {
	root := t.TempDir()
	dirs := []string{filepath.Join(root, "a", "b"), filepath.Join(root, "c")}
	if err := PrepareLogDirs(dirs); err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		entries, err := os.ReadDir(d)
		if err != nil || len(entries) != 0 {
			t.Fatalf("%s: %v, %d entries (the write probe must be gone)", d, err, len(entries))
		}
	}
}

func TestPrepareLogDirsUnderAFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	err := PrepareLogDirs([]string{filepath.Join(file, "logs")})
	if err == nil || !strings.HasPrefix(err.Error(), "creating "+file) {
		t.Fatalf("err = %v", err)
	}
}

func readMeta(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, MetaPropertiesFile))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestWriteMetaProperties(t *testing.T) {
	dirs := []string{t.TempDir(), t.TempDir()}
	// Before the cluster id is known (a first start), then with it.
	for _, cid := range []string{"", "cluster-A"} {
		if err := WriteMetaProperties(dirs, 3, cid); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range dirs {
		if got, want := readMeta(t, d), "#kbroker\nversion=1\nnode.id=3\ncluster.id=cluster-A\n"; got != want {
			t.Fatalf("%s: %q, want %q", d, got, want)
		}
		if _, err := os.Stat(filepath.Join(d, MetaPropertiesFile+".tmp")); !os.IsNotExist(err) {
			t.Fatalf("temporary file left: %v", err)
		}
	}
}

// A dir of another node or cluster is refused and left as it was.
func TestWriteMetaPropertiesRefusesForeignDir(t *testing.T) {
	dir := t.TempDir()
	// As Kafka writes it: a date comment and a directory id.
	kafka := "#\n#Wed Jan 01 00:00:00 UTC 2025\nnode.id=3\ndirectory.id=x\nversion=1\ncluster.id=cluster-A\n"
	if err := os.WriteFile(filepath.Join(dir, MetaPropertiesFile), []byte(kafka), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		node    int32
		cluster string
		want    string
	}{
		{4, "cluster-A", "log dir " + dir + " belongs to node.id=3, not 4"},
		{3, "cluster-B", "log dir " + dir + " belongs to cluster.id=cluster-A, not cluster-B"},
	}
	for _, c := range cases {
		err := WriteMetaProperties([]string{dir}, c.node, c.cluster)
		if err == nil || err.Error() != c.want {
			t.Fatalf("node %d cluster %s: err = %v, want %q", c.node, c.cluster, err, c.want)
		}
		if readMeta(t, dir) != kafka {
			t.Fatal("refused dir was rewritten")
		}
	}
	// Its own node and cluster take it over, and so does its node before
	// the cluster id is known.
	for _, cid := range []string{"", "cluster-A"} {
		if err := WriteMetaProperties([]string{dir}, 3, cid); err != nil {
			t.Fatal(err)
		}
	}
}

func TestWriteMetaPropertiesMalformed(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, MetaPropertiesFile)
	if err := os.WriteFile(path, []byte("node.id=\\u12\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := WriteMetaProperties([]string{dir}, 1, "c")
	if err == nil || !strings.Contains(err.Error(), "reading "+path) {
		t.Fatalf("err = %v", err)
	}
}

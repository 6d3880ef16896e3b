package storage

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kbroker/kbroker/storage/vfs"
)

// blockingFS holds MkdirAll of one path until release is closed, and says
// when it got there.
type blockingFS struct {
	vfs.FS
	path    string
	reached chan struct{}
	release chan struct{}
}

func (f *blockingFS) MkdirAll(path string, perm os.FileMode) error {
	if path == f.path {
		close(f.reached)
		<-f.release
	}
	return f.FS.MkdirAll(path, perm)
}

// Opening one partition does not wait for another partition's Open: the
// broker opens many logs at once (creating or loading them is mostly
// waiting on fsyncs), and one Open at a time made creating 1,000
// partitions take 8-10 s per broker. Open of the same partition and Close
// still wait.
func TestOpenOfOnePartitionDoesNotWaitForAnother(t *testing.T) {
	dir := t.TempDir()
	fsys := &blockingFS{FS: vfs.Default, path: filepath.Join(dir, "slow-0"),
		reached: make(chan struct{}), release: make(chan struct{})}
	m, err := NewManager([]string{dir}, ManagerOptions{FS: fsys, Logger: discardLogger(), ResourceLimits: unlimitedResources})
	if err != nil {
		t.Fatal(err)
	}
	slow := make(chan error, 1)
	go func() {
		_, err := m.Open(TopicPartition{Topic: "slow", Partition: 0}, [16]byte{1}, DefaultLogConfig())
		slow <- err
	}()
	<-fsys.reached
	fast := make(chan error, 1)
	go func() {
		_, err := m.Open(TopicPartition{Topic: "fast", Partition: 0}, [16]byte{2}, DefaultLogConfig())
		fast <- err
	}()
	sameAgain := make(chan error, 1)
	go func() {
		_, err := m.Open(TopicPartition{Topic: "slow", Partition: 0}, [16]byte{1}, DefaultLogConfig())
		sameAgain <- err
	}()
	select {
	case err := <-fast:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Open of fast-0 still waits for the Open of slow-0 after a minute")
	}
	select {
	case <-sameAgain:
		t.Fatal("a second Open of slow-0 returned while the first was still creating it")
	default:
	}
	close(fsys.release)
	if err := <-slow; err != nil {
		t.Fatal(err)
	}
	if err := <-sameAgain; err != nil {
		t.Fatal(err)
	}
	a, _ := m.Get(TopicPartition{Topic: "slow", Partition: 0})
	b, _ := m.Get(TopicPartition{Topic: "fast", Partition: 0})
	if a == nil || b == nil {
		t.Fatalf("open logs: slow-0 %v, fast-0 %v", a != nil, b != nil)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
}

package broker

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/config"
	"github.com/kbroker/kbroker/internal/testsupport"
	"github.com/kbroker/kbroker/storage/vfs"
)

// stallingFS holds MkdirAll of one path until release is closed.
type stallingFS struct {
	vfs.FS
	path    string
	reached chan struct{}
	release chan struct{}
}

func (f *stallingFS) MkdirAll(path string, perm os.FileMode) error {
	if path == f.path {
		close(f.reached)
		<-f.release
	}
	return f.FS.MkdirAll(path, perm)
}

// The partitions of an image this broker does not hold yet are opened
// several at once, not one after the other: creating a log or loading one
// is mostly waiting on fsyncs, and one at a time made creating 10,000
// partitions (make bench-scale) take minutes. While the log of t-0 cannot
// be created, the other partitions of the same topic are.
func TestNewPartitionsOpenConcurrently(t *testing.T) {
	dir := t.TempDir()
	fsys := &stallingFS{FS: vfs.Default, path: filepath.Join(dir, "t-0"), reached: make(chan struct{}), release: make(chan struct{})}
	ports := testsupport.FreePorts(t, 2)
	cfg := config.Defaults()
	cfg.NodeID = 1
	l, err := config.ParseListeners(fmt.Sprintf("PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d", ports[0], ports[1]))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Listeners, cfg.AdvertisedListeners = l, l[:1]
	cfg.ControllerListenerNames = []string{"CONTROLLER"}
	cfg.LogDirs = []string{dir}
	cfg.ControlledShutdownEnable = false
	cfg.MetricsListen = ""
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	b := New(cfg, slog.New(slog.DiscardHandler))
	b.fs = fsys
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := b.Start(ctx); err != nil {
		b.Shutdown(context.Background())
		t.Fatal(err)
	}
	released := false
	release := func() {
		if !released {
			released = true
			close(fsys.release)
		}
	}
	t.Cleanup(func() {
		release()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		b.Shutdown(ctx)
	})

	const partitions = 4
	ct := kmsg.NewPtrCreateTopicsRequest()
	ct.SetVersion(7)
	ct.TimeoutMillis = 30000
	topic := kmsg.NewCreateTopicsRequestTopic()
	topic.Topic, topic.NumPartitions, topic.ReplicationFactor = "t", partitions, 1
	ct.Topics = append(ct.Topics, topic)
	created := make(chan kmsg.Response, 1)
	go func() { created <- runRequest(t, b, ct) }()
	<-fsys.reached

	deadline := time.Now().Add(time.Minute)
	for {
		held := 0
		for i := int32(1); i < partitions; i++ {
			if _, ok := b.replicas.Partition("t", i); ok {
				held++
			}
		}
		if held == partitions-1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of t-1..t-%d opened while t-0 was being created, after a minute", held, partitions-1)
		}
		time.Sleep(10 * time.Millisecond)
	}
	release()
	resp := <-created
	if code := resp.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode; code != 0 {
		t.Fatalf("create topic: error %d", code)
	}
	if _, ok := b.replicas.Partition("t", 0); !ok {
		t.Fatal("t-0 not held after its creation was released")
	}
}

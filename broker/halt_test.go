package broker

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/config"
	"github.com/kbroker/kbroker/internal/testsupport"
	"github.com/kbroker/kbroker/storage"
	"github.com/kbroker/kbroker/storage/vfs"
)

// A failed fsync halts the broker (halt.go): the produce that hit it is
// answered KAFKA_STORAGE_ERROR, never acknowledged, Halted delivers the
// failure, and no clean-shutdown marker is written, so that the next start
// registers as after an unclean shutdown.
func TestFailedFsyncHaltsBroker(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "data")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cfs, err := vfs.NewCrashFS(root)
	if err != nil {
		t.Fatal(err)
	}
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
	cfg.MetricsListen = ""
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	b := New(cfg, slog.New(slog.DiscardHandler))
	b.fs = cfs
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := b.Start(ctx); err != nil {
		b.Abort()
		t.Fatal(err)
	}
	t.Cleanup(b.Abort)

	createTopicWith(t, b, "d", map[string]string{"flush.messages": "1"})
	produce := func() int16 {
		req := testsupport.ProduceRequest("d", 0, 1, 30000, benchBatch(1, 10))
		return runRequest(t, b, req).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode
	}
	if code := produce(); code != 0 {
		t.Fatalf("first produce: %v", kerr.ErrorForCode(code))
	}
	select {
	case err := <-b.Halted():
		t.Fatalf("halted before any failure: %v", err)
	default:
	}

	cfs.SetInjector(func(op vfs.Op, path string) error {
		if op.IsSync() && strings.Contains(path, "d-0") {
			return syscall.EIO
		}
		return nil
	})
	if code := produce(); code != kerr.KafkaStorageError.Code {
		t.Fatalf("produce after a failed fsync: %v, want KAFKA_STORAGE_ERROR", kerr.ErrorForCode(code))
	}
	select {
	case err := <-b.Halted():
		if !strings.Contains(err.Error(), dir) {
			t.Fatalf("halt reason %v does not name the log dir", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the broker did not halt")
	}
	b.Abort()
	if _, err := os.Stat(filepath.Join(dir, storage.CleanShutdownFile)); !os.IsNotExist(err) {
		t.Fatalf("clean-shutdown marker after a halt: %v", err)
	}
}

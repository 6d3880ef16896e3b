package broker

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kbroker/kbroker/storage"
)

// A goroutine of the broker that never ends (it once waited 23 minutes on a
// quorum that was gone) must not keep Shutdown from closing the logs and
// writing their clean-shutdown marker: the wait on it is bounded.
func TestShutdownBoundsStuckSteps(t *testing.T) {
	b := startTestBroker(t)
	b.stopStep = 200 * time.Millisecond
	stuck := make(chan struct{})
	t.Cleanup(func() { close(stuck) })
	b.wg.Add(1) // a serving goroutine that does not end
	go func() {
		defer b.wg.Done()
		<-stuck
	}()

	done := make(chan error, 1)
	go func() { done <- b.Shutdown(context.Background()) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("shutdown: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Shutdown did not return while a serving goroutine was stuck")
	}
	marker := filepath.Join(b.cfg.LogDirs[0], storage.CleanShutdownFile)
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("no clean-shutdown marker after the shutdown: %v", err)
	}
}

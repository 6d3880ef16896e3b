package broker

import (
	"log/slog"
	"testing"

	"github.com/kbroker/kbroker/config"
	"github.com/kbroker/kbroker/storage"
)

// num.recovery.threads.per.data.dir sets how many logs of each dir are
// opened (the partition apply pool) and closed (storage's Close) at once,
// as Kafka's log load and shutdown pools; kbroker's default is
// storage.DefaultLogWorkers.
func TestRecoveryThreadsSizeTheLogPools(t *testing.T) {
	cfg := config.Defaults()
	if cfg.NumRecoveryThreadsPerDataDir != storage.DefaultLogWorkers {
		t.Fatalf("default %d, want %d", cfg.NumRecoveryThreadsPerDataDir, storage.DefaultLogWorkers)
	}
	cfg.NumRecoveryThreadsPerDataDir = 3
	cfg.LogDirs = []string{"/a", "/b"}
	b := &Broker{cfg: cfg, logger: slog.New(slog.DiscardHandler), metrics: newMetrics()}
	if got := b.partitionApplyWorkers(); got != 6 {
		t.Fatalf("apply workers %d, want 3 per dir x 2 dirs", got)
	}
	if got := b.storageOptions().LogWorkersPerDir; got != 3 {
		t.Fatalf("storage close workers per dir %d, want 3", got)
	}
}

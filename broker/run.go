package broker

import (
	"context"
	"log/slog"
	"time"

	"github.com/kbroker/kbroker/config"
	"github.com/kbroker/kbroker/storage/vfs"
)

// shutdownTimeout bounds a clean shutdown: controlled shutdown, flush and
// checkpoints.
const shutdownTimeout = 30 * time.Second

// Run starts a broker from cfg and serves until ctx is cancelled, then shuts
// down cleanly.
func Run(ctx context.Context, cfg *config.Config, log *slog.Logger) error {
	return RunWith(ctx, cfg, log, nil)
}

// RunWith is Run with the log dirs on fsys (nil: the operating system's
// file system): the power-loss test harness records syncs through it.
func RunWith(ctx context.Context, cfg *config.Config, log *slog.Logger, fsys vfs.FS) error {
	b := New(cfg, log)
	b.fs = fsys
	startErr := b.Start(ctx)
	if startErr == nil {
		select {
		case <-ctx.Done():
			log.Info("shutting down")
		case err := <-b.Halted():
			b.Abort()
			return err
		}
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	err := b.Shutdown(sctx)
	if startErr != nil {
		if ctx.Err() != nil {
			return nil // interrupted while starting
		}
		return startErr
	}
	if err == nil {
		log.Info("shutdown complete")
	}
	return err
}

package broker

import (
	"context"
	"log/slog"
	"time"

	"github.com/kbroker/kbroker/config"
)

// shutdownTimeout bounds a clean shutdown: controlled shutdown, flush and
// checkpoints.
const shutdownTimeout = 30 * time.Second

// Run starts a broker from cfg and serves until ctx is cancelled, then shuts
// down cleanly.
func Run(ctx context.Context, cfg *config.Config, log *slog.Logger) error {
	b := New(cfg, log)
	startErr := b.Start(ctx)
	if startErr == nil {
		<-ctx.Done()
		log.Info("shutting down")
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

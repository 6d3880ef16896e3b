package broker

import (
	"context"
	"errors"
	"log/slog"

	"github.com/kbroker/kbroker/config"
)

// Run starts a broker from cfg and serves until ctx is cancelled.
func Run(ctx context.Context, cfg *config.Config, log *slog.Logger) error {
	return errors.New("broker: not built yet")
}

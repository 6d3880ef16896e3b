package broker

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/kbroker/kbroker/config"
	"github.com/kbroker/kbroker/internal/testsupport"
)

// startTestBroker runs a single-node broker in-process on free loopback
// ports with its data in a temp dir, and stops it when the test ends.
func startTestBroker(tb testing.TB, mutate ...func(*config.Config)) *Broker {
	tb.Helper()
	ports := testsupport.FreePorts(tb, 2)
	cfg := config.Defaults()
	cfg.NodeID = 1
	l, err := config.ParseListeners(fmt.Sprintf("PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d", ports[0], ports[1]))
	if err != nil {
		tb.Fatal(err)
	}
	cfg.Listeners = l
	cfg.AdvertisedListeners = l[:1]
	cfg.ControllerListenerNames = []string{"CONTROLLER"}
	cfg.LogDirs = []string{tb.TempDir()}
	cfg.ControlledShutdownEnable = false
	cfg.MetricsListen = ""
	for _, m := range mutate {
		m(cfg)
	}
	if err := cfg.Validate(); err != nil {
		tb.Fatal(err)
	}
	b := New(cfg, slog.New(slog.DiscardHandler))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := b.Start(ctx); err != nil {
		b.Shutdown(context.Background())
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := b.Shutdown(ctx); err != nil {
			tb.Errorf("shutdown: %v", err)
		}
	})
	return b
}

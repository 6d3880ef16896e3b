// Command pprofbroker is kbroker's serve command with net/http/pprof, for
// the profiling pass of the benchmark (bench/profile.go). kbroker itself has
// no profiling endpoint yet; this binary links the same broker package, so a
// profile of it is a profile of kbroker.
//
//	PPROF_LISTEN=127.0.0.1:6060 pprofbroker serve --node.id=1 ...
//
// It builds from the kbroker tree through this folder's go.work (nothing in
// the broker's go.mod changes): cd bench/pprofbroker && go build.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	_ "net/http/pprof"
	"os"
	"os/signal"
	"runtime"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/kbroker/kbroker/broker"
	"github.com/kbroker/kbroker/config"
	"github.com/kbroker/kbroker/internal/sysmon"
)

func main() {
	sysmon.KeepAwake() // as kbroker serve does (internal/sysmon)
	if os.Getenv("PPROF_LISTEN") != "" {
		// Sample an allocation every 16 KiB instead of 512 KiB, so that the
		// small per-request objects show up next to the frame buffers.
		runtime.MemProfileRate = 16 << 10
	}
	args := os.Args[1:]
	if len(args) > 0 && args[0] == "serve" {
		args = args[1:]
	}
	fs := pflag.NewFlagSet("pprofbroker", pflag.ContinueOnError)
	config.RegisterFlags(fs)
	if err := fs.Parse(args); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	cfg, err := config.Load(config.LoadArgs{Flags: fs})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(cfg.LogLevel)); err != nil {
		lvl = slog.LevelInfo
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lvl}))
	if addr := os.Getenv("PPROF_LISTEN"); addr != "" {
		// Sample every allocation site at the default rate, and record
		// blocking and mutex contention too: the optimiser wants them.
		runtime.SetMutexProfileFraction(5)
		runtime.SetBlockProfileRate(100_000) // one sample per 100 µs blocked
		go func() {
			log.Info("pprof listening", "addr", addr)
			if err := http.ListenAndServe(addr, nil); err != nil {
				log.Error("pprof listener failed", "err", err)
			}
		}()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := broker.Run(ctx, cfg, log); err != nil {
		log.Error("broker failed", "err", err)
		os.Exit(1)
	}
}

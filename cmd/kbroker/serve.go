package main

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kbroker/kbroker/config"
)

func (a *app) serveCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "serve [flags]",
		Short: "Run a broker (the default command)",
		Long: "Run a broker until SIGINT or SIGTERM; a second signal exits at once.\n\n" +
			"Every config key is a flag under its Kafka name (--log.dirs=/x,\n" +
			"--listeners=PLAINTEXT://:9092, --min.insync.replicas=2). Precedence, lowest\n" +
			"first: defaults, --config file, KBROKER_* environment, flags.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.serve(cmd.Context(), cmd.Flags()) },
	}
	config.RegisterFlags(cmd.Flags())
	return cmd
}

// serve loads the configuration, sets up logging and runs the broker until
// a signal or a failure.
func (a *app) serve(ctx context.Context, flags *pflag.FlagSet) error {
	cfg, err := config.Load(config.LoadArgs{Env: a.environ, Flags: flags})
	if err != nil {
		return &configError{err}
	}
	log, err := newLogger(a.stderr, cfg.LogFormat, cfg.LogLevel)
	if err != nil {
		return &configError{err}
	}
	for _, key := range cfg.Ignored {
		log.Warn("config key ignored: kbroker does not use it", "key", key)
	}
	for _, key := range cfg.Unknown {
		log.Warn("unknown config key", "key", key)
	}
	log.Info("starting kbroker", "version", version, "node.id", cfg.NodeID, "process.roles", cfg.ProcessRoles,
		"listeners", cfg.Listeners, "controller", cfg.ControllerListenAddr(), "log.dirs", cfg.LogDirs)

	ctx, stop := signalContext(ctx, log)
	defer stop()
	if err := a.run(ctx, cfg, log); err != nil {
		log.Error("broker failed", "err", err)
		return &runError{err}
	}
	log.Info("broker stopped")
	return nil
}

// signalContext returns a context cancelled on SIGINT or SIGTERM. The first
// signal also restores the default handling, so a second one ends the
// process at once. stop releases the signals and waits for the watching
// goroutine.
func signalContext(parent context.Context, log *slog.Logger) (ctx context.Context, stop func()) {
	ctx, stopNotify := signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		<-ctx.Done() // a signal, the parent, or stop
		stopNotify()
		if cause := context.Cause(ctx); parent.Err() == nil && cause != context.Canceled {
			log.Info("shutting down; signal again to exit at once", "cause", cause)
		}
	}()
	return ctx, func() {
		stopNotify()
		<-watched
	}
}

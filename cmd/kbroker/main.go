// Command kbroker runs a Kafka-wire-compatible broker.
//
//	kbroker                      serve with defaults: clients on 127.0.0.1:9092, data in ./data
//	kbroker serve [flags]        the same, with any config key as a flag (--log.dirs=/x)
//	kbroker --node.id=2 ...      flags without a subcommand also mean serve
//	kbroker version              print the version
//	kbroker plan [flags]         estimate brokers, storage and partitions for a workload
//	kbroker demo [scenario...]   acks, min.insync.replicas and unclean election on a throw-away cluster
//	kbroker topic|group|cluster|produce|consume|reassign ...   operate a cluster (admin.go)
//	kbroker format --add-scram   SCRAM credentials of the first admin, before the cluster first starts
//	kbroker dev-certs --dir D    a development CA and broker/client certificates (PEM stores)
//
// Exit status: 0 after a clean shutdown, 1 if the broker failed, 2 for bad
// flags or configuration. The operator's commands: 0 on success, 1 when the
// operation failed (or cluster health found the cluster unhealthy), 2 for
// bad input.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kbroker/kbroker/cli"
	"github.com/kbroker/kbroker/config"
	"github.com/kbroker/kbroker/internal/sysmon"
)

// Exit statuses.
const (
	exitOK      = 0
	exitFailure = 1 // the broker failed
	exitUsage   = 2 // bad command line or configuration
)

func main() {
	if servesBroker(os.Args[1:]) {
		sysmon.KeepAwake() // re-executes the process once (internal/sysmon)
	}
	environ := os.Environ()
	a := &app{stdout: os.Stdout, stderr: os.Stderr, environ: environ, run: runBroker(environ)}
	os.Exit(a.execute(context.Background(), os.Args[1:]))
}

// servesBroker reports whether args run a broker: no arguments, serve, or
// flags without a subcommand.
func servesBroker(args []string) bool {
	return len(args) == 0 || args[0] == "serve" || strings.HasPrefix(args[0], "-")
}

// runFunc starts a broker and serves until ctx is cancelled (broker.Run).
type runFunc func(ctx context.Context, cfg *config.Config, log *slog.Logger) error

// app is what the command needs from its process, so tests can run it in
// process with their own streams, environment and broker.
type app struct {
	stdout, stderr io.Writer
	environ        []string // KEY=VALUE, for KBROKER_* config
	run            runFunc
}

// configError is a bad configuration: exit status 2.
type configError struct{ err error }

func (e *configError) Error() string { return e.err.Error() }
func (e *configError) Unwrap() error { return e.err }

// runError is the broker failing: exit status 1. It has been logged.
type runError struct{ err error }

func (e *runError) Error() string { return e.err.Error() }
func (e *runError) Unwrap() error { return e.err }

// execute runs the command line args and returns the exit status.
func (a *app) execute(ctx context.Context, args []string) int {
	root := a.rootCmd()
	root.SetArgs(withDefaultCommand(args))
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	err := root.ExecuteContext(ctx)
	var cfgErr *configError
	var runErr *runError
	var exited *cli.ExitError // printed already (the operator's commands)
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &exited):
		return exited.ExitCode()
	case errors.As(err, &runErr):
		return exitFailure
	case errors.As(err, &cfgErr):
		fmt.Fprintln(a.stderr, err)
		return exitUsage
	default:
		fmt.Fprintf(a.stderr, "kbroker: %v\nRun 'kbroker --help' or 'kbroker serve --help' for usage.\n", err)
		return exitUsage
	}
}

func (a *app) rootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "kbroker",
		Short: "A Kafka-wire-compatible broker",
		Long: "kbroker is a Kafka broker: any Kafka client works with it unchanged.\n\n" +
			"Without a subcommand it runs 'serve'. Configuration comes from defaults, a\n" +
			"--config file (YAML, TOML or Kafka server.properties), KBROKER_* environment\n" +
			"variables (KBROKER_LOG_DIRS for log.dirs) and flags, each overriding the last.",
		SilenceUsage:      true,
		SilenceErrors:     true,
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
	}
	// One file per subcommand: serve.go, version.go, plan.go, demo.go,
	// admin.go (the operator's commands), format.go, devcerts.go.
	root.AddCommand(a.serveCmd(), a.versionCmd(), a.planCmd(), a.demoCmd(), a.formatCmd(), a.devCertsCmd())
	root.AddCommand(a.adminCmds()...)
	return root
}

// withDefaultCommand makes serve the default subcommand: no arguments, or
// flags first (kbroker --node.id=2), mean kbroker serve. Help and version
// flags stay the root's.
func withDefaultCommand(args []string) []string {
	if len(args) == 0 {
		return []string{"serve"}
	}
	switch first := args[0]; {
	case first == "-h" || first == "--help" || first == "--version":
		return args
	case strings.HasPrefix(first, "-"):
		return append([]string{"serve"}, args...)
	}
	return args
}

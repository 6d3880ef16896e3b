package cli

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/kbroker/kbroker/admin"
	"github.com/kbroker/kbroker/internal/properties"
)

// Exit statuses of the admin commands.
const (
	ExitFailure = 1 // the operation failed, or the cluster is unhealthy
	ExitUsage   = 2 // bad command line or input
)

// ExitError ends a command whose error has been printed already.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string { return e.Err.Error() }
func (e *ExitError) Unwrap() error { return e.Err }

// ExitCode is the process exit status.
func (e *ExitError) ExitCode() int { return e.Code }

// UsageError is bad input: a malformed flag value, offset, time or move.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

func usagef(format string, args ...any) error { return &UsageError{fmt.Errorf(format, args...)} }

// Commands returns the admin commands of the kbroker binary: topic, group,
// cluster, produce, consume, reassign, acl, user, transactions and completion. environ is the
// process environment (KBROKER_BROKERS, KBROKER_PROFILE, HOME).
func Commands(environ []string) []*cobra.Command {
	g := &globals{environ: environ}
	cmds := []*cobra.Command{g.topicCmd(), g.groupCmd(), g.clusterCmd(), g.produceCmd(), g.consumeCmd(), g.reassignCmd(),
		g.aclCmd(), g.userCmd(), g.transactionsCmd()}
	for _, c := range cmds {
		g.addConnFlags(c)
		c.SetFlagErrorFunc(flagError)
	}
	return append(cmds, completionCmd())
}

// globals are the flags every admin command shares.
type globals struct {
	environ []string
	brokers string
	x       []string
	profile string
	format  string
}

const formatFlag = "format"

func (g *globals) addConnFlags(c *cobra.Command) {
	f := c.PersistentFlags()
	f.StringVar(&g.brokers, "brokers", "", ex("comma-separated host:port of brokers to bootstrap from; overrides the profile, KBROKER_BROKERS and -X", "--brokers 10.0.0.1:9092,10.0.0.2:9092"))
	f.StringArrayVarP(&g.x, "client-config", "X", nil, ex("a client config key=value under Kafka's client names, repeatable: "+keyList(), "-X security.protocol=SASL_SSL -X sasl.mechanism=SCRAM-SHA-256"))
	f.StringVar(&g.profile, "profile", "", ex("a Kafka client .properties file with the same keys as -X (default $KBROKER_PROFILE, else ~/.config/kbroker/profile.properties if it exists)", "--profile ./prod.properties"))
	f.StringVar(&g.format, formatFlag, "table", ex("output format: table (aligned for a terminal) or json", "--format json"))
}

func keyList() string {
	var names []string
	for _, k := range admin.ConfigKeys() {
		names = append(names, k.Name)
	}
	return strings.Join(names, ", ")
}

// ex appends an example to a flag's usage: every flag shows one.
func ex(usage, example string) string { return usage + " (e.g. " + example + ")" }

// config builds the connection settings: defaults < profile file <
// KBROKER_BROKERS < -X < --brokers.
func (g *globals) config() (admin.Config, error) {
	cfg := admin.DefaultConfig()
	path, explicit := g.profilePath()
	if path != "" {
		if err := loadProfile(&cfg, path, explicit); err != nil {
			return cfg, err
		}
	}
	if b := g.env("KBROKER_BROKERS"); b != "" {
		if err := cfg.Set("bootstrap.servers", b); err != nil {
			return cfg, usagef("KBROKER_BROKERS: %v", err)
		}
	}
	for _, kv := range g.x {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return cfg, usagef("-X %s: want key=value", kv)
		}
		if err := cfg.Set(strings.TrimSpace(k), v); err != nil {
			return cfg, usagef("-X: %v", err)
		}
	}
	if g.brokers != "" {
		if err := cfg.Set("bootstrap.servers", g.brokers); err != nil {
			return cfg, usagef("--brokers: %v", err)
		}
	}
	if err := cfg.Validate(); err != nil {
		return cfg, &UsageError{err}
	}
	return cfg, nil
}

// profilePath is the profile to read and whether it was asked for (then
// it must exist).
func (g *globals) profilePath() (string, bool) {
	if g.profile != "" {
		return g.profile, true
	}
	if p := g.env("KBROKER_PROFILE"); p != "" {
		return p, true
	}
	if home := g.env("HOME"); home != "" {
		return filepath.Join(home, ".config", "kbroker", "profile.properties"), false
	}
	return "", false
}

func loadProfile(cfg *admin.Config, path string, mustExist bool) error {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) && !mustExist {
		return nil
	}
	if err != nil {
		return usagef("profile: %v", err)
	}
	props, err := properties.Parse(b)
	if err != nil {
		return usagef("profile %s: %v", path, err)
	}
	for _, k := range sortedKeys(props) {
		if err := cfg.Set(k, props[k]); err != nil {
			return usagef("profile %s: %v", path, err)
		}
	}
	return nil
}

func (g *globals) env(name string) string {
	for _, kv := range g.environ {
		if k, v, ok := strings.Cut(kv, "="); ok && k == name {
			return v
		}
	}
	return ""
}

// out is how a command prints its result.
func (g *globals) out(cmd *cobra.Command) (*printer, error) {
	switch g.format {
	case "table", "json":
		return &printer{w: cmd.OutOrStdout(), json: g.format == "json"}, nil
	}
	return nil, usagef("--format %s: want table or json", g.format)
}

// session is what a command body gets: a client, its context and the
// printer.
type session struct {
	ctx context.Context
	c   *admin.Client
	p   *printer
	cmd *cobra.Command
}

// run runs a command body against the cluster. bounded bodies get the
// request timeout as their deadline; long ones (waits, consumers) manage
// their own. Errors are printed here, once, on one line.
func (g *globals) run(bounded bool, body func(s *session, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("internal error: %v", r)
			}
			err = printed(cmd, err)
		}()
		p, err := g.out(cmd)
		if err != nil {
			return err
		}
		cfg, err := g.config()
		if err != nil {
			return err
		}
		c, err := admin.Dial(cfg)
		if err != nil {
			return &UsageError{err}
		}
		defer c.Close()
		ctx := cmd.Context()
		var cancel context.CancelFunc
		if bounded {
			ctx, cancel = context.WithTimeout(ctx, cfg.RequestTimeout)
		} else { // followers and waits end on ^C, cleanly
			ctx, cancel = signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
		}
		defer cancel()
		ctx, stop := c.Watch(ctx)
		defer stop()
		return c.Explain(ctx, body(&session{ctx: ctx, c: c, p: p, cmd: cmd}, args))
	}
}

// printed prints err on one line and turns it into an ExitError.
func printed(cmd *cobra.Command, err error) error {
	var done *ExitError
	if err == nil || errors.As(err, &done) {
		return err
	}
	code := ExitFailure
	var usage *UsageError
	if errors.As(err, &usage) {
		code = ExitUsage
	}
	fmt.Fprintln(cmd.ErrOrStderr(), "kbroker: "+oneLine(err.Error()))
	return &ExitError{Code: code, Err: err}
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", "; ")), " ")
}

func flagError(cmd *cobra.Command, err error) error {
	return printed(cmd, usagef("%s: %v (see --help)", subcommand(cmd), err))
}

// subcommand is the command's path without the binary: "topic create".
func subcommand(cmd *cobra.Command) string {
	return strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ")
}

// args checks the number of positional arguments, as a usage error.
func args(min, max int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, a []string) error {
		if len(a) < min || max >= 0 && len(a) > max {
			return printed(cmd, usagef("%s needs %s (see --help)", subcommand(cmd), what))
		}
		return nil
	}
}

// wait polls cond every interval until it reports done, ctx ends or d
// passes.
func wait(ctx context.Context, d, interval time.Duration, cond func() (bool, error)) error {
	deadline := time.Now().Add(d)
	for {
		done, err := cond()
		if err != nil || done {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("still not done after %v", d)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(interval):
		}
	}
}

func sortedKeys(m map[string]string) []string { return slices.Sorted(maps.Keys(m)) }

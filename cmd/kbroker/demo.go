package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/kbroker/kbroker/demo"
)

func (a *app) demoCmd() *cobra.Command {
	var cfg demo.Config
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "demo [scenario...]",
		Short: "Show what acks, min.insync.replicas, unclean election and share groups promise, on a throw-away local cluster",
		Long: "Start a local 3-broker cluster (child processes, free loopback ports, a temporary\n" +
			"directory, timeouts of seconds), stall and crash brokers, and narrate what happens\n" +
			"to acknowledged records: leader, ISR, high watermark, each replica's log end offset,\n" +
			"records acked and records lost. Every scenario gets a fresh cluster, which is killed\n" +
			"and removed afterwards, also on Ctrl-C. Without arguments all scenarios run.\n\n" +
			"Scenarios (each takes 15-40 s):\n" +
			"  acks1      acks=1: both followers stall, the leader acknowledges alone and crashes: records lost\n" +
			"  acksall    acks=all, min.insync.replicas=2, the same crash: nothing acknowledged lost, in-flight records retried\n" +
			"  mininsync  min.insync.replicas=2: with only the leader in sync, writes are refused (NOT_ENOUGH_REPLICAS)\n" +
			"  unclean    a stale replica is elected uncleanly: exactly the records written after it fell out are lost\n" +
			"  queue      a share group: three consumers on one partition, one killed mid-batch: its records go to the others, none lost or accepted twice",
		Args: func(_ *cobra.Command, args []string) error {
			for _, name := range args {
				if !slices.Contains(demo.Names(), name) {
					return fmt.Errorf("unknown scenario %q: one of %s", name, strings.Join(demo.Names(), ", "))
				}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				args = demo.Names()
			}
			narration, results := a.stdout, io.Discard
			if asJSON {
				narration, results = a.stderr, a.stdout
			}
			return a.demo(cmd, cfg, args, narration, results)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Binary, "kbroker-bin", "", "kbroker executable the brokers run (default: this program)")
	f.StringVar(&cfg.Dir, "dir", "", "where to make the temporary directories (default: the system's)")
	f.BoolVar(&cfg.Keep, "keep", false, "keep the temporary directories: broker data and logs (node-N.log)")
	f.BoolVar(&asJSON, "json", false, "print the outcomes as JSON on stdout, the narration on stderr")
	return cmd
}

// demo runs the named scenarios one after the other, narrating to
// narration, then prints a summary there and the outcomes as JSON to
// results.
func (a *app) demo(cmd *cobra.Command, cfg demo.Config, names []string, narration, results io.Writer) error {
	if cfg.Binary == "" {
		exe, err := os.Executable()
		if err != nil {
			return &configError{fmt.Errorf("demo: finding the kbroker executable: %w (use --kbroker-bin)", err)}
		}
		cfg.Binary = exe
	}
	log, err := newLogger(a.stderr, "text", "info")
	if err != nil {
		return err
	}
	ctx, stop := signalContext(cmd.Context(), log)
	defer stop()

	narr := demo.NewNarrator(narration)
	var outcomes []demo.Outcome
	var runErr error
	for _, name := range names {
		s, err := demo.New(name, cfg)
		if err != nil {
			return &configError{err}
		}
		out, err := s.Run(ctx, narr)
		if err != nil {
			runErr = err
			break
		}
		outcomes = append(outcomes, out)
	}
	writeDemoSummary(narration, outcomes)
	if err := writeDemoJSON(results, outcomes); err != nil {
		return err
	}
	if runErr != nil {
		reportDemoError(a.stderr, runErr, cfg.Keep)
		return &runError{runErr}
	}
	return nil
}

// reportDemoError prints why a scenario stopped, with the tail of each
// broker's output.
func reportDemoError(w io.Writer, err error, kept bool) {
	fmt.Fprintf(w, "kbroker: %v\n", err)
	var re *demo.RunError
	if !errors.As(err, &re) || len(re.Logs) == 0 {
		return
	}
	ids := make([]int32, 0, len(re.Logs))
	for id := range re.Logs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		fmt.Fprintf(w, "---- node %d output (tail) ----\n%s\n", id, re.Logs[id])
	}
	if !kept {
		fmt.Fprintln(w, "Run again with --keep to keep the brokers' data and logs.")
	}
}

func writeDemoSummary(w io.Writer, outcomes []demo.Outcome) {
	if len(outcomes) == 0 {
		return
	}
	fmt.Fprintln(w, "\nSummary")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  scenario\ttime\tacked\tlost\twhat happened")
	for _, o := range outcomes {
		fmt.Fprintf(tw, "  %s\t%.1fs\t%d\t%d\t%s\n", o.Scenario, o.Elapsed.Seconds(), o.Acked, o.Lost, demoNote(o))
	}
	tw.Flush()
}

// demoNote is the one-line moral of an outcome.
func demoNote(o demo.Outcome) string {
	switch o.Scenario {
	case "acks1":
		return fmt.Sprintf("%d records acknowledged by the leader alone were lost with it", o.Lost)
	case "acksall":
		return fmt.Sprintf("%d in-flight records retried and acknowledged by the new leader, %d duplicates", o.Retried, o.Duplicates)
	case "mininsync":
		return "writes refused with " + strings.Join(o.Refusals, ", ") + " while only the leader was in sync"
	case "unclean":
		return fmt.Sprintf("lost: the %d records written after the stale replica left the ISR", len(o.WrittenAfterStale))
	case "queue":
		return fmt.Sprintf("%d records of the killed consumer redelivered to the others, %d accepted twice", o.Redelivered, o.Duplicates)
	}
	return ""
}

func writeDemoJSON(w io.Writer, outcomes []demo.Outcome) error {
	if w == io.Discard {
		return nil
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if outcomes == nil {
		outcomes = []demo.Outcome{}
	}
	return enc.Encode(outcomes)
}

package cli

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kbroker/kbroker/admin"
)

func (g *globals) reassignCmd() *cobra.Command {
	var file string
	var noWait bool
	var waitFor time.Duration
	c := &cobra.Command{
		Use:   "reassign [TOPIC:PARTITION=BROKERS...]",
		Short: "Move partition replicas to other brokers and follow the move",
		Long: "Move replicas: each partition gets the broker list given (the first is the\n" +
			"preferred leader). New replicas catch up as followers and join the ISR, then\n" +
			"the old ones are dropped. Progress (adding, removing, ISR) is printed on\n" +
			"stderr until every move is done; the final state on stdout.\n\n" +
			"Moves: " + admin.MoveSyntax + ", or --file with Kafka's reassignment JSON\n" +
			`({"version":1,"partitions":[{"topic":"orders","partition":0,"replicas":[2,3,4]}]}).`,
		Example: "  kbroker reassign orders:0=2,3,4 orders:1=3,4,2\n" +
			"  kbroker reassign --file plan.json --wait 30m\n" +
			"  kbroker reassign status\n  kbroker reassign cancel orders:0",
		Args: cobra.ArbitraryArgs,
	}
	c.RunE = g.run(false, func(s *session, a []string) error {
		moves, err := movesFrom(a, file)
		if err != nil {
			return err
		}
		res, err := s.c.Reassign(s.ctx, moves, false)
		if err != nil || noWait {
			if res != nil {
				s.p.result(map[string]any{"moves": res}, func(p *printer) { moveTable(p, res) })
			}
			return err
		}
		return s.follow(moves, waitFor)
	})
	f := c.Flags()
	f.StringVar(&file, "file", "", ex("read the moves from Kafka's reassignment JSON file", "--file plan.json"))
	f.BoolVar(&noWait, "no-wait", false, ex("start the moves and return without following them", "--no-wait"))
	f.DurationVar(&waitFor, "wait", 30*time.Minute, ex("give up following after this long (the moves go on)", "--wait 10m"))
	c.AddCommand(g.reassignStatusCmd(), g.reassignCancelCmd())
	return c
}

// movesFrom reads moves from arguments or a plan file.
func movesFrom(a []string, file string) ([]admin.Move, error) {
	var moves []admin.Move
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, &UsageError{err}
		}
		if moves, err = admin.ParsePlan(b); err != nil {
			return nil, &UsageError{err}
		}
	}
	for _, s := range a {
		m, err := admin.ParseMove(s)
		if err != nil {
			return nil, &UsageError{err}
		}
		moves = append(moves, m)
	}
	if len(moves) == 0 {
		return nil, usagef("reassign needs moves (%s) or --file", admin.MoveSyntax)
	}
	return moves, nil
}

// follow polls the moves once a second, printing each change of a
// partition's state on stderr, until all are done.
func (s *session) follow(moves []admin.Move, waitFor time.Duration) error {
	start := time.Now()
	last := map[string]string{}
	var st []admin.MoveStatus
	err := wait(s.ctx, waitFor, time.Second, func() (bool, error) {
		var err error
		if st, err = s.c.ReassignStatus(s.ctx, moves); err != nil {
			return false, err
		}
		done := 0
		for _, m := range st {
			if m.Done {
				done++
			}
		}
		for _, m := range st {
			line := progressLine(m)
			if key := fmt.Sprintf("%s:%d", m.Topic, m.Partition); last[key] != line {
				last[key] = line
				fmt.Fprintf(s.cmd.ErrOrStderr(), "[%5.1fs] %s  (%d/%d done)\n", time.Since(start).Seconds(), line, done, len(st))
			}
		}
		return done == len(st), nil
	})
	if st != nil {
		s.p.result(map[string]any{"moves": st, "elapsed_ms": time.Since(start).Milliseconds()}, func(p *printer) { moveTable(p, st) })
	}
	return err
}

func progressLine(m admin.MoveStatus) string {
	state := "done"
	switch {
	case m.Error != "":
		state = "error: " + m.Error
	case !m.Done:
		state = fmt.Sprintf("moving: adding [%s] removing [%s]", ids(m.Adding), ids(m.Removing))
	}
	return fmt.Sprintf("%s:%d replicas [%s] isr [%s] leader %s: %s", m.Topic, m.Partition, ids(m.Replicas), ids(m.ISR), leaderText(m.Leader), state)
}

func moveTable(p *printer, st []admin.MoveStatus) {
	var rows [][]string
	for _, m := range st {
		status := "done"
		switch {
		case m.Error != "":
			status = "failed: " + m.Error
		case !m.Done && len(m.Adding)+len(m.Removing) == 0 && m.Replicas == nil:
			status = "started"
		case !m.Done:
			status = "moving"
		}
		rows = append(rows, []string{m.Topic, itoa(m.Partition), orDash(ids(m.Target)), orDash(ids(m.Replicas)), orDash(ids(m.ISR)),
			orDash(ids(m.Adding)), orDash(ids(m.Removing)), status})
	}
	p.Table([]string{"TOPIC", "PARTITION", "TARGET", "REPLICAS", "ISR", "ADDING", "REMOVING", "STATUS"}, rows)
}

func (g *globals) reassignStatusCmd() *cobra.Command {
	c := &cobra.Command{
		Use:     "status [TOPIC:PARTITION[=BROKERS]...]",
		Short:   "Show the moves in progress, or whether the moves given have reached their targets",
		Example: "  kbroker reassign status\n  kbroker reassign status orders:0=2,3,4",
		Args:    cobra.ArbitraryArgs,
	}
	c.RunE = g.run(true, func(s *session, a []string) error {
		moves, err := partitionsOf(a)
		if err != nil {
			return err
		}
		st, err := s.c.ReassignStatus(s.ctx, moves)
		if err != nil {
			return err
		}
		return s.p.result(map[string]any{"moves": st}, func(p *printer) { moveTable(p, st) })
	})
	return c
}

func (g *globals) reassignCancelCmd() *cobra.Command {
	c := &cobra.Command{
		Use:     "cancel TOPIC:PARTITION...",
		Short:   "Cancel moves in progress (the partitions go back to their old replicas)",
		Example: "  kbroker reassign cancel orders:0 orders:1",
		Args:    args(1, -1, "at least one TOPIC:PARTITION"),
	}
	c.RunE = g.run(true, func(s *session, a []string) error {
		moves, err := partitionsOf(a)
		if err != nil {
			return err
		}
		res, err := s.c.Reassign(s.ctx, moves, true)
		if res != nil {
			s.p.result(map[string]any{"cancelled": res}, func(p *printer) {
				var rows [][]string
				for _, m := range res {
					rows = append(rows, []string{m.Topic, itoa(m.Partition), outcome(m.Error, "cancelled")})
				}
				p.Table([]string{"TOPIC", "PARTITION", "STATUS"}, rows)
			})
		}
		return err
	})
	return c
}

// partitionsOf parses TOPIC:PARTITION or full moves.
func partitionsOf(a []string) ([]admin.Move, error) {
	var out []admin.Move
	for _, s := range a {
		if !strings.Contains(s, "=") {
			s += "=0" // a placeholder replica list; only the partition counts
			m, err := admin.ParseMove(s)
			if err != nil {
				return nil, usagef("malformed partition %q: want TOPIC:PARTITION", strings.TrimSuffix(s, "=0"))
			}
			m.Replicas = nil
			out = append(out, m)
			continue
		}
		m, err := admin.ParseMove(s)
		if err != nil {
			return nil, &UsageError{err}
		}
		out = append(out, m)
	}
	return out, nil
}

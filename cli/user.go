package cli

import (
	"bufio"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kbroker/kbroker/admin"
)

func (g *globals) userCmd() *cobra.Command {
	c := &cobra.Command{
		Use:     "user",
		Aliases: []string{"users"},
		Short:   "Create, list and delete SCRAM users (credentials in the cluster's metadata)",
		Long: "SCRAM credential administration (kafka-configs.sh --entity-type users in one\n" +
			"command). The password is salted here (PBKDF2) and only the salted keys are sent;\n" +
			"the cluster never shows a password back.",
		Example: "  kbroker user create alice --password-stdin < alice.pass\n" +
			"  kbroker user list\n  kbroker user delete alice",
	}
	c.AddCommand(g.userCreateCmd(), g.userListCmd(), g.userDeleteCmd())
	return c
}

func (g *globals) userCreateCmd() *cobra.Command {
	var password, mechanism string
	var fromStdin bool
	var iterations int32
	c := &cobra.Command{
		Use:     "create USER",
		Aliases: []string{"update", "set-password"},
		Short:   "Create a SCRAM user, or change its password for the mechanism",
		Example: "  kbroker user create alice --password-stdin --mechanism SCRAM-SHA-512 < alice.pass\n" +
			"  kbroker user create alice --password 's3cret' (the password shows in the shell's history)",
		Args: args(1, 1, "one user name"),
	}
	c.RunE = g.run(true, func(s *session, a []string) error {
		pass, err := readPassword(s.cmd, password, fromStdin)
		if err != nil {
			return err
		}
		if _, err := admin.ParseScramMechanism(mechanism); err != nil {
			return &UsageError{fmt.Errorf("--mechanism: %w", err)}
		}
		if iterations < admin.MinScramIterations || iterations > admin.MaxScramIterations {
			return usagef("--iterations %d: want %d to %d", iterations, admin.MinScramIterations, admin.MaxScramIterations)
		}
		res, err := s.c.SetPassword(s.ctx, a[0], mechanism, pass, iterations)
		if err != nil {
			return err
		}
		return s.p.result(res, func(p *printer) { userResultTable(p, []admin.UserResult{res}, "password set") })
	})
	f := c.Flags()
	f.StringVarP(&password, "password", "p", "", ex("the new password (prefer --password-stdin: a flag shows in ps and shell history)", "--password 's3cret'"))
	f.BoolVar(&fromStdin, "password-stdin", false, ex("read the password from the first line of standard input", "--password-stdin < alice.pass"))
	f.StringVar(&mechanism, "mechanism", "SCRAM-SHA-256", ex("SCRAM-SHA-256 or SCRAM-SHA-512", "--mechanism SCRAM-SHA-512"))
	f.Int32Var(&iterations, "iterations", admin.MinScramIterations, ex(fmt.Sprintf("PBKDF2 iterations, %d to %d", admin.MinScramIterations, admin.MaxScramIterations), "--iterations 8192"))
	return c
}

// readPassword takes the password from the flag or from stdin's first
// line, exactly one of them.
func readPassword(cmd *cobra.Command, flag string, fromStdin bool) (string, error) {
	switch {
	case flag != "" && fromStdin:
		return "", usagef("user create takes --password or --password-stdin, not both")
	case flag != "":
		return flag, nil
	case !fromStdin:
		return "", usagef("user create needs --password-stdin (or --password)")
	}
	line, err := bufio.NewReader(cmd.InOrStdin()).ReadString('\n')
	line = strings.TrimRight(line, "\r\n")
	if line == "" {
		return "", usagef("--password-stdin: no password on standard input (%v)", err)
	}
	return line, nil
}

func (g *globals) userListCmd() *cobra.Command {
	c := &cobra.Command{
		Use:     "list [USER...]",
		Aliases: []string{"ls", "describe"},
		Short:   "List SCRAM users and their mechanisms (every user, or those named)",
		Example: "  kbroker user list\n  kbroker user list alice --format json",
		Args:    args(0, -1, "user names, or none for every user"),
	}
	c.RunE = g.run(true, func(s *session, names []string) error {
		users, err := s.c.Users(s.ctx, names)
		if err != nil {
			return err
		}
		return s.p.result(users, func(p *printer) {
			var rows [][]string
			for _, u := range users {
				var mechs []string
				for _, m := range u.Mechanisms {
					mechs = append(mechs, fmt.Sprintf("%s (%d iterations)", m.Mechanism, m.Iterations))
				}
				rows = append(rows, []string{u.Name, strings.Join(mechs, ", ")})
			}
			p.Table([]string{"USER", "MECHANISMS"}, rows)
		})
	})
	return c
}

func (g *globals) userDeleteCmd() *cobra.Command {
	var mechanism string
	c := &cobra.Command{
		Use:     "delete USER...",
		Aliases: []string{"rm"},
		Short:   "Delete SCRAM users' credentials (every mechanism, or one)",
		Example: "  kbroker user delete alice\n  kbroker user delete alice --mechanism SCRAM-SHA-256",
		Args:    args(1, -1, "at least one user name"),
	}
	c.RunE = g.run(true, func(s *session, names []string) error {
		if mechanism != "" {
			if _, err := admin.ParseScramMechanism(mechanism); err != nil {
				return &UsageError{fmt.Errorf("--mechanism: %w", err)}
			}
		}
		res, err := s.c.DeleteUsers(s.ctx, names, mechanism)
		if res == nil {
			return err
		}
		s.p.result(res, func(p *printer) { userResultTable(p, res, "deleted") })
		return err
	})
	c.Flags().StringVar(&mechanism, "mechanism", "", ex("delete only this mechanism's credential (default: all the user has)", "--mechanism SCRAM-SHA-512"))
	return c
}

func userResultTable(p *printer, res []admin.UserResult, ok string) {
	var rows [][]string
	for _, r := range res {
		rows = append(rows, []string{r.User, r.Mechanism, outcome(r.Error, ok), orDash(r.Error)})
	}
	p.Table([]string{"USER", "MECHANISM", "STATUS", "ERROR"}, rows)
}

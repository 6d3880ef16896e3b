package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kbroker/kbroker/admin"
)

func (g *globals) groupCmd() *cobra.Command {
	c := &cobra.Command{
		Use:     "group",
		Aliases: []string{"groups"},
		Short:   "List, describe (members and lag), delete and seek consumer groups",
		Long:    "Consumer group administration (kafka-consumer-groups.sh in one command).",
		Example: "  kbroker group list\n  kbroker group describe payments\n" +
			"  kbroker group seek payments --to @-1h --topics orders --dry-run",
	}
	c.AddCommand(g.groupListCmd(), g.groupDescribeCmd(), g.groupDeleteCmd(), g.groupSeekCmd())
	return c
}

func (g *globals) groupListCmd() *cobra.Command {
	c := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List groups with their state and coordinator",
		Example: "  kbroker group list --format json",
		Args:    args(0, 0, "no arguments"),
	}
	c.RunE = g.run(true, func(s *session, _ []string) error {
		list, err := s.c.Groups(s.ctx)
		if list == nil {
			return err
		}
		s.p.result(list, func(p *printer) {
			var rows [][]string
			for _, gr := range list {
				rows = append(rows, []string{gr.Group, gr.State, orDash(gr.ProtocolType), itoa(gr.Coordinator)})
			}
			p.Table([]string{"GROUP", "STATE", "PROTOCOL-TYPE", "COORDINATOR"}, rows)
		})
		return err
	})
	return c
}

func (g *globals) groupDescribeCmd() *cobra.Command {
	c := &cobra.Command{
		Use:               "describe GROUP...",
		Short:             "Show a group's members, assignments, and committed offset, end offset and lag per partition",
		Example:           "  kbroker group describe payments\n  kbroker group describe payments --format json | jq .total_lag",
		Args:              args(1, -1, "at least one group name"),
		ValidArgsFunction: g.completeGroups,
	}
	c.RunE = g.run(true, func(s *session, names []string) error {
		var all []*admin.GroupDetail
		for _, name := range names {
			d, err := s.c.DescribeGroup(s.ctx, name)
			if err != nil {
				return err
			}
			all = append(all, d)
		}
		var v any = all
		if len(all) == 1 {
			v = all[0]
		}
		return s.p.result(v, func(p *printer) {
			for i, d := range all {
				if i > 0 {
					fmt.Fprintln(p.w)
				}
				groupTable(p, d)
			}
		})
	})
	return c
}

func groupTable(p *printer, d *admin.GroupDetail) {
	p.Fields("Group", d.Group, "State", d.State, "Protocol", orDash(d.ProtocolType)+"/"+orDash(d.Protocol),
		"Coordinator", itoa(d.Coordinator), "Members", itoa(len(d.Members)), "Total lag", itoa(d.TotalLag))
	if len(d.Members) > 0 {
		p.Section("MEMBERS")
		var rows [][]string
		for _, m := range d.Members {
			var parts []string
			for _, a := range m.Assignment {
				parts = append(parts, a.Topic+":"+ids(a.Partitions))
			}
			rows = append(rows, []string{m.MemberID, orDash(m.InstanceID), m.ClientID, m.Host, orDash(strings.Join(parts, " "))})
		}
		p.Table([]string{"MEMBER-ID", "INSTANCE-ID", "CLIENT-ID", "HOST", "ASSIGNMENT"}, rows)
	}
	p.Section("PARTITIONS")
	var rows [][]string
	for _, pl := range d.Partitions {
		rows = append(rows, []string{pl.Topic, itoa(pl.Partition), offset(pl.Committed), offset(pl.LogEnd), offset(pl.Lag),
			orDash(pl.MemberID), orDash(pl.ClientID), orDash(pl.Host), orDash(pl.Error)})
	}
	p.Table([]string{"TOPIC", "PARTITION", "COMMITTED", "LOG-END", "LAG", "MEMBER-ID", "CLIENT-ID", "HOST", "ERROR"}, rows)
}

func (g *globals) groupDeleteCmd() *cobra.Command {
	c := &cobra.Command{
		Use:               "delete GROUP...",
		Aliases:           []string{"rm"},
		Short:             "Delete groups and their committed offsets (the group must have no members)",
		Example:           "  kbroker group delete old-payments",
		Args:              args(1, -1, "at least one group name"),
		ValidArgsFunction: g.completeGroups,
	}
	c.RunE = g.run(true, func(s *session, names []string) error {
		res, err := s.c.DeleteGroups(s.ctx, names)
		if res != nil {
			s.p.result(res, func(p *printer) {
				var rows [][]string
				for _, r := range res {
					rows = append(rows, []string{r.Group, outcome(r.Error, "deleted")})
				}
				p.Table([]string{"GROUP", "STATUS"}, rows)
			})
		}
		return err
	})
	return c
}

func (g *globals) groupSeekCmd() *cobra.Command {
	var to string
	var topics []string
	var dryRun bool
	c := &cobra.Command{
		Use:   "seek GROUP --to POSITION",
		Short: "Move a group's committed offsets (the group must have no members)",
		Long: "Move a group's committed offsets to a position in every partition of the\n" +
			"topics named (by default, every topic the group has offsets for). As in\n" +
			"Kafka, only a group without live members can be moved. Positions outside\n" +
			"a partition's log are clamped to its start or end.\n\nPOSITION: " + admin.OffsetSyntax + ".",
		Example: "  kbroker group seek payments --to earliest\n" +
			"  kbroker group seek payments --to @2024-05-01T10:00:00Z --topics orders,refunds\n" +
			"  kbroker group seek payments --to -100 --dry-run",
		Args:              args(1, 1, "one group name"),
		ValidArgsFunction: g.completeGroups,
	}
	c.RunE = g.run(true, func(s *session, a []string) error {
		if to == "" {
			return usagef("group seek needs --to (%s)", admin.OffsetSyntax)
		}
		spec, err := admin.ParseOffset(to, time.Now())
		if err != nil {
			return &UsageError{err}
		}
		rows, err := s.c.SeekPlan(s.ctx, a[0], splitFlagList(topics), spec)
		if err != nil {
			return err
		}
		status := "dry run: nothing changed"
		if !dryRun {
			status = "committed"
			rows, err = s.c.Seek(s.ctx, a[0], rows)
			if rows == nil {
				return err
			}
		}
		s.p.result(map[string]any{"group": a[0], "to": spec.String(), "dry_run": dryRun, "partitions": rows}, func(p *printer) {
			var out [][]string
			for _, r := range rows {
				out = append(out, []string{r.Topic, itoa(r.Partition), offset(r.Current), offset(r.New), orDash(r.Error)})
			}
			p.Table([]string{"TOPIC", "PARTITION", "CURRENT", "NEW", "ERROR"}, out)
			fmt.Fprintf(p.w, "\n%s\n", status)
		})
		return err
	})
	f := c.Flags()
	f.StringVar(&to, "to", "", ex("where to move: "+admin.OffsetSyntax, "--to earliest, --to 1200, --to @-30m"))
	f.StringSliceVar(&topics, "topics", nil, ex("topics to move (all partitions); default: the topics the group has offsets for", "--topics orders,refunds"))
	f.BoolVar(&dryRun, "dry-run", false, ex("print the current and new offsets without committing", "--dry-run"))
	return c
}

func splitFlagList(v []string) []string {
	var out []string
	for _, s := range v {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

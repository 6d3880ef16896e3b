package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kbroker/kbroker/admin"
)

func (g *globals) clusterCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "cluster",
		Short: "Brokers, controller, health and broker configs",
		Example: "  kbroker cluster info\n  kbroker cluster health --wait 2m\n" +
			"  kbroker cluster config --broker 1 --changed",
	}
	c.AddCommand(g.clusterInfoCmd(), g.clusterHealthCmd(), g.clusterConfigCmd())
	return c
}

func (g *globals) clusterInfoCmd() *cobra.Command {
	c := &cobra.Command{
		Use:     "info",
		Aliases: []string{"brokers", "metadata"},
		Short:   "Show the cluster id, the controller and every broker (rack, version, replicas, leaders)",
		Example: "  kbroker cluster info --format json | jq '.brokers[].id'",
		Args:    args(0, 0, "no arguments"),
	}
	c.RunE = g.run(true, func(s *session, _ []string) error {
		info, err := s.c.ClusterInfo(s.ctx)
		if err != nil {
			return err
		}
		return s.p.result(info, func(p *printer) {
			p.Fields("Cluster", info.ClusterID, "Controller", leaderText(info.Controller),
				"Topics", itoa(info.Topics), "Partitions", itoa(info.Partitions))
			p.Section("BROKERS")
			var rows [][]string
			for _, b := range info.Brokers {
				id := itoa(b.ID)
				if b.Controller {
					id += "*"
				}
				rows = append(rows, []string{id, fmt.Sprintf("%s:%d", b.Host, b.Port), orDash(b.Rack), orDash(b.Version), itoa(b.Replicas), itoa(b.Leaders)})
			}
			p.Table([]string{"ID", "ADDRESS", "RACK", "VERSION", "REPLICAS", "LEADERS"}, rows)
			fmt.Fprintln(p.w, "(* the active controller)")
		})
	})
	return c
}

func (g *globals) clusterHealthCmd() *cobra.Command {
	var waitFor time.Duration
	c := &cobra.Command{
		Use:   "health",
		Short: "Check for brokers down and offline, under-replicated or under-min-ISR partitions; exit 1 when unhealthy",
		Long: "Check the cluster: a controller, every replica's broker alive, every\n" +
			"partition with a leader, its full ISR and at least min.insync.replicas in it.\n" +
			"Exits 0 when healthy and 1 when not (or when the cluster cannot be asked),\n" +
			"so scripts can gate on it; --wait keeps checking until healthy.",
		Example: "  kbroker cluster health\n  kbroker cluster health --wait 5m && echo ready for the next broker",
		Args:    args(0, 0, "no arguments"),
	}
	c.RunE = g.run(false, func(s *session, _ []string) error {
		var h *admin.Health
		err := wait(s.ctx, waitFor, time.Second, func() (bool, error) {
			var err error
			h, err = s.healthOnce()
			if err == nil && !h.Healthy && waitFor > 0 {
				fmt.Fprintf(s.cmd.ErrOrStderr(), "waiting: %s\n", strings.Join(h.Reasons, "; "))
			}
			return err == nil && h.Healthy || waitFor == 0, err
		})
		if h == nil {
			return err
		}
		s.p.result(h, func(p *printer) { healthTable(p, h) })
		if !h.Healthy {
			return fmt.Errorf("cluster unhealthy: %s", strings.Join(h.Reasons, "; "))
		}
		return err
	})
	c.Flags().DurationVar(&waitFor, "wait", 0, ex("keep checking, once a second, until healthy or this long has passed", "--wait 2m"))
	return c
}

func (s *session) healthOnce() (*admin.Health, error) {
	ctx, cancel := context.WithTimeout(s.ctx, s.c.Config().RequestTimeout)
	defer cancel()
	return s.c.Health(ctx)
}

func healthTable(p *printer, h *admin.Health) {
	verdict := "yes"
	if !h.Healthy {
		verdict = "NO: " + strings.Join(h.Reasons, "; ")
	}
	p.Fields("Healthy", verdict, "Controller", leaderText(h.Controller), "Brokers", ids(h.Brokers),
		"Brokers down", orDash(ids(h.Down)), "Offline partitions", itoa(len(h.Offline)),
		"Under-replicated partitions", itoa(len(h.UnderReplicated)), "Under min ISR partitions", itoa(len(h.UnderMinISR)))
	for _, list := range []struct {
		title string
		refs  []admin.PartitionRef
	}{{"OFFLINE", h.Offline}, {"UNDER-REPLICATED", h.UnderReplicated}, {"UNDER MIN ISR (acks=all refused)", h.UnderMinISR}} {
		if len(list.refs) == 0 {
			continue
		}
		p.Section(list.title)
		partitionRefTable(p, list.refs)
	}
}

func partitionRefTable(p *printer, refs []admin.PartitionRef) {
	var rows [][]string
	for _, r := range refs {
		rows = append(rows, []string{r.Topic, itoa(r.Partition), leaderText(r.Leader), ids(r.Replicas), orDash(ids(r.ISR)), itoa(r.MinISR)})
	}
	p.Table([]string{"TOPIC", "PARTITION", "LEADER", "REPLICAS", "ISR", "MIN-ISR"}, rows)
}

func (g *globals) clusterConfigCmd() *cobra.Command {
	var broker int32
	var changed bool
	var set, del []string
	c := &cobra.Command{
		Use:   "config",
		Short: "Show a broker's configs with their sources, or change dynamic broker configs",
		Long: "Without --set or --delete: list a broker's configs (--broker, default the\n" +
			"controller) with their sources. With them: change the configs of --broker,\n" +
			"or without --broker the cluster-wide dynamic defaults (kafka-configs.sh\n" +
			"--entity-default).",
		Example: "  kbroker cluster config --broker 2 --changed\n" +
			"  kbroker cluster config --set log.retention.ms=86400000\n" +
			"  kbroker cluster config --broker 3 --delete log.cleaner.threads",
		Args: args(0, 0, "no arguments (use --set and --delete)"),
	}
	c.RunE = g.run(true, func(s *session, _ []string) error {
		kv, err := keyValues(set, "--set")
		if err != nil {
			return err
		}
		if len(kv) > 0 || len(del) > 0 {
			return s.alterBrokerConfig(broker, kv, del)
		}
		if broker < 0 {
			info, err := s.c.ClusterInfo(s.ctx)
			if err != nil {
				return err
			}
			broker = info.Controller
		}
		entries, err := s.c.BrokerConfig(s.ctx, broker)
		if err != nil {
			return err
		}
		entries = onlyChanged(entries, changed)
		return s.p.result(map[string]any{"broker": broker, "configs": entries}, func(p *printer) {
			var rows [][]string
			for _, e := range entries {
				rows = append(rows, []string{e.Name, e.Value, e.Source})
			}
			p.Table([]string{"KEY", "VALUE", "SOURCE"}, rows)
		})
	})
	f := c.Flags()
	f.Int32Var(&broker, "broker", -1, ex("broker id; -1: the controller when showing, the cluster-wide default when changing", "--broker 2"))
	f.BoolVar(&changed, "changed", false, ex("show only configs not at their default", "--changed"))
	f.StringArrayVar(&set, "set", nil, ex("dynamic broker config key=value to set, repeatable", "--set log.retention.ms=86400000"))
	f.StringArrayVar(&del, "delete", nil, ex("dynamic broker config to remove, repeatable", "--delete log.retention.ms"))
	return c
}

func (s *session) alterBrokerConfig(broker int32, kv map[string]string, del []string) error {
	if err := s.c.AlterBrokerConfig(s.ctx, broker, kv, del); err != nil {
		return err
	}
	return s.p.result(map[string]any{"broker": broker, "set": kv, "deleted": nonNilStrings(del)}, func(p *printer) {
		target := "cluster-wide default"
		if broker >= 0 {
			target = "broker " + itoa(broker)
		}
		var rows [][]string
		for _, k := range sortedKeys(kv) {
			rows = append(rows, []string{target, k, kv[k], "set"})
		}
		for _, k := range del {
			rows = append(rows, []string{target, k, "-", "deleted"})
		}
		p.Table([]string{"TARGET", "KEY", "VALUE", "CHANGE"}, rows)
	})
}

func onlyChanged(entries []admin.ConfigEntry, changed bool) []admin.ConfigEntry {
	if !changed {
		return entries
	}
	out := []admin.ConfigEntry{}
	for _, e := range entries {
		if e.Source != "DEFAULT_CONFIG" {
			out = append(out, e)
		}
	}
	return out
}

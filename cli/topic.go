package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kbroker/kbroker/admin"
)

func (g *globals) topicCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "topic",
		Short: "Create, list, describe, delete and change topics",
		Long: "Topic administration on any Kafka-compatible cluster (kafka-topics.sh and\n" +
			"kafka-configs.sh for topics, in one command).",
		Example: "  kbroker topic create orders -p 6 -r 3 -c retention.ms=86400000\n" +
			"  kbroker topic list\n  kbroker topic describe orders --format json",
	}
	c.AddCommand(g.topicCreateCmd(), g.topicListCmd(), g.topicDescribeCmd(), g.topicDeleteCmd(),
		g.topicAlterConfigCmd(), g.topicAddPartitionsCmd())
	return c
}

func (g *globals) topicCreateCmd() *cobra.Command {
	var partitions int32
	var rf int16
	var configs []string
	var dryRun bool
	c := &cobra.Command{
		Use:               "create TOPIC...",
		Short:             "Create topics",
		Example:           "  kbroker topic create orders -p 6 -r 3 -c cleanup.policy=compact -c min.insync.replicas=2",
		Args:              args(1, -1, "at least one topic name"),
		ValidArgsFunction: cobra.NoFileCompletions,
	}
	c.RunE = g.run(true, func(s *session, names []string) error {
		cfgs, err := keyValues(configs, "--config")
		if err != nil {
			return err
		}
		res, err := s.c.CreateTopics(s.ctx, names, partitions, rf, cfgs, dryRun)
		if res != nil {
			s.p.result(res, func(p *printer) { createTable(p, res, dryRun) })
		}
		return err
	})
	f := c.Flags()
	f.Int32VarP(&partitions, "partitions", "p", -1, ex("number of partitions; -1 takes the broker's num.partitions", "-p 6"))
	f.Int16VarP(&rf, "replicas", "r", -1, ex("replication factor; -1 takes the broker's default.replication.factor", "-r 3"))
	f.StringArrayVarP(&configs, "config", "c", nil, ex("a topic config key=value, repeatable", "-c retention.ms=86400000"))
	f.BoolVar(&dryRun, "dry-run", false, ex("let the controller validate the request without creating anything", "--dry-run"))
	return c
}

func createTable(p *printer, res []admin.CreateResult, dryRun bool) {
	status := "created"
	if dryRun {
		status = "valid (dry run)"
	}
	var rows [][]string
	for _, r := range res {
		rows = append(rows, []string{r.Topic, orDash(r.ID), count(r.Partitions), count(r.ReplicationFactor), outcome(r.Error, status)})
	}
	p.Table([]string{"TOPIC", "ID", "PARTITIONS", "REPLICAS", "STATUS"}, rows)
}

func (g *globals) topicListCmd() *cobra.Command {
	var internal bool
	c := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List topics with partitions, replication factor and partitions needing attention",
		Example: "  kbroker topic list --internal",
		Args:    args(0, 0, "no arguments"),
	}
	c.RunE = g.run(true, func(s *session, _ []string) error {
		list, err := s.c.Topics(s.ctx, internal)
		if err != nil {
			return err
		}
		return s.p.result(list, func(p *printer) {
			var rows [][]string
			for _, t := range list {
				rows = append(rows, []string{t.Name, itoa(t.Partitions), itoa(t.ReplicationFactor),
					itoa(t.UnderReplicated), itoa(t.Offline), orDash(t.ID)})
			}
			p.Table([]string{"TOPIC", "PARTITIONS", "REPLICAS", "UNDER-REPLICATED", "OFFLINE", "ID"}, rows)
		})
	})
	c.Flags().BoolVar(&internal, "internal", false, ex("include internal topics", "--internal (shows __consumer_offsets)"))
	return c
}

func (g *globals) topicDescribeCmd() *cobra.Command {
	c := &cobra.Command{
		Use:               "describe TOPIC",
		Aliases:           []string{"info"},
		Short:             "Show a topic's partitions (leader, replicas, ISR, offsets, sizes) and configs with their sources",
		Example:           "  kbroker topic describe orders\n  kbroker topic describe orders --format json | jq '.partitions[].isr'",
		Args:              args(1, 1, "one topic name"),
		ValidArgsFunction: g.completeTopics,
	}
	c.RunE = g.run(true, func(s *session, a []string) error {
		d, err := s.c.DescribeTopic(s.ctx, a[0])
		if err != nil {
			return err
		}
		return s.p.result(d, func(p *printer) { topicTable(p, d) })
	})
	return c
}

func topicTable(p *printer, d *admin.TopicDetail) {
	p.Fields("Topic", d.Name, "ID", orDash(d.ID), "Internal", fmt.Sprint(d.Internal),
		"Partitions", itoa(len(d.Partitions)), "Replication factor", itoa(d.ReplicationFactor),
		"min.insync.replicas", itoa(d.MinISR))
	p.Section("PARTITIONS")
	var rows [][]string
	for _, pt := range d.Partitions {
		rows = append(rows, []string{itoa(pt.Partition), leaderText(pt.Leader), itoa(pt.LeaderEpoch), ids(pt.Replicas), ids(pt.ISR),
			orDash(ids(pt.Offline)), offset(pt.LogStart), offset(pt.HighWatermark), offset(pt.LogEnd), admin.HumanBytes(pt.Size), orDash(pt.Error)})
	}
	p.Table([]string{"PARTITION", "LEADER", "EPOCH", "REPLICAS", "ISR", "OFFLINE", "LOG-START", "HIGH-WATERMARK", "LOG-END", "SIZE", "ERROR"}, rows)
	p.Section("CONFIGS")
	var cfgRows [][]string
	for _, e := range d.Configs {
		cfgRows = append(cfgRows, []string{e.Name, e.Value, e.Source})
	}
	p.Table([]string{"KEY", "VALUE", "SOURCE"}, cfgRows)
}

func leaderText(id int32) string {
	if id < 0 {
		return "none"
	}
	return itoa(id)
}

func (g *globals) topicDeleteCmd() *cobra.Command {
	c := &cobra.Command{
		Use:               "delete TOPIC...",
		Aliases:           []string{"rm"},
		Short:             "Delete topics and all their records",
		Example:           "  kbroker topic delete orders-old orders-tmp",
		Args:              args(1, -1, "at least one topic name"),
		ValidArgsFunction: g.completeTopics,
	}
	c.RunE = g.run(true, func(s *session, names []string) error {
		res, err := s.c.DeleteTopics(s.ctx, names)
		if res != nil {
			s.p.result(res, func(p *printer) { statusTable(p, res, "deleted") })
		}
		return err
	})
	return c
}

func statusTable(p *printer, res []admin.CreateResult, ok string) {
	var rows [][]string
	for _, r := range res {
		rows = append(rows, []string{r.Topic, outcome(r.Error, ok)})
	}
	p.Table([]string{"TOPIC", "STATUS"}, rows)
}

func (g *globals) topicAlterConfigCmd() *cobra.Command {
	var set, del []string
	c := &cobra.Command{
		Use:               "alter-config TOPIC",
		Short:             "Set or delete topic configs (incrementally: other keys keep their values)",
		Example:           "  kbroker topic alter-config orders --set retention.ms=3600000 --set min.insync.replicas=2 --delete cleanup.policy",
		Args:              args(1, 1, "one topic name"),
		ValidArgsFunction: g.completeTopics,
	}
	c.RunE = g.run(true, func(s *session, a []string) error {
		kv, err := keyValues(set, "--set")
		if err != nil {
			return err
		}
		if len(kv) == 0 && len(del) == 0 {
			return usagef("topic alter-config needs --set key=value or --delete key")
		}
		if err := s.c.AlterTopicConfig(s.ctx, a[0], kv, del); err != nil {
			return err
		}
		return s.p.result(map[string]any{"topic": a[0], "set": kv, "deleted": nonNilStrings(del)}, func(p *printer) {
			var rows [][]string
			for _, k := range sortedKeys(kv) {
				rows = append(rows, []string{k, kv[k], "set"})
			}
			for _, k := range del {
				rows = append(rows, []string{k, "-", "deleted (back to its default)"})
			}
			p.Table([]string{"KEY", "VALUE", "CHANGE"}, rows)
		})
	})
	c.Flags().StringArrayVar(&set, "set", nil, ex("key=value to set, repeatable", "--set retention.ms=3600000"))
	c.Flags().StringArrayVar(&del, "delete", nil, ex("key to remove from the topic (it falls back to the broker default), repeatable", "--delete retention.ms"))
	return c
}

func (g *globals) topicAddPartitionsCmd() *cobra.Command {
	var n int
	c := &cobra.Command{
		Use:               "add-partitions TOPIC...",
		Short:             "Add partitions to topics (keyed records may move to other partitions)",
		Example:           "  kbroker topic add-partitions orders --num 6",
		Args:              args(1, -1, "at least one topic name"),
		ValidArgsFunction: g.completeTopics,
	}
	c.RunE = g.run(true, func(s *session, names []string) error {
		if n <= 0 {
			return usagef("topic add-partitions needs --num N with N > 0")
		}
		res, err := s.c.AddPartitions(s.ctx, names, n)
		if res != nil {
			s.p.result(res, func(p *printer) {
				var rows [][]string
				for _, r := range res {
					rows = append(rows, []string{r.Topic, itoa(r.Partitions), outcome(r.Error, "added")})
				}
				p.Table([]string{"TOPIC", "PARTITIONS", "STATUS"}, rows)
			})
		}
		return err
	})
	c.Flags().IntVarP(&n, "num", "n", 0, ex("how many partitions to add to each topic", "--num 6 (12 partitions become 18)"))
	return c
}

// keyValues parses repeated key=value flags.
func keyValues(kvs []string, flag string) (map[string]string, error) {
	out := map[string]string{}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, usagef("%s %s: want key=value", flag, kv)
		}
		out[strings.TrimSpace(k)] = v
	}
	return out, nil
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

package cli

import (
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/kbroker/kbroker/admin"
)

func (g *globals) transactionsCmd() *cobra.Command {
	c := &cobra.Command{
		Use:     "transactions",
		Aliases: []string{"transaction", "txn"},
		Short:   "List open transactions, find hanging ones and abort them (kafka-transactions.sh, KIP-664)",
		Long: "A transaction open on a partition that no transaction coordinator runs is hanging: no\n" +
			"marker will ever end it and read_committed consumers stop at its first offset. list shows\n" +
			"the transactions open on partitions with what their coordinators say; find-hanging the\n" +
			"hanging ones; abort writes the ABORT marker of one to its partition's leader.",
		Example: "  kbroker transactions list orders\n  kbroker transactions find-hanging\n" +
			"  kbroker transactions abort --topic orders --partition 3 --start-offset 1200",
	}
	c.AddCommand(g.txnListCmd(), g.txnFindHangingCmd(), g.txnAbortCmd())
	return c
}

func (g *globals) txnListCmd() *cobra.Command {
	c := &cobra.Command{
		Use:     "list [TOPIC...]",
		Aliases: []string{"ls", "describe"},
		Short:   "Transactions open on the partitions of the topics (every topic when none)",
		Example: "  kbroker transactions list\n  kbroker transactions list orders --format json",
		Args:    args(0, -1, "topics, or none for every topic"),
	}
	c.RunE = g.run(true, func(s *session, topics []string) error {
		open, err := s.c.OpenTransactions(s.ctx, topics)
		if err != nil {
			return err
		}
		return s.p.result(open, func(p *printer) { openTxnTable(p, open) })
	})
	return c
}

func (g *globals) txnFindHangingCmd() *cobra.Command {
	var maxTimeout time.Duration
	c := &cobra.Command{
		Use:     "find-hanging [TOPIC...]",
		Short:   "Transactions open on partitions that no coordinator runs (every topic when none)",
		Example: "  kbroker transactions find-hanging\n  kbroker transactions find-hanging orders --max-transaction-timeout 0s",
		Args:    args(0, -1, "topics, or none for every topic"),
	}
	c.RunE = g.run(true, func(s *session, topics []string) error {
		hanging, err := s.c.HangingTransactions(s.ctx, topics, maxTimeout)
		if err != nil {
			return err
		}
		return s.p.result(hanging, func(p *printer) { openTxnTable(p, hanging) })
	})
	c.Flags().DurationVar(&maxTimeout, "max-transaction-timeout", 15*time.Minute,
		ex("only transactions whose producer last wrote longer ago than this (the cluster's transaction.max.timeout.ms)", "--max-transaction-timeout 5m"))
	return c
}

func (g *globals) txnAbortCmd() *cobra.Command {
	var topic string
	var partition int32
	var start int64
	c := &cobra.Command{
		Use:     "abort --topic TOPIC --partition N --start-offset OFFSET",
		Short:   "Abort the transaction open on a partition at its first offset (writes its ABORT marker)",
		Example: "  kbroker transactions abort --topic orders --partition 3 --start-offset 1200",
		Args:    args(0, 0, "no arguments"),
	}
	c.RunE = g.run(true, func(s *session, _ []string) error {
		if topic == "" || partition < 0 || start < 0 {
			return usagef("transactions abort needs --topic, --partition and --start-offset (kbroker transactions find-hanging lists them)")
		}
		o, err := s.c.AbortTransaction(s.ctx, topic, partition, start)
		if err != nil {
			return err
		}
		return s.p.result(o, func(p *printer) {
			p.Fields("aborted", topic+"-"+strconv.Itoa(int(partition)), "start offset", strconv.FormatInt(o.StartOffset, 10),
				"producer", strconv.FormatInt(o.ProducerID, 10)+" epoch "+strconv.Itoa(int(o.ProducerEpoch)))
		})
	})
	f := c.Flags()
	f.StringVar(&topic, "topic", "", ex("the transaction's topic", "--topic orders"))
	f.Int32Var(&partition, "partition", -1, ex("the transaction's partition", "--partition 3"))
	f.Int64Var(&start, "start-offset", -1, ex("the transaction's first offset on the partition (START in find-hanging)", "--start-offset 1200"))
	return c
}

func openTxnTable(p *printer, open []admin.OpenTransaction) {
	var rows [][]string
	for _, o := range open {
		age := "-"
		if o.LastTimestamp > 0 {
			age = time.Since(time.UnixMilli(o.LastTimestamp)).Truncate(time.Second).String()
		}
		rows = append(rows, []string{o.Topic, strconv.Itoa(int(o.Partition)), strconv.FormatInt(o.StartOffset, 10),
			strconv.FormatInt(o.ProducerID, 10), strconv.Itoa(int(o.ProducerEpoch)), age,
			orDash(o.TransactionalID), orDash(o.CoordinatorState), strconv.FormatBool(o.Hanging)})
	}
	p.Table([]string{"TOPIC", "PARTITION", "START", "PRODUCER", "EPOCH", "LAST WRITE", "TRANSACTIONAL ID", "COORDINATOR STATE", "HANGING"}, rows)
}

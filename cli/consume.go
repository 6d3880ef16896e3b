package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kbroker/kbroker/admin"
)

// consumeOpts are consume's flags.
type consumeOpts struct {
	from, to, group, encoding string
	num                       int
	partitions                []int32
}

func (g *globals) consumeCmd() *cobra.Command {
	var o consumeOpts
	c := &cobra.Command{
		Use:   "consume TOPIC...",
		Short: "Read records, from and to offsets or times, alone or as a group member",
		Long: "Read records and print them: a table (partition, offset, timestamp, key,\n" +
			"headers, value) or, with --format json, one JSON object per record. Without\n" +
			"--to or --num it follows the topic until interrupted. Without --group it\n" +
			"joins no group and commits nothing; with --group it consumes as a member and\n" +
			"commits what it printed.\n\nPositions (--offset, --to): " + admin.OffsetSyntax + ".",
		Example: "  kbroker consume orders                           # everything, then follow\n" +
			"  kbroker consume orders -o -10 --to end           # the last 10 records of each partition\n" +
			"  kbroker consume orders -o @-1h -n 5 -p 0         # 5 records of partition 0 from an hour ago\n" +
			"  kbroker consume orders -g audit -n 100 --format json --encoding json",
		Args:              args(1, -1, "at least one topic name"),
		ValidArgsFunction: g.completeTopics,
	}
	c.RunE = g.run(false, func(s *session, topics []string) error { return s.consume(topics, &o) })
	f := c.Flags()
	f.StringVarP(&o.from, "offset", "o", "start", ex("where to start in each partition: "+admin.OffsetSyntax, "-o end, -o 1500, -o -20, -o @2024-05-01T10:00:00Z"))
	f.StringVar(&o.to, "to", "", ex("stop each partition before this position (end: where it ends now); same syntax as --offset", "--to end, --to 2000, --to @-10m"))
	f.IntVarP(&o.num, "num", "n", 0, ex("stop after this many records (0: no limit)", "-n 10"))
	f.Int32SliceVarP(&o.partitions, "partitions", "p", nil, ex("read only these partitions (not with --group)", "-p 0,2"))
	f.StringVarP(&o.group, "group", "g", "", ex("consume as a member of this group and commit what was printed; --offset applies where it has no offset", "-g audit"))
	f.StringVar(&o.encoding, "encoding", "text", ex("how keys, values and header values are shown: text, json, hex or base64", "--encoding hex"))
	return c
}

func (s *session) consume(topics []string, o *consumeOpts) error {
	enc, err := admin.ParseEncoding(o.encoding)
	if err != nil {
		return &UsageError{err}
	}
	from, err := admin.ParseOffset(o.from, time.Now())
	if err != nil {
		return &UsageError{fmt.Errorf("--offset: %v", err)}
	}
	if o.num < 0 {
		return usagef("--num %d: want 0 or more", o.num)
	}
	ro := admin.ReadOptions{Topics: topics, Partitions: o.partitions, From: from, Limit: o.num}
	if o.to != "" {
		to, err := admin.ParseOffset(o.to, time.Now())
		if err != nil {
			return &UsageError{fmt.Errorf("--to: %v", err)}
		}
		ro.To = &to
	}
	if o.group != "" && (o.to != "" || o.partitions != nil) {
		return usagef("--to and --partitions do not go with --group: the group decides the partitions")
	}
	out := &recordPrinter{p: s.p, enc: enc, topicColumn: len(topics) > 1, keyWidth: 8}
	n := 0
	show := func(r *kgo.Record) bool { out.print(r); n++; return true }
	if o.group != "" {
		err = s.c.ReadGroup(s.ctx, admin.GroupReadOptions{Group: o.group, Topics: topics, From: from, Limit: o.num}, show)
	} else {
		err = s.c.Read(s.ctx, ro, show)
	}
	if err == nil {
		fmt.Fprintf(s.cmd.ErrOrStderr(), "consumed %d records\n", n)
	}
	return err
}

// recordPrinter prints consumed records: JSON lines, or table rows whose
// key column widens as longer keys come (the stream cannot be measured in
// advance).
type recordPrinter struct {
	p           *printer
	enc         admin.Encoding
	topicColumn bool
	keyWidth    int
	header      bool
}

func (rp *recordPrinter) print(r *kgo.Record) {
	if rp.p.json {
		rp.p.Line(rp.enc.Record(r))
		return
	}
	key := rp.enc.Text(r.Key)
	if r.Key == nil {
		key = "-"
	}
	rp.keyWidth = max(rp.keyWidth, len(key))
	if !rp.header {
		rp.header = true
		rp.row("TOPIC", "PARTITION", "OFFSET", "TIMESTAMP", "KEY", "HEADERS", "VALUE")
	}
	rp.row(r.Topic, itoa(r.Partition), itoa(r.Offset), admin.Timestamp(r.Timestamp), key,
		orDash(rp.enc.HeadersText(r.Headers)), rp.enc.Text(r.Value))
}

func (rp *recordPrinter) row(topic, partition, off, ts, key, headers, value string) {
	var b strings.Builder
	if rp.topicColumn {
		fmt.Fprintf(&b, "%-20s  ", topic)
	}
	fmt.Fprintf(&b, "%-9s  %-10s  %-24s  %-*s  %-7s  %s\n", partition, off, ts, rp.keyWidth, key, headers, value)
	fmt.Fprint(rp.p.w, b.String())
}

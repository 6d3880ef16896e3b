package cli

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kbroker/kbroker/admin"
)

// produceOpts are produce's flags.
type produceOpts struct {
	key, keyDelim, input, encoding, acks, compression string
	headers                                           []string
	partition                                         int32
}

func (g *globals) produceCmd() *cobra.Command {
	var o produceOpts
	c := &cobra.Command{
		Use:   "produce TOPIC",
		Short: "Write records read from stdin, one per line",
		Long: "Write records to a topic, one per line of stdin (blank lines are skipped).\n" +
			"Each acknowledged record is printed with its partition and offset, in input\n" +
			"order. --input json reads what `kbroker consume --format json` prints:\n" +
			`{"key":"k","value":"v","headers":[{"key":"h","value":"x"}],"partition":0}` + "\n" +
			"(string fields in --encoding, other JSON values as their JSON text, null as null).",
		Example: "  echo hello | kbroker produce orders\n" +
			"  printf 'k1:v1\\nk2:v2\\n' | kbroker produce orders -K : -H source=ops --acks all\n" +
			"  kbroker consume orders --format json --encoding base64 -n 100 | kbroker produce orders-copy --input json --encoding base64",
		Args:              args(1, 1, "one topic name"),
		ValidArgsFunction: g.completeTopics,
	}
	c.RunE = g.run(false, func(s *session, a []string) error { return s.produce(a[0], &o) })
	f := c.Flags()
	f.StringVarP(&o.key, "key", "k", "", ex("key of every record (lines mode)", "-k customer-42"))
	f.StringVarP(&o.keyDelim, "key-delimiter", "K", "", ex("split each line at the first DELIM into key and value (lines mode)", "-K :"))
	f.StringArrayVarP(&o.headers, "header", "H", nil, ex("header key=value on every record, repeatable", "-H source=ops -H trace=1"))
	f.Int32VarP(&o.partition, "partition", "p", -1, ex("write every record to this partition; -1 lets the key decide", "-p 0"))
	f.StringVar(&o.input, "input", "lines", ex("input format: lines (a value per line) or json (a record object per line)", "--input json"))
	f.StringVar(&o.encoding, "encoding", "text", ex("how keys, values and header values are written in the input: text, hex or base64", "--encoding hex"))
	f.StringVar(&o.acks, "acks", "all", ex("acknowledgement: all (every in-sync replica), 1 (the leader) or 0 (none)", "--acks 1"))
	f.StringVar(&o.compression, "compression", "none", ex("batch compression: none, gzip, snappy, lz4 or zstd", "--compression zstd"))
	return c
}

func (o *produceOpts) kgoOpts() ([]kgo.Opt, error) {
	opts := []kgo.Opt{kgo.ProducerLinger(5 * time.Millisecond)}
	switch o.acks {
	case "all", "-1":
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	case "1":
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	case "0":
		opts = append(opts, kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite())
	default:
		return nil, usagef("--acks %s: want all, 1 or 0", o.acks)
	}
	codecs := map[string]kgo.CompressionCodec{"none": kgo.NoCompression(), "gzip": kgo.GzipCompression(),
		"snappy": kgo.SnappyCompression(), "lz4": kgo.Lz4Compression(), "zstd": kgo.ZstdCompression()}
	codec, ok := codecs[o.compression]
	if !ok {
		return nil, usagef("--compression %s: want none, gzip, snappy, lz4 or zstd", o.compression)
	}
	return append(opts, kgo.ProducerBatchCompression(codec), kgo.RecordPartitioner(recordPartitioner())), nil
}

// recordPartitioner honours a record's own partition (from -p or the JSON
// input), else hashes its key as Kafka's clients do (murmur2), else goes
// round-robin. kgo calls it under the topic's lock.
func recordPartitioner() kgo.Partitioner {
	keyed := kgo.StickyKeyPartitioner(nil)
	return kgo.BasicConsistentPartitioner(func(topic string) func(*kgo.Record, int) int {
		byKey := keyed.ForTopic(topic)
		next := -1
		return func(r *kgo.Record, n int) int {
			switch {
			case r.Partition >= 0:
				return int(r.Partition)
			case r.Key != nil:
				return byKey.Partition(r, n)
			}
			next++
			return next % n
		}
	})
}

// recordParser turns one input line into a record.
type recordParser func(line []byte) (*kgo.Record, error)

func (o *produceOpts) parser() (recordParser, error) {
	enc, err := admin.ParseEncoding(o.encoding)
	if err != nil || enc == admin.EncodingJSON {
		return nil, usagef("--encoding %s: want text, hex or base64", o.encoding)
	}
	headers, err := o.headerList(enc)
	if err != nil {
		return nil, err
	}
	switch o.input {
	case "json":
		return func(line []byte) (*kgo.Record, error) {
			r, p, err := enc.ParseInputRecord(line)
			if err != nil {
				return nil, err
			}
			r.Headers = append(r.Headers, headers...)
			r.Partition = o.partition
			if p != nil {
				r.Partition = *p
			}
			return r, nil
		}, nil
	case "lines":
		return o.lineParser(enc, headers), nil
	}
	return nil, usagef("--input %s: want lines or json", o.input)
}

func (o *produceOpts) lineParser(enc admin.Encoding, headers []kgo.RecordHeader) recordParser {
	return func(line []byte) (*kgo.Record, error) {
		r := &kgo.Record{Headers: headers, Partition: o.partition}
		value := string(line)
		key, hasKey := o.key, o.key != ""
		if o.keyDelim != "" {
			k, v, ok := strings.Cut(value, o.keyDelim)
			if !ok {
				return nil, fmt.Errorf("no key delimiter %q in the line", o.keyDelim)
			}
			key, value, hasKey = k, v, true
		}
		var err error
		if hasKey {
			if r.Key, err = enc.Decode(key); err != nil {
				return nil, fmt.Errorf("key: %v", err)
			}
		}
		if r.Value, err = enc.Decode(value); err != nil {
			return nil, fmt.Errorf("value: %v", err)
		}
		return r, nil
	}
}

func (o *produceOpts) headerList(enc admin.Encoding) ([]kgo.RecordHeader, error) {
	var out []kgo.RecordHeader
	for _, h := range o.headers {
		k, v, ok := strings.Cut(h, "=")
		if !ok || k == "" {
			return nil, usagef("--header %s: want key=value", h)
		}
		b, err := enc.Decode(v)
		if err != nil {
			return nil, usagef("--header %s: %v", h, err)
		}
		out = append(out, kgo.RecordHeader{Key: k, Value: b})
	}
	return out, nil
}

func (s *session) produce(topic string, o *produceOpts) error {
	parse, err := o.parser()
	if err != nil {
		return err
	}
	opts, err := o.kgoOpts()
	if err != nil {
		return err
	}
	partitions, err := s.c.Partitions(s.ctx, topic)
	if err != nil {
		return err
	}
	if o.partition >= int32(len(partitions)) {
		return usagef("--partition %d: topic %q has %d partitions", o.partition, topic, len(partitions))
	}
	cl, err := s.c.NewClient(append(opts, kgo.DefaultProduceTopic(topic))...)
	if err != nil {
		return err
	}
	defer cl.Close()
	acks := &ackPrinter{p: s.p, done: map[int]ackResult{}, start: time.Now()}
	n, readErr := s.feed(cl, s.cmd.InOrStdin(), parse, acks)
	if err := cl.Flush(s.ctx); err != nil && readErr == nil {
		readErr = err
	}
	fmt.Fprintf(s.cmd.ErrOrStderr(), "produced %d of %d records to %s in %v\n", n-acks.failed(), n, topic,
		time.Since(acks.start).Round(time.Millisecond))
	if readErr != nil {
		return readErr
	}
	return acks.err()
}

// feed produces every input line asynchronously and returns how many.
func (s *session) feed(cl *kgo.Client, in io.Reader, parse recordParser, acks *ackPrinter) (int, error) {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	n, line := 0, 0
	progress := newProgress(s.cmd.ErrOrStderr(), "produced")
	defer progress.stop()
	for sc.Scan() {
		line++
		b := bytes.TrimRight(sc.Bytes(), "\r")
		if len(bytes.TrimSpace(b)) == 0 {
			continue
		}
		r, err := parse(append([]byte(nil), b...))
		if err != nil {
			return n, &UsageError{fmt.Errorf("input line %d: %v", line, err)}
		}
		i := n
		n++
		cl.Produce(s.ctx, r, func(r *kgo.Record, err error) { acks.ack(i, r, err); progress.add(1) })
		if s.ctx.Err() != nil {
			return n, nil
		}
	}
	if err := sc.Err(); err != nil {
		return n, fmt.Errorf("reading stdin: %v", err)
	}
	return n, nil
}

// ackResult is one produced record's outcome.
type ackResult struct {
	r   *kgo.Record
	err error
}

// ackPrinter prints acknowledgements in input order as they arrive.
type ackPrinter struct {
	p     *printer
	start time.Time

	mu      sync.Mutex // guards the following
	next    int
	done    map[int]ackResult
	nFailed int
	first   error
}

func (a *ackPrinter) ack(i int, r *kgo.Record, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.done[i] = ackResult{r, err}
	for {
		res, ok := a.done[a.next]
		if !ok {
			return
		}
		delete(a.done, a.next)
		a.next++
		a.printLocked(res)
	}
}

func (a *ackPrinter) printLocked(res ackResult) {
	r := res.r
	if res.err != nil {
		a.nFailed++
		if a.first == nil {
			a.first = fmt.Errorf("producing to %s: %w", r.Topic, res.err)
		}
	}
	if a.p.json {
		out := map[string]any{"topic": r.Topic, "partition": r.Partition, "offset": r.Offset, "timestamp": r.Timestamp.UnixMilli()}
		if res.err != nil {
			out["error"] = res.err.Error()
		}
		a.p.Line(out)
		return
	}
	if res.err != nil {
		fmt.Fprintf(a.p.w, "failed: %s: %v\n", r.Topic, res.err)
		return
	}
	fmt.Fprintf(a.p.w, "%s partition %d offset %d\n", r.Topic, r.Partition, r.Offset)
}

func (a *ackPrinter) failed() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.nFailed
}

func (a *ackPrinter) err() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.first
}

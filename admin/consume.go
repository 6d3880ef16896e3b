package admin

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ReadOptions say which records Read delivers.
type ReadOptions struct {
	Topics     []string
	Partitions []int32 // nil: every partition
	From       OffsetSpec
	// To stops each partition before this position (exclusive), resolved
	// when reading starts: end means the high watermark then. Nil: follow
	// until ctx ends.
	To *OffsetSpec
	// Limit stops after this many records (0: no limit).
	Limit int
	// MaxWait bounds one fetch's long poll (default 500 ms).
	MaxWait time.Duration
}

// Read delivers records to fn in each partition's order until every
// partition reached its To, Limit records were delivered, ctx ended (nil
// error) or fn returned false. It joins no group and commits nothing.
func (c *Client) Read(ctx context.Context, o ReadOptions, fn func(*kgo.Record) bool) error {
	set, err := c.partitionSet(ctx, o.Topics, o.Partitions)
	if err != nil {
		return err
	}
	starts, err := c.Resolve(ctx, set, o.From)
	if err != nil {
		return err
	}
	stops, err := c.stops(ctx, set, o.To)
	if err != nil {
		return err
	}
	assign := map[string]map[int32]kgo.Offset{}
	for t, ps := range starts {
		for p, off := range ps {
			if stops != nil && off >= stops.Lookup(t, p) {
				continue // nothing to read in [start, stop)
			}
			if assign[t] == nil {
				assign[t] = map[int32]kgo.Offset{}
			}
			assign[t][p] = kgo.NewOffset().At(off)
		}
	}
	if len(assign) == 0 {
		return nil
	}
	cl, err := c.NewClient(kgo.ConsumePartitions(assign), kgo.KeepControlRecords(),
		kgo.FetchMaxWait(orDefault(o.MaxWait, 500*time.Millisecond)))
	if err != nil {
		return err
	}
	defer cl.Close()
	return c.readLoop(ctx, cl, o.Limit, stops, assign, fn)
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// readLoop polls until the stop conditions of Read hold.
func (c *Client) readLoop(ctx context.Context, cl *kgo.Client, limit int, stops Offsets,
	open map[string]map[int32]kgo.Offset, fn func(*kgo.Record) bool) error {
	remaining := 0
	for _, ps := range open {
		remaining += len(ps)
	}
	delivered := 0
	for remaining > 0 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err := c.fetchErr(ctx, fs); err != nil {
			return err
		}
		for it := fs.RecordIter(); !it.Done(); {
			r := it.Next()
			stop := stops.Lookup(r.Topic, r.Partition)
			if _, ok := open[r.Topic][r.Partition]; !ok || stops != nil && r.Offset >= stop {
				continue
			}
			if !r.Attrs.IsControl() {
				if !fn(r) {
					return nil
				}
				if delivered++; limit > 0 && delivered >= limit {
					return nil
				}
			}
			if stops != nil && r.Offset+1 >= stop {
				delete(open[r.Topic], r.Partition)
				remaining--
			}
		}
	}
	return nil
}

// fetchErr returns the first fetch error a retry will not cure.
func (c *Client) fetchErr(ctx context.Context, fs kgo.Fetches) error {
	var out error
	fs.EachError(func(t string, p int32, err error) {
		if out != nil || kerr.IsRetriable(err) || errors.Is(err, context.Canceled) {
			return
		}
		out = c.Explain(ctx, c.codeErr(fmt.Sprintf("partition %s/%d", t, p), err, nil, kmsg.Fetch.Int16()))
	})
	return out
}

// stops resolves To per partition; nil To: no stops.
func (c *Client) stops(ctx context.Context, set kadm.TopicsSet, to *OffsetSpec) (Offsets, error) {
	if to == nil {
		return nil, nil
	}
	return c.Resolve(ctx, set, *to)
}

// partitionSet is the partitions of topics (only those listed, if any);
// an unknown topic or partition is an error.
func (c *Client) partitionSet(ctx context.Context, topics []string, partitions []int32) (kadm.TopicsSet, error) {
	md, err := c.adm.Metadata(ctx, topics...)
	if err != nil {
		return nil, c.Explain(ctx, err)
	}
	set := kadm.TopicsSet{}
	for _, t := range topics {
		td, ok := md.Topics[t]
		if !ok || errors.Is(td.Err, kerr.UnknownTopicOrPartition) {
			return nil, &NotFoundError{What: "topic", Name: t}
		}
		if td.Err != nil {
			return nil, c.codeErr(fmt.Sprintf("topic %q", t), td.Err, nil, kmsg.Metadata.Int16())
		}
		for _, p := range partitions {
			if _, ok := td.Partitions[p]; !ok {
				return nil, fmt.Errorf("topic %q has no partition %d (it has %d)", t, p, len(td.Partitions))
			}
		}
		for p := range td.Partitions {
			if partitions == nil || slices.Contains(partitions, p) {
				set.Add(t, p)
			}
		}
	}
	return set, nil
}

// Partitions returns the partition numbers of a topic; a missing topic is a
// NotFoundError.
func (c *Client) Partitions(ctx context.Context, topic string) ([]int32, error) {
	set, err := c.partitionSet(ctx, []string{topic}, nil)
	if err != nil {
		return nil, err
	}
	ps := set[topic]
	out := make([]int32, 0, len(ps))
	for p := range ps {
		out = append(out, p)
	}
	slices.Sort(out)
	return out, nil
}

// GroupReadOptions say how ReadGroup consumes as a group member.
type GroupReadOptions struct {
	Group  string
	Topics []string
	// From is where partitions without a committed offset start.
	From  OffsetSpec
	Limit int // 0: until ctx ends
}

// ReadGroup consumes topics as a member of a consumer group, delivering
// records to fn and committing the offsets of the records delivered when
// it returns.
func (c *Client) ReadGroup(ctx context.Context, o GroupReadOptions, fn func(*kgo.Record) bool) error {
	if _, err := c.partitionSet(ctx, o.Topics, nil); err != nil {
		return err
	}
	cl, err := c.NewClient(kgo.ConsumerGroup(o.Group), kgo.ConsumeTopics(o.Topics...),
		kgo.ConsumeResetOffset(o.From.KgoOffset()), kgo.AutoCommitMarks(), kgo.FetchMaxWait(500*time.Millisecond))
	if err != nil {
		return err
	}
	defer cl.Close()
	loopErr := c.groupLoop(ctx, cl, o.Limit, fn)
	cctx, cancel := context.WithTimeout(context.Background(), c.cfg.RequestTimeout)
	defer cancel()
	if err := cl.CommitMarkedOffsets(cctx); err != nil && loopErr == nil {
		loopErr = c.Explain(cctx, fmt.Errorf("committing group %q offsets: %w", o.Group, err))
	}
	cl.LeaveGroupContext(cctx)
	return loopErr
}

func (c *Client) groupLoop(ctx context.Context, cl *kgo.Client, limit int, fn func(*kgo.Record) bool) error {
	delivered := 0
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil || fs.IsClientClosed() {
			return nil
		}
		if err := c.fetchErr(ctx, fs); err != nil {
			return err
		}
		for it := fs.RecordIter(); !it.Done(); {
			r := it.Next()
			if !fn(r) {
				return nil
			}
			cl.MarkCommitRecords(r)
			if delivered++; limit > 0 && delivered >= limit {
				return nil
			}
		}
	}
}

package main

// The consumers workload's reader: cfg.Groups consumer groups of one member
// each read the whole topic at once. Every member joins first; the clock
// starts when all of them hold their assignment (each is held in
// OnPartitionsAssigned until then, which franz-go calls before it fetches
// anything), and stops when the last group has read every record. So the
// joins (kbroker waits group.initial.rebalance.delay.ms, as Kafka does)
// stay out of the rate, and no group starts early.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// groupJoinTimeout bounds the wait for every group's assignment.
const groupJoinTimeout = 60 * time.Second

// groupBarrier holds every group's member in its assignment callback until
// all n have one, or until the deadline.
type groupBarrier struct {
	n       int
	arrived atomic.Int32
	all     chan struct{}
	once    sync.Once
}

func newGroupBarrier(n int) *groupBarrier { return &groupBarrier{n: n, all: make(chan struct{})} }

// arrive counts one group in (a group counts once) and waits for the rest.
func (b *groupBarrier) arrive(ctx context.Context, first *atomic.Bool) {
	if first.CompareAndSwap(false, true) && int(b.arrived.Add(1)) == b.n {
		b.once.Do(func() { close(b.all) })
	}
	select {
	case <-b.all:
	case <-ctx.Done():
	}
}

// groupReader is one group's member and what it has read.
type groupReader struct {
	cl       *kgo.Client
	name     string
	assigned atomic.Bool
	got      loadResult // records, bytes and errors read
	done     time.Time  // when it had read every record
}

func consumeGroups(ctx context.Context, cfg loadConfig, startClock, stopClock func()) (loadResult, error) {
	want, err := topicRecords(ctx, cfg.Brokers, cfg.Topic)
	if err != nil {
		return loadResult{}, err
	}
	if want == 0 {
		return loadResult{}, fmt.Errorf("topic %s is empty", cfg.Topic)
	}
	joinStart := time.Now()
	bar := newGroupBarrier(cfg.Groups)
	readers, err := groupReaders(cfg, bar)
	var res loadResult
	if err == nil {
		res, err = readGroups(ctx, bar, readers, want, joinStart, startClock, stopClock)
	}
	// The groups are gone before the topic is: a failure here is the
	// run's client error, not a reason to drop what it measured.
	if derr := deleteGroups(cfg.Brokers, readers); derr != nil {
		if res.Errors++; res.FirstError == "" {
			res.FirstError = derr.Error()
		}
	}
	return res, err
}

// readGroups waits until every group holds its assignment, then starts the
// clock and reads the topic with every group at once.
func readGroups(ctx context.Context, bar *groupBarrier, readers []*groupReader, want int64, joinStart time.Time,
	startClock, stopClock func()) (loadResult, error) {
	if err := waitJoined(ctx, bar, readers); err != nil {
		return loadResult{}, err
	}
	setup := time.Since(joinStart)
	if startClock != nil {
		startClock()
	}
	start := time.Now()
	var wg sync.WaitGroup
	for _, r := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.read(ctx, want)
		}()
	}
	wg.Wait()
	if stopClock != nil {
		stopClock()
	}
	return groupsResult(readers, want, start, setup)
}

// groupReaders makes one client per group, each a group's only member,
// with franz-go's consumer defaults except that offsets are not committed
// (the measure is delivery, and no group keeps state for a later run).
func groupReaders(cfg loadConfig, bar *groupBarrier) ([]*groupReader, error) {
	nonce := time.Now().UnixNano()
	var readers []*groupReader
	for i := range cfg.Groups {
		r := &groupReader{name: fmt.Sprintf("kbench-%s-%d-%d", cfg.Topic, nonce, i)}
		cl, err := kgo.NewClient(kgo.SeedBrokers(cfg.Brokers...), kgo.ConsumerGroup(r.name), kgo.ConsumeTopics(cfg.Topic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(),
			kgo.OnPartitionsAssigned(func(ctx context.Context, _ *kgo.Client, a map[string][]int32) {
				if len(a) > 0 {
					bar.arrive(ctx, &r.assigned)
				}
			}))
		if err != nil {
			return readers, err
		}
		r.cl = cl
		readers = append(readers, r)
	}
	return readers, nil
}

// waitJoined waits until every group holds an assignment (franz-go joins
// in the background from the client's start, no poll needed).
func waitJoined(ctx context.Context, bar *groupBarrier, readers []*groupReader) error {
	select {
	case <-bar.all:
		return nil
	case <-time.After(groupJoinTimeout):
	case <-ctx.Done():
	}
	n := 0
	for _, r := range readers {
		if r.assigned.Load() {
			n++
		}
	}
	return fmt.Errorf("%d of %d consumer groups had an assignment after %v", n, len(readers), groupJoinTimeout)
}

// read polls until the group has read want records or ctx ends.
func (r *groupReader) read(ctx context.Context, want int64) {
	for r.got.Records < want && ctx.Err() == nil {
		tally(r.cl.PollFetches(ctx), &r.got)
	}
	r.done = time.Now()
}

// groupsResult sums the groups: records and bytes delivered in all, timed
// from the common start to the last group's last record.
func groupsResult(readers []*groupReader, want int64, start time.Time, setup time.Duration) (loadResult, error) {
	res := loadResult{Setup: setup, Groups: len(readers)}
	var short []string
	for _, r := range readers {
		res.Records += r.got.Records
		res.Bytes += r.got.Bytes
		res.Elapsed = max(res.Elapsed, r.done.Sub(start))
		if res.Errors += r.got.Errors; res.FirstError == "" {
			res.FirstError = r.got.FirstError
		}
		if r.got.Records < want {
			short = append(short, fmt.Sprintf("%s read %d of %d", r.name, r.got.Records, want))
		}
	}
	if len(short) > 0 {
		return res, fmt.Errorf("groups short of the topic's records: %v", short)
	}
	return res, nil
}

// deleteGroups closes the members (each leaves its group) and deletes the
// groups, retrying while a group is not empty yet, for at most 10 s.
func deleteGroups(brokers []string, readers []*groupReader) error {
	var names []string
	for _, r := range readers {
		r.cl.Close()
		names = append(names, r.name)
	}
	if len(names) == 0 {
		return nil
	}
	adm, cl, err := adminClient(brokers)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		resp, err := adm.DeleteGroups(ctx, names...)
		if err == nil {
			names = names[:0]
			for _, d := range resp.Sorted() {
				if d.Err != nil && !errors.Is(d.Err, kerr.GroupIDNotFound) {
					names, err = append(names, d.Group), d.Err
				}
			}
		}
		if len(names) == 0 {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("deleting consumer groups %v: %w", names, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

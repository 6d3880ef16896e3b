package chaos

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// workload is producers writing unique sequenced values and consumers
// reading them, every step recorded in a history.
type workload struct {
	topic      string
	partitions int32
	producers  int
	consumers  int
	// interval between two values of one producer.
	interval time.Duration
	// inflight caps each producer's unanswered values; when reached the
	// producer waits (no attempt is made while it waits).
	inflight int
	// acks1 produces with acks=1 and no idempotence; otherwise acks=all,
	// idempotent.
	acks1 bool
	// deliveryTimeout: a value not acknowledged by then fails.
	deliveryTimeout time.Duration
}

// running is a started workload.
type running struct {
	w       workload
	h       *History
	stopP   context.CancelFunc // stops producing new values
	stopC   context.CancelFunc // stops the consumers
	pwg     sync.WaitGroup
	cwg     sync.WaitGroup
	clients []*kgo.Client
	errsMu  sync.Mutex
	errs    map[string]int // consumer fetch errors by message
}

// pad makes records ~150 bytes, so that a rate-limited link lags.
var pad = bytes.Repeat([]byte("x"), 128)

func (w workload) start(seeds []string, h *History) (*running, error) {
	r := &running{w: w, h: h, errs: map[string]int{}}
	pctx, stopP := context.WithCancel(context.Background())
	cctx, stopC := context.WithCancel(context.Background())
	r.stopP, r.stopC = stopP, stopC
	for i := range w.producers {
		cl, err := kgo.NewClient(w.producerOpts(seeds)...)
		if err != nil {
			return nil, err
		}
		r.clients = append(r.clients, cl)
		r.pwg.Add(1)
		go r.produce(pctx, cl, fmt.Sprintf("p%d", i))
	}
	for i := range w.consumers {
		offsets := map[int32]kgo.Offset{}
		for p := range w.partitions {
			offsets[p] = kgo.NewOffset().AtStart()
		}
		cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...),
			kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{w.topic: offsets}),
			kgo.FetchMaxWait(300*time.Millisecond), kgo.MetadataMinAge(250*time.Millisecond),
			kgo.RequestTimeoutOverhead(3*time.Second), kgo.DialTimeout(2*time.Second))
		if err != nil {
			return nil, err
		}
		r.cwg.Add(1)
		go r.consume(cctx, cl, fmt.Sprintf("c%d", i))
	}
	return r, nil
}

func (w workload) producerOpts(seeds []string) []kgo.Opt {
	opts := []kgo.Opt{
		kgo.SeedBrokers(seeds...),
		kgo.DefaultProduceTopic(w.topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RecordDeliveryTimeout(w.deliveryTimeout),
		kgo.ProduceRequestTimeout(3 * time.Second),
		kgo.RequestTimeoutOverhead(3 * time.Second),
		kgo.DialTimeout(2 * time.Second),
		kgo.MetadataMinAge(250 * time.Millisecond),
		kgo.ProducerLinger(0),
		kgo.ProducerBatchCompression(kgo.NoCompression()), // sizes as written: links and segments fill
	}
	if w.acks1 {
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	} else {
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	}
	return opts
}

// produce writes "<proc>-<seq>" to partition seq % partitions every
// interval until ctx ends.
func (r *running) produce(ctx context.Context, cl *kgo.Client, proc string) {
	defer r.pwg.Done()
	sem := make(chan struct{}, r.w.inflight)
	tick := time.NewTicker(r.w.interval)
	defer tick.Stop()
	for seq := 0; ; seq++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		select {
		case <-ctx.Done():
			return
		case sem <- struct{}{}:
		}
		v := fmt.Sprintf("%s-%07d", proc, seq)
		p := int32(seq) % r.w.partitions
		r.h.Add(Event{Proc: proc, Type: Invoke, Value: v, Partition: p})
		rec := &kgo.Record{Value: []byte(v), Key: pad, Partition: p}
		// The record's context is not ctx: stopping the producers must not
		// fail what is already handed over; Flush waits for it.
		cl.Produce(context.Background(), rec, func(rec *kgo.Record, err error) {
			if err != nil {
				r.h.Add(Event{Proc: proc, Type: Fail, Value: v, Partition: p, Info: err.Error()})
			} else {
				r.h.Add(Event{Proc: proc, Type: Ok, Value: v, Partition: rec.Partition, Offset: rec.Offset})
			}
			<-sem
		})
	}
}

func (r *running) consume(ctx context.Context, cl *kgo.Client, proc string) {
	defer r.cwg.Done()
	defer cl.Close()
	for ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		fs.EachError(func(_ string, _ int32, err error) {
			if !errors.Is(err, context.Canceled) {
				r.errsMu.Lock()
				r.errs[err.Error()]++
				r.errsMu.Unlock()
			}
		})
		fs.EachRecord(func(rec *kgo.Record) {
			r.h.Add(Event{Proc: proc, Type: Read, Value: string(rec.Value), Partition: rec.Partition, Offset: rec.Offset})
		})
	}
}

// stop stops producing, waits up to d for every value handed over to be
// answered, and stops the consumers. Values still unanswered stay
// indeterminate in the history.
func (r *running) stop(d time.Duration) {
	r.stopP()
	r.pwg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var wg sync.WaitGroup
	for _, cl := range r.clients {
		wg.Add(1)
		go func() { defer wg.Done(); cl.Flush(ctx) }()
	}
	wg.Wait()
	r.stopC()
	r.cwg.Wait()
	for _, cl := range r.clients {
		go cl.Close() // Close fails what is still buffered; the history has what mattered
	}
}

// finalRead reads every partition from its start to its end offset and
// records every data record as a Final event; opts add to the consumer's
// options (read_committed, with control records to follow the offsets
// past the markers).
func finalRead(seeds []string, topic string, partitions int32, h *History, d time.Duration, opts ...kgo.Opt) error {
	ends, err := settledEnds(seeds, topic, d)
	if err != nil {
		return err
	}
	offsets := map[int32]kgo.Offset{}
	for p := range partitions {
		offsets[p] = kgo.NewOffset().AtStart()
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(seeds...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}),
		kgo.FetchMaxWait(200 * time.Millisecond)}, opts...)...)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	next := map[int32]int64{}
	done := func() bool {
		for p := range partitions {
			if next[p] < ends[p] {
				return false
			}
		}
		return true
	}
	for !done() {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return fmt.Errorf("final read: reached %v of %v before the deadline (a transaction left open?)", next, ends)
		}
		fs.EachRecord(func(rec *kgo.Record) {
			if rec.Offset < ends[rec.Partition] && !rec.Attrs.IsControl() {
				h.Add(Event{Proc: "final", Type: Final, Value: string(rec.Value), Partition: rec.Partition, Offset: rec.Offset})
			}
			next[rec.Partition] = max(next[rec.Partition], rec.Offset+1)
		})
	}
	return nil
}

// settledEnds returns each partition's end offset once two reads a second
// apart agree (nothing is being written any more and the high watermarks
// caught up).
func settledEnds(seeds []string, topic string, d time.Duration) (map[int32]int64, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	read := func() (map[int32]int64, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		ends, err := adm.ListEndOffsets(ctx, topic)
		if err != nil {
			return nil, err
		}
		out := map[int32]int64{}
		var errs []error
		ends.Each(func(o kadm.ListedOffset) {
			errs = append(errs, o.Err)
			out[o.Partition] = o.Offset
		})
		return out, errors.Join(errs...)
	}
	var ends map[int32]int64
	err = waitFor(d, "end offsets to settle", func() error {
		a, err := read()
		if err != nil {
			return err
		}
		time.Sleep(time.Second)
		b, err := read()
		if err != nil {
			return err
		}
		if fmt.Sprint(a) != fmt.Sprint(b) {
			return fmt.Errorf("end offsets moved from %v to %v", a, b)
		}
		ends = b
		return nil
	})
	return ends, err
}

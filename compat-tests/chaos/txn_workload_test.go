package chaos

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// txnWorkload is transactional producers (franz-go, one transactional id
// each) writing unique values "t<N>-<seq>" in transactions that span the
// partitions, every abortEvery-th one aborted on purpose, and read_committed
// consumers; every step is an event for CheckTxn.
type txnWorkload struct {
	topic      string
	partitions int32
	producers  int
	consumers  int
	perTxn     int           // values per transaction
	interval   time.Duration // between two transactions of a producer
	abortEvery int
	// txnTimeout is the producers' transaction.timeout.ms: a transaction
	// its producer could not end is aborted by the coordinator after it.
	txnTimeout time.Duration
	idPrefix   string // unique per run: transactional ids are not reused
}

type txnRunning struct {
	w      txnWorkload
	h      *History
	seeds  []string
	stopP  context.CancelFunc
	stopC  context.CancelFunc
	pwg    sync.WaitGroup
	cwg    sync.WaitGroup
	errsMu sync.Mutex
	errs   map[string]int // producer and consumer errors by message
}

func (w txnWorkload) start(seeds []string, h *History) (*txnRunning, error) {
	r := &txnRunning{w: w, h: h, seeds: seeds, errs: map[string]int{}}
	pctx, stopP := context.WithCancel(context.Background())
	cctx, stopC := context.WithCancel(context.Background())
	r.stopP, r.stopC = stopP, stopC
	for i := range w.producers {
		r.pwg.Add(1)
		go r.produce(pctx, i)
	}
	for i := range w.consumers {
		cl, err := kgo.NewClient(w.consumerOpts(seeds)...)
		if err != nil {
			return nil, err
		}
		r.cwg.Add(1)
		go r.consume(cctx, cl, fmt.Sprintf("c%d", i))
	}
	return r, nil
}

func (w txnWorkload) consumerOpts(seeds []string) []kgo.Opt {
	offsets := map[int32]kgo.Offset{}
	for p := range w.partitions {
		offsets[p] = kgo.NewOffset().AtStart()
	}
	return []kgo.Opt{kgo.SeedBrokers(seeds...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{w.topic: offsets}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords(),
		kgo.FetchMaxWait(300 * time.Millisecond), kgo.MetadataMinAge(250 * time.Millisecond),
		kgo.RequestTimeoutOverhead(3 * time.Second), kgo.DialTimeout(2 * time.Second)}
}

func (r *txnRunning) producerClient(i int) (*kgo.Client, error) {
	return kgo.NewClient(kgo.SeedBrokers(r.seeds...),
		kgo.TransactionalID(fmt.Sprintf("%s-tp%d", r.w.idPrefix, i)), kgo.TransactionTimeout(r.w.txnTimeout),
		kgo.DefaultProduceTopic(r.w.topic), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RecordDeliveryTimeout(5*time.Second), kgo.ProduceRequestTimeout(3*time.Second),
		kgo.RequestTimeoutOverhead(3*time.Second), kgo.DialTimeout(2*time.Second),
		kgo.MetadataMinAge(250*time.Millisecond), kgo.ProducerLinger(0))
}

func (r *txnRunning) noteErr(who string, err error) {
	if err == nil || errors.Is(err, context.Canceled) {
		return
	}
	r.errsMu.Lock()
	r.errs[who+": "+err.Error()]++
	r.errsMu.Unlock()
}

// produce runs producer i's transactions until ctx ends. A client that
// failed (fenced, or a commit with no answer) is replaced by a new one with
// the same transactional id, which fences it, as an application would.
func (r *txnRunning) produce(ctx context.Context, i int) {
	defer r.pwg.Done()
	proc := fmt.Sprintf("t%d", i)
	var cl *kgo.Client
	defer func() {
		if cl != nil {
			cl.Close()
		}
	}()
	tick := time.NewTicker(r.w.interval)
	defer tick.Stop()
	for n := 0; ; n++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if cl == nil {
			var err error
			if cl, err = r.producerClient(i); err != nil {
				r.noteErr(proc, err)
				continue
			}
		}
		if !r.transaction(cl, proc, n) {
			cl.Close()
			cl = nil
		}
	}
}

// transaction runs transaction n of a producer and reports whether its
// client may go on.
func (r *txnRunning) transaction(cl *kgo.Client, proc string, n int) bool {
	txn := fmt.Sprintf("%s/%d", proc, n)
	if err := cl.BeginTransaction(); err != nil {
		r.noteErr(proc, err)
		return false
	}
	// The records' context is not the workload's: stopping must not fail
	// a transaction half way.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var failed atomic.Bool
	var wg sync.WaitGroup
	for k := range r.w.perTxn {
		seq := n*r.w.perTxn + k
		v := fmt.Sprintf("%s-%07d", proc, seq)
		p := int32(seq) % r.w.partitions
		r.h.Add(Event{Proc: proc, Type: TxnProduce, Value: v, Partition: p, Offset: -1, Info: txn})
		wg.Add(1)
		cl.Produce(ctx, &kgo.Record{Value: []byte(v), Partition: p}, func(rec *kgo.Record, err error) {
			defer wg.Done()
			if err != nil {
				failed.Store(true)
				r.noteErr(proc, err)
				return
			}
			r.h.Add(Event{Proc: proc, Type: TxnProduce, Value: v, Partition: rec.Partition, Offset: rec.Offset, Info: txn})
		})
	}
	wg.Wait()
	commit := !failed.Load() && n%r.w.abortEvery != r.w.abortEvery-1
	if !commit {
		if err := cl.AbortBufferedRecords(ctx); err != nil {
			r.noteErr(proc, err)
		}
	}
	err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit))
	switch {
	case !commit:
		// Aborted, or left open (the next instance's InitProducerId or
		// the coordinator's timeout aborts it): never committed.
		r.h.Add(Event{Proc: proc, Type: TxnAbort, Info: txn})
	case err == nil:
		r.h.Add(Event{Proc: proc, Type: TxnCommit, Info: txn})
	default:
		r.h.Add(Event{Proc: proc, Type: TxnUnknown, Info: txn + ": " + err.Error()})
	}
	r.noteErr(proc, err)
	return err == nil && !failed.Load()
}

func (r *txnRunning) consume(ctx context.Context, cl *kgo.Client, proc string) {
	defer r.cwg.Done()
	defer cl.Close()
	for ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		fs.EachPartition(func(p kgo.FetchTopicPartition) {
			if p.Err != nil {
				r.noteErr(proc, p.Err)
				return
			}
			r.h.Add(Event{Proc: proc, Type: Watermark, Partition: p.Partition, Offset: p.HighWatermark,
				Info: strconv.FormatInt(p.LastStableOffset, 10)})
			for _, rec := range p.Records {
				if !rec.Attrs.IsControl() {
					r.h.Add(Event{Proc: proc, Type: Read, Value: string(rec.Value), Partition: rec.Partition, Offset: rec.Offset})
				}
			}
		})
	}
}

// stop stops starting transactions, waits for the running ones and stops
// the consumers.
func (r *txnRunning) stop() {
	r.stopP()
	r.pwg.Wait()
	r.stopC()
	r.cwg.Wait()
}

// finalReadCommitted is finalRead with a read_committed consumer that
// reads the control records too, so that its offsets reach the end past
// the markers. An open transaction that is never ended holds the last
// stable offset back: the read then fails at its deadline.
func finalReadCommitted(seeds []string, w txnWorkload, h *History, d time.Duration) error {
	return finalRead(seeds, w.topic, w.partitions, h, d, kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords())
}

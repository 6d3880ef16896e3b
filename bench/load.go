package main

// The load tool: produce, consume or end-to-end against any Kafka cluster,
// with franz-go. Its numbers are the client's view (records/s, MB/s of
// payload, produce-ack and end-to-end latency) plus, when the broker pids
// are known, the brokers' CPU time and page faults per MB of payload and
// their peak memory.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// loadConfig is one load run. MB is 10^6 bytes of record values.
//
// Every produce run is capped by records: it first produces WarmRecords and
// waits for their acks (connections, metadata, producer id, the brokers'
// first touch of the topic), then starts the clock and produces exactly
// Records; its rates are over the time from the first of those records to
// the last ack. A run that is not done within Timeout fails.
type loadConfig struct {
	Brokers     []string
	Topic       string
	Partitions  int
	RF          int
	RecordBytes int
	Acks        string // "0", "1" or "all"
	Idempotent  bool   // only with acks=all (franz-go's rule)
	Compression string // none, gzip, snappy, lz4, zstd
	Producers   int
	Records     int64         // produce, e2e: the cap (records timed); consume: records to read (0: all the topic holds)
	WarmRecords int64         // produce, e2e: produced and acked before the clock starts, not counted
	Rate        float64       // records/s over all producers (0: as fast as possible)
	Linger      time.Duration // franz-go's ProducerLinger (its default is 10ms)
	Timeout     time.Duration // the run fails if not done by then (0: 5 minutes)
	Mode        string        // produce, consume, consume-to-end, e2e, groups, share, members
	// CommitEvery makes the producers transactional (produce): each
	// commits its transaction every CommitEvery and begins the next.
	CommitEvery time.Duration
	// ReadCommitted reads with isolation_level=read_committed (consume,
	// consume-to-end).
	ReadCommitted bool
	Pids          []int // broker processes to measure (optional)
	// TopicConfigs are the topic's configs at creation (w2-durable:
	// flush.messages=1).
	TopicConfigs map[string]*string
	IdleConns    int // produce: connections opened (ApiVersions done) and left idle before the producers connect
	Groups       int // groups: consumer groups reading the whole topic at once
	Members      int // share, members: the consumers of the one group (a share group, a classic group) reading the topic
	RecordLocks  int // share: the group's share.partition.max.record.locks (0: the broker's default)
	// ClientOpts are added to every client of the run: TLS and SASL for
	// a secured target (kbroker-sasl-ssl).
	ClientOpts []kgo.Opt `json:"-"`

	onTimed func() // runs as the clock starts (the profiler starts there)
}

// loadResult is what one run measured.
type loadResult struct {
	Mode       string
	Records    int64
	Bytes      int64 // payload (record value) bytes
	Warm       int64 // records of the warm-up (not in Records)
	Elapsed    time.Duration
	Errors     int64
	FirstError string

	AckP50, AckP99, AckP999 time.Duration
	E2EP50, E2EP99          time.Duration

	Usage procUsage // zero when no pids
	// Syncs are the brokers' storage syncs during the timed part (kbroker
	// targets only).
	Syncs syncCounts

	Idle   idleCost      // what the idle connections cost the brokers (IdleConns > 0)
	Groups int           // groups: how many read the topic (Records and Bytes are their sum)
	Setup  time.Duration // groups: from the clients' start to every group holding its assignment
}

func (r loadResult) RecPerSec() float64 { return float64(r.Records) / r.Elapsed.Seconds() }
func (r loadResult) MBPerSec() float64  { return float64(r.Bytes) / 1e6 / r.Elapsed.Seconds() }

// CPUPerMB is the brokers' CPU milliseconds per MB of payload.
func (r loadResult) CPUPerMB() float64 {
	if r.Bytes == 0 {
		return 0
	}
	return float64(r.Usage.CPU.Microseconds()) / 1000 / (float64(r.Bytes) / 1e6)
}

// CPUPerRecord is the brokers' CPU microseconds per record.
func (r loadResult) CPUPerRecord() float64 {
	if r.Records == 0 {
		return 0
	}
	return float64(r.Usage.CPU.Microseconds()) / float64(r.Records)
}

// FaultsPerMB is the brokers' minor page faults per MB of payload: pages
// of memory touched for the first time (fresh heap or page cache).
func (r loadResult) FaultsPerMB() float64 {
	if r.Bytes == 0 {
		return 0
	}
	return float64(r.Usage.Faults) / (float64(r.Bytes) / 1e6)
}

func (r loadResult) String() string {
	s := fmt.Sprintf("%s: %d records in %.2fs: %.0f records/s, %.2f MB/s", r.Mode, r.Records, r.Elapsed.Seconds(), r.RecPerSec(), r.MBPerSec())
	if r.AckP50 > 0 {
		s += fmt.Sprintf("; ack p50 %s p99 %s p99.9 %s", fmtDur(r.AckP50), fmtDur(r.AckP99), fmtDur(r.AckP999))
	}
	if r.E2EP50 > 0 {
		s += fmt.Sprintf("; e2e p50 %s p99 %s", fmtDur(r.E2EP50), fmtDur(r.E2EP99))
	}
	if len(r.Usage.PerPid) > 0 {
		s += fmt.Sprintf("; broker CPU %.2fs = %.1f ms/MB, %.0f page faults/MB, peak RSS %s (anon %s)", r.Usage.CPU.Seconds(), r.CPUPerMB(),
			r.FaultsPerMB(), fmtBytes(r.Usage.MaxHWM), fmtBytes(r.Usage.MaxAnon))
	}
	if r.Idle.Conns > 0 {
		s += fmt.Sprintf("; %d idle connections: %.1f KiB anon (%.1f KiB RSS) each, %d broker sockets more", r.Idle.Conns,
			r.Idle.AnonPerConn()/1024, r.Idle.RSSPerConn()/1024, r.Idle.Sockets)
	}
	if r.Groups > 0 {
		s += fmt.Sprintf("; %d groups joined in %s", r.Groups, fmtDur(r.Setup))
	}
	if sc := r.Syncs; sc.ShareFetches > 0 {
		s += fmt.Sprintf("; %.0f ShareFetch (%.0f records each, %s on the broker on average), %.0f ShareAcknowledge, %.0f state records written (%.0f records each)",
			sc.ShareFetches, perCount(r.Records, sc.ShareFetches), fmtDur(time.Duration(sc.ShareFetchSeconds/sc.ShareFetches*1e9)),
			sc.ShareAcks, sc.StateRecords, perCount(r.Records, sc.StateRecords))
	}
	if r.Errors > 0 {
		s += fmt.Sprintf("; %d errors (first: %s)", r.Errors, r.FirstError)
	}
	return s
}

func fmtDur(d time.Duration) string {
	switch {
	case d >= 10*time.Second:
		return fmt.Sprintf("%.0fs", d.Seconds())
	case d >= time.Second:
		return fmt.Sprintf("%.2fs", d.Seconds())
	case d >= 10*time.Millisecond:
		return fmt.Sprintf("%.0fms", float64(d)/1e6)
	default:
		return fmt.Sprintf("%.2fms", float64(d)/1e6)
	}
}

func fmtBytes(n int64) string { return fmt.Sprintf("%.0f MiB", float64(n)/(1<<20)) }

// runLoad runs one load. The topic is created when missing.
func runLoad(ctx context.Context, cfg loadConfig) (loadResult, error) {
	if cfg.Producers <= 0 {
		cfg.Producers = 1
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Minute
	}
	if cfg.Mode == "e2e" && cfg.RecordBytes < 8 {
		return loadResult{}, errors.New("e2e needs records of at least 8 bytes (the send time)")
	}
	if cfg.Mode == "groups" && cfg.Groups <= 0 {
		return loadResult{}, errors.New("a groups run needs Groups > 0")
	}
	if (cfg.Mode == "share" || cfg.Mode == "members") && cfg.Members <= 0 {
		return loadResult{}, errors.New("a share or members run needs Members > 0")
	}
	reads := cfg.Mode == "consume" || cfg.Mode == "consume-to-end" || cfg.Mode == "groups" || cfg.Mode == "share" || cfg.Mode == "members"
	if !reads && cfg.Records <= 0 {
		return loadResult{}, errors.New("a produce run needs a record cap (Records > 0)")
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	if !reads {
		if err := ensureTopic(ctx, cfg); err != nil {
			return loadResult{}, err
		}
	}
	var idle idleCost
	if cfg.IdleConns > 0 {
		conns, cost, err := openIdleConns(ctx, cfg.Brokers, cfg.IdleConns, cfg.Pids)
		if err != nil {
			return loadResult{}, err
		}
		defer closeRaw(conns)
		idle = cost
	}
	startClock, stopClock := cfg.onTimed, func() {}
	var watch *procWatch
	var usage procUsage
	if len(cfg.Pids) > 0 {
		watch = watchProcs(cfg.Pids)
		startClock = func() { // CPU counts from the clock's start, like the records
			watch.rebase()
			if cfg.onTimed != nil {
				cfg.onTimed()
			}
		}
		var once sync.Once
		stopClock = func() { once.Do(func() { usage = watch.finish() }) }
	}
	res, err := runMode(ctx, cfg, startClock, stopClock)
	stopClock()
	res.Usage, res.Idle = usage, idle
	res.Mode = cfg.Mode
	if err == nil && ctx.Err() != nil {
		err = fmt.Errorf("not done within %v: %w", cfg.Timeout, ctx.Err())
	}
	return res, err
}

func runMode(ctx context.Context, cfg loadConfig, startClock, stopClock func()) (loadResult, error) {
	switch cfg.Mode {
	case "produce":
		return produce(ctx, cfg, nil, startClock)
	case "consume":
		return consume(ctx, cfg, startClock)
	case "consume-to-end":
		return consumeToEnd(ctx, cfg, startClock)
	case "e2e":
		return endToEnd(ctx, cfg, startClock)
	case "groups":
		return consumeGroups(ctx, cfg, startClock, stopClock)
	case "share", "members":
		return consumeMembers(ctx, cfg, cfg.Mode == "share", startClock, stopClock)
	}
	return loadResult{}, fmt.Errorf("unknown mode %q (produce, consume, consume-to-end, e2e, groups, share, members)", cfg.Mode)
}

// The client settings of every target, stated in BENCHMARKS.md ("Rules
// for every target"). franz-go's defaults, written out so that no target
// gets different ones and a franz-go upgrade cannot change them unseen;
// only the in-flight limit of non-idempotent producers is raised from
// franz-go's 1 to the 5 its idempotent producer uses, so that acks=1 and
// acks=all differ in acks alone (and idempotence, which acks=1 cannot have).
const (
	clientBatchMaxBytes = 1_000_012 // Kafka's max.message.bytes default
	clientMaxBuffered   = 50_000    // records buffered before Produce blocks
	clientMaxInflight   = 5         // produce requests in flight per broker
)

func producerOpts(cfg loadConfig) ([]kgo.Opt, error) {
	opts := []kgo.Opt{kgo.SeedBrokers(cfg.Brokers...), kgo.DefaultProduceTopic(cfg.Topic), kgo.ProducerLinger(cfg.Linger),
		kgo.ProducerBatchMaxBytes(clientBatchMaxBytes), kgo.MaxBufferedRecords(clientMaxBuffered)}
	opts = append(opts, cfg.ClientOpts...)
	notIdem := []kgo.Opt{kgo.DisableIdempotentWrite(), kgo.MaxProduceRequestsInflightPerBroker(clientMaxInflight)}
	switch cfg.Acks {
	case "all", "-1", "":
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
		if !cfg.Idempotent {
			opts = append(opts, notIdem...)
		}
	case "1":
		opts = append(append(opts, kgo.RequiredAcks(kgo.LeaderAck())), notIdem...)
	case "0":
		opts = append(append(opts, kgo.RequiredAcks(kgo.NoAck())), notIdem...)
	default:
		return nil, fmt.Errorf("acks=%s: want 0, 1 or all", cfg.Acks)
	}
	if cfg.Idempotent && cfg.Acks != "all" && cfg.Acks != "-1" && cfg.Acks != "" {
		return nil, errors.New("idempotence needs acks=all")
	}
	codec, err := compressionCodec(cfg.Compression)
	if err != nil {
		return nil, err
	}
	return append(opts, kgo.ProducerBatchCompression(codec)), nil
}

func compressionCodec(name string) (kgo.CompressionCodec, error) {
	switch strings.ToLower(name) {
	case "", "none":
		return kgo.NoCompression(), nil
	case "gzip":
		return kgo.GzipCompression(), nil
	case "snappy":
		return kgo.SnappyCompression(), nil
	case "lz4":
		return kgo.Lz4Compression(), nil
	case "zstd":
		return kgo.ZstdCompression(), nil
	}
	return kgo.CompressionCodec{}, fmt.Errorf("compression %q: want none, gzip, snappy, lz4 or zstd", name)
}

// producerClients makes cfg.Producers clients, each connected and with
// metadata loaded.
func producerClients(ctx context.Context, cfg loadConfig) ([]*kgo.Client, error) {
	opts, err := producerOpts(cfg)
	if err != nil {
		return nil, err
	}
	var clients []*kgo.Client
	for i := range cfg.Producers {
		popts := opts
		if cfg.CommitEvery > 0 {
			id := fmt.Sprintf("kbench-%s-%d-%d", cfg.Topic, i, time.Now().UnixNano())
			popts = append(slices.Clone(opts), kgo.TransactionalID(id))
		}
		cl, err := kgo.NewClient(popts...)
		if err == nil {
			clients = append(clients, cl)
			err = cl.Ping(ctx)
		}
		if err != nil {
			closeClients(clients)
			return nil, err
		}
	}
	return clients, nil
}

func closeClients(cls []*kgo.Client) {
	for _, cl := range cls {
		cl.Close()
	}
}

// produce runs the warm-up (cfg.WarmRecords, all acked), then beforeTimed
// (e2e waits for its consumer there), then starts the clock and produces
// cfg.Records. Every record shares one value, except in e2e mode, where
// each value starts with its send time.
func produce(ctx context.Context, cfg loadConfig, beforeTimed func() error, startClock func()) (loadResult, error) {
	clients, err := producerClients(ctx, cfg)
	if err != nil {
		return loadResult{}, err
	}
	defer closeClients(clients)
	if cfg.WarmRecords > 0 {
		if err := producePhase(ctx, cfg, clients, cfg.WarmRecords).err(); err != nil {
			return loadResult{}, fmt.Errorf("warm-up: %w", err)
		}
	}
	if beforeTimed != nil {
		if err := beforeTimed(); err != nil {
			return loadResult{}, err
		}
	}
	if startClock != nil {
		startClock()
	}
	ph := producePhase(ctx, cfg, clients, cfg.Records)
	acked := ph.acked.Load()
	res := loadResult{
		Records: acked, Bytes: acked * int64(cfg.RecordBytes), Warm: cfg.WarmRecords, Elapsed: ph.elapsed,
		Errors: ph.errs.Load(), AckP50: ph.h.quantile(0.5), AckP99: ph.h.quantile(0.99), AckP999: ph.h.quantile(0.999),
	}
	if p := ph.firstErr.Load(); p != nil {
		res.FirstError = *p
	}
	return res, ph.flushErr
}

// phase is one producePhase: its counts, ack latencies and duration.
type phase struct {
	h        hist
	acked    atomic.Int64
	errs     atomic.Int64
	firstErr atomic.Pointer[string]
	elapsed  time.Duration
	flushErr error
}

func (ph *phase) done(sent time.Time, err error) {
	if err != nil {
		if ph.errs.Add(1) == 1 {
			s := err.Error()
			ph.firstErr.Store(&s)
		}
		return
	}
	ph.h.record(time.Since(sent))
	ph.acked.Add(1)
}

// err says why a phase did not ack every record, or nil.
func (ph *phase) err() error {
	if ph.flushErr != nil {
		return ph.flushErr
	}
	if p := ph.firstErr.Load(); p != nil {
		return fmt.Errorf("%d records failed, first: %s", ph.errs.Load(), *p)
	}
	return nil
}

// producePhase produces n records over the clients (paced at cfg.Rate when
// set) and waits for every ack; elapsed runs from the first Produce to the
// last ack.
func producePhase(ctx context.Context, cfg loadConfig, clients []*kgo.Client, n int64) *phase {
	ph := &phase{}
	shared := make([]byte, cfg.RecordBytes)
	for i := range shared {
		shared[i] = byte('a' + i%26)
	}
	stamp := cfg.Mode == "e2e"
	perRate := cfg.Rate / float64(len(clients))
	start := time.Now()
	var wg sync.WaitGroup
	for i, cl := range clients {
		quota := shareOf(n, len(clients), i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			txn := newTxnCommitter(ctx, cl, cfg.CommitEvery, ph)
			defer txn.end()
			for k := int64(0); k < quota && ctx.Err() == nil; k++ {
				txn.maybeCommit()
				pace(start, k, perRate)
				sent := time.Now()
				r := &kgo.Record{Value: shared}
				if stamp {
					r.Value = make([]byte, cfg.RecordBytes)
					binary.BigEndian.PutUint64(r.Value, uint64(sent.UnixNano()))
				}
				// The send time is kept here: kgo truncates r.Timestamp to
				// the millisecond.
				cl.Produce(ctx, r, func(_ *kgo.Record, err error) { ph.done(sent, err) })
			}
		}()
	}
	wg.Wait()
	for _, cl := range clients {
		if err := cl.Flush(ctx); err != nil && ph.flushErr == nil {
			ph.flushErr = err
		}
	}
	ph.elapsed = time.Since(start)
	return ph
}

// shareOf is producer i's part of n records over p producers.
func shareOf(n int64, p, i int) int64 {
	q := n / int64(p)
	if int64(i) < n%int64(p) {
		q++
	}
	return q
}

// pace sleeps until record k of a producer sending rate records/s from
// start is due (rate 0: no pacing). Falling behind sends at once, so the
// rate over the run holds.
func pace(start time.Time, k int64, rate float64) {
	if rate <= 0 {
		return
	}
	due := start.Add(time.Duration(float64(k) / rate * float64(time.Second)))
	if d := time.Until(due); d > 0 {
		time.Sleep(d)
	}
}

// consume reads the topic from the start until it has read cfg.Records, or
// every record there was when it started.
func consume(ctx context.Context, cfg loadConfig, startClock func()) (loadResult, error) {
	want := cfg.Records
	if want == 0 {
		var err error
		if want, err = topicRecords(ctx, cfg.Brokers, cfg.Topic); err != nil {
			return loadResult{}, err
		}
	}
	if want == 0 {
		return loadResult{}, fmt.Errorf("topic %s is empty", cfg.Topic)
	}
	cl, err := topicConsumer(ctx, cfg)
	if err != nil {
		return loadResult{}, err
	}
	defer cl.Close()
	if startClock != nil {
		startClock()
	}
	start := time.Now()
	var res loadResult
	for res.Records < want && ctx.Err() == nil {
		tally(cl.PollFetches(ctx), &res)
	}
	res.Elapsed = time.Since(start)
	if res.Records < want {
		return res, fmt.Errorf("consumed %d of %d records", res.Records, want)
	}
	return res, nil
}

// topicConsumer is a connected client reading cfg.Topic from the start,
// with opts.
func topicConsumer(ctx context.Context, cfg loadConfig, opts ...kgo.Opt) (*kgo.Client, error) {
	all := append([]kgo.Opt{kgo.SeedBrokers(cfg.Brokers...), kgo.ConsumeTopics(cfg.Topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}, opts...)
	cl, err := kgo.NewClient(append(all, cfg.ClientOpts...)...)
	if err != nil {
		return nil, err
	}
	if err := cl.Ping(ctx); err != nil {
		cl.Close()
		return nil, err
	}
	return cl, nil
}

// tally adds one poll's records, value bytes and errors (the context's
// own aside) to res.
func tally(fs kgo.Fetches, res *loadResult) {
	fs.EachError(func(_ string, _ int32, err error) {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			return
		}
		if res.Errors++; res.Errors == 1 {
			res.FirstError = err.Error()
		}
	})
	fs.EachRecord(func(r *kgo.Record) {
		res.Records++
		res.Bytes += int64(len(r.Value))
	})
}

// endToEnd consumes while it produces; each record's latency is the time
// from its send (in its first 8 bytes) to its consumption. The clock starts
// once the consumer has read the whole warm-up.
func endToEnd(ctx context.Context, cfg loadConfig, startClock func()) (loadResult, error) {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(cfg.Brokers...), kgo.ConsumeTopics(cfg.Topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(time.Second)}, cfg.ClientOpts...)...)
	if err != nil {
		return loadResult{}, err
	}
	defer cl.Close()
	if err := cl.Ping(ctx); err != nil {
		return loadResult{}, err
	}
	var (
		h          hist
		consumed   atomic.Int64
		timedStart atomic.Int64 // unix ns; records sent before it are the warm-up's
	)
	timedStart.Store(math.MaxInt64)
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	consumerDone := make(chan struct{})
	go func() {
		defer close(consumerDone)
		for cctx.Err() == nil {
			fs := cl.PollFetches(cctx)
			now := time.Now()
			fs.EachRecord(func(r *kgo.Record) {
				if len(r.Value) >= 8 {
					if sent := int64(binary.BigEndian.Uint64(r.Value)); sent >= timedStart.Load() {
						h.record(now.Sub(time.Unix(0, sent)))
					}
				}
				consumed.Add(1)
			})
		}
	}()
	caughtUp := func() error {
		if !waitCount(&consumed, cfg.WarmRecords, 30*time.Second) {
			return fmt.Errorf("the consumer read %d of the %d warm-up records in 30s", consumed.Load(), cfg.WarmRecords)
		}
		timedStart.Store(time.Now().UnixNano())
		return nil
	}
	res, err := produce(ctx, cfg, caughtUp, startClock)
	if err != nil {
		return res, err
	}
	// Every acked record must come back; PollFetches does not return on
	// empty fetches, so the consumer is cancelled once it has them all.
	all := waitCount(&consumed, res.Records+res.Warm, 30*time.Second)
	cancel()
	<-consumerDone
	if !all {
		res.Errors++
		res.FirstError = fmt.Sprintf("consumed only %d of %d acked records in 30s", consumed.Load(), res.Records+res.Warm)
	}
	res.E2EP50, res.E2EP99 = h.quantile(0.5), h.quantile(0.99)
	return res, nil
}

// waitCount waits until n reaches want, for at most d.
func waitCount(n *atomic.Int64, want int64, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for n.Load() < want {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(2 * time.Millisecond)
	}
	return true
}

// txnCommitter runs a transactional producer's transactions: one is open
// from the start, and every commitEvery the producer flushes, commits it
// and begins the next (kgo's EndAndBeginTransaction, safe: it waits for
// the transaction's records). A zero commitEvery does nothing.
type txnCommitter struct {
	ctx    context.Context
	cl     *kgo.Client
	every  time.Duration
	ph     *phase
	last   time.Time
	active bool
}

func newTxnCommitter(ctx context.Context, cl *kgo.Client, every time.Duration, ph *phase) *txnCommitter {
	t := &txnCommitter{ctx: ctx, cl: cl, every: every, ph: ph, last: time.Now()}
	if every > 0 {
		t.active = true
		t.fail(cl.BeginTransaction())
	}
	return t
}

func (t *txnCommitter) fail(err error) {
	if err != nil {
		t.ph.done(time.Time{}, fmt.Errorf("transaction: %w", err))
	}
}

func (t *txnCommitter) maybeCommit() {
	if !t.active || time.Since(t.last) < t.every {
		return
	}
	// onEnd is required (kgo calls it unconditionally): it keeps the error.
	t.fail(t.cl.EndAndBeginTransaction(t.ctx, kgo.EndBeginTxnSafe, kgo.TryCommit,
		func(_ context.Context, err error) error { return err }))
	t.last = time.Now()
}

// end commits the last transaction.
func (t *txnCommitter) end() {
	if !t.active {
		return
	}
	if err := t.cl.Flush(t.ctx); err != nil {
		t.fail(err)
		return
	}
	t.fail(t.cl.EndTransaction(t.ctx, kgo.TryCommit))
}

// consumeToEnd reads the topic from the start until every partition's
// position reaches the end offset it had when the run started, counting
// data records only: transaction markers take offsets that no consumer is
// given, so a count of offsets is no count of records. It reads control
// records to follow the offsets, at the isolation level cfg says.
func consumeToEnd(ctx context.Context, cfg loadConfig, startClock func()) (loadResult, error) {
	ends, err := partitionEnds(ctx, cfg.Brokers, cfg.Topic)
	if err != nil {
		return loadResult{}, err
	}
	iso := kgo.ReadUncommitted()
	if cfg.ReadCommitted {
		iso = kgo.ReadCommitted()
	}
	cl, err := topicConsumer(ctx, cfg, kgo.FetchIsolationLevel(iso), kgo.KeepControlRecords())
	if err != nil {
		return loadResult{}, err
	}
	defer cl.Close()
	if startClock != nil {
		startClock()
	}
	start := time.Now()
	var res loadResult
	next := map[int32]int64{}
	behind := func() bool {
		for p, end := range ends {
			if next[p] < end {
				return true
			}
		}
		return false
	}
	for behind() && ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) {
			next[r.Partition] = max(next[r.Partition], r.Offset+1)
			if !r.Attrs.IsControl() {
				res.Records++
				res.Bytes += int64(len(r.Value))
			}
		})
	}
	res.Elapsed = time.Since(start)
	if behind() {
		return res, fmt.Errorf("read up to %v of the end offsets %v", next, ends)
	}
	return res, nil
}

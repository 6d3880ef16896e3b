package main

// The load tool: produce, consume or end-to-end against any Kafka cluster,
// with franz-go. Its numbers are the client's view (records/s, MB/s of
// payload, produce-ack and end-to-end latency) plus, when the broker pids
// are known, the brokers' CPU time per MB of payload and their peak memory.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// loadConfig is one load run. MB is 10^6 bytes of record values.
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
	Duration    time.Duration // produce for this long (consume: give up after)
	Records     int64         // stop after this many records (0: no cap)
	Rate        float64       // records/s over all producers (0: as fast as possible)
	Linger      time.Duration // franz-go's ProducerLinger (its default is 10ms)
	Warmup      time.Duration // produce this long first, measuring nothing
	Mode        string        // produce, consume, e2e
	Pids        []int         // broker processes to measure (optional)
}

// loadResult is what one run measured.
type loadResult struct {
	Mode       string
	Records    int64
	Bytes      int64 // payload (record value) bytes
	Warm       int64 // records acked during the warm-up (not in Records)
	Elapsed    time.Duration
	Errors     int64
	FirstError string

	AckP50, AckP99, AckP999 time.Duration
	E2EP50, E2EP99          time.Duration

	Usage procUsage // zero when no pids
}

func (r loadResult) RecPerSec() float64 { return float64(r.Records) / r.Elapsed.Seconds() }
func (r loadResult) MBPerSec() float64  { return float64(r.Bytes) / 1e6 / r.Elapsed.Seconds() }

// CPUPerMB is the brokers' CPU milliseconds per MB of payload.
func (r loadResult) CPUPerMB() float64 {
	if r.Bytes == 0 {
		return 0
	}
	return float64(r.Usage.CPU.Milliseconds()) / (float64(r.Bytes) / 1e6)
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
		s += fmt.Sprintf("; broker CPU %.2fs = %.1f ms/MB, peak RSS %s (anon %s)", r.Usage.CPU.Seconds(), r.CPUPerMB(),
			fmtBytes(r.Usage.MaxHWM), fmtBytes(r.Usage.MaxAnon))
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
	if cfg.Mode == "e2e" && cfg.RecordBytes < 8 {
		return loadResult{}, errors.New("e2e needs records of at least 8 bytes (the send time)")
	}
	if cfg.Mode != "consume" {
		if err := ensureTopic(ctx, cfg); err != nil {
			return loadResult{}, err
		}
	}
	var watch *procWatch
	var rebase func() // CPU counts from the end of the warm-up, like the bytes
	if len(cfg.Pids) > 0 {
		watch = watchProcs(cfg.Pids)
		rebase = watch.rebase
	}
	var res loadResult
	var err error
	switch cfg.Mode {
	case "produce":
		res, err = produce(ctx, cfg, nil, rebase)
	case "consume":
		res, err = consume(ctx, cfg)
	case "e2e":
		res, err = endToEnd(ctx, cfg, rebase)
	default:
		err = fmt.Errorf("unknown mode %q (produce, consume, e2e)", cfg.Mode)
	}
	if watch != nil {
		res.Usage = watch.finish()
	}
	res.Mode = cfg.Mode
	return res, err
}

func adminClient(brokers []string) (*kadm.Client, *kgo.Client, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		return nil, nil, err
	}
	return kadm.NewClient(cl), cl, nil
}

// ensureTopic creates the topic (ignoring TOPIC_ALREADY_EXISTS) and waits
// until every partition has a leader.
func ensureTopic(ctx context.Context, cfg loadConfig) error {
	adm, cl, err := adminClient(cfg.Brokers)
	if err != nil {
		return err
	}
	defer cl.Close()
	resp, err := adm.CreateTopic(ctx, int32(max(cfg.Partitions, 1)), int16(max(cfg.RF, 1)), nil, cfg.Topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("creating topic %s: %w", cfg.Topic, err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		md, err := adm.Metadata(ctx, cfg.Topic)
		if err == nil {
			if t, ok := md.Topics[cfg.Topic]; ok && t.Err == nil && len(t.Partitions) >= max(cfg.Partitions, 1) && allLed(t) {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("topic %s has no leaders after 30s (last error %v)", cfg.Topic, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func allLed(t kadm.TopicDetail) bool {
	for _, p := range t.Partitions {
		if p.Err != nil || p.Leader < 0 || len(p.ISR) < len(p.Replicas) {
			return false
		}
	}
	return true
}

func producerOpts(cfg loadConfig) ([]kgo.Opt, error) {
	opts := []kgo.Opt{kgo.SeedBrokers(cfg.Brokers...), kgo.DefaultProduceTopic(cfg.Topic), kgo.ProducerLinger(cfg.Linger)}
	switch cfg.Acks {
	case "all", "-1", "":
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
		if !cfg.Idempotent {
			opts = append(opts, kgo.DisableIdempotentWrite())
		}
	case "1":
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())
	case "0":
		opts = append(opts, kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite())
	default:
		return nil, fmt.Errorf("acks=%s: want 0, 1 or all", cfg.Acks)
	}
	if cfg.Idempotent && cfg.Acks != "all" && cfg.Acks != "-1" && cfg.Acks != "" {
		return nil, errors.New("idempotence needs acks=all")
	}
	var codec kgo.CompressionCodec
	switch strings.ToLower(cfg.Compression) {
	case "", "none":
		codec = kgo.NoCompression()
	case "gzip":
		codec = kgo.GzipCompression()
	case "snappy":
		codec = kgo.SnappyCompression()
	case "lz4":
		codec = kgo.Lz4Compression()
	case "zstd":
		codec = kgo.ZstdCompression()
	default:
		return nil, fmt.Errorf("compression %q: want none, gzip, snappy, lz4 or zstd", cfg.Compression)
	}
	return append(opts, kgo.ProducerBatchCompression(codec)), nil
}

// produce runs cfg.Producers clients for the warm-up, then until the
// duration or record cap; only records sent after the warm-up count. In e2e
// mode each value starts with the send time and is allocated per record;
// otherwise every record shares one value. warmEnd, if not nil, is set to
// the end of the warm-up (unix nanoseconds) before the first record;
// onMeasure, if not nil, runs when the warm-up ends.
func produce(ctx context.Context, cfg loadConfig, warmEnd *atomic.Int64, onMeasure func()) (loadResult, error) {
	opts, err := producerOpts(cfg)
	if err != nil {
		return loadResult{}, err
	}
	stamp := cfg.Mode == "e2e"
	var (
		h        hist
		acked    atomic.Int64
		warm     atomic.Int64
		errs     atomic.Int64
		firstErr atomic.Pointer[string]
		sent     atomic.Int64
		measured time.Time // the end of the warm-up; set before any record
	)
	promise := func(r *kgo.Record, err error) {
		if err != nil {
			if errs.Add(1) == 1 {
				s := err.Error()
				firstErr.Store(&s)
			}
			return
		}
		if r.Timestamp.Before(measured) {
			warm.Add(1)
			return
		}
		h.record(time.Since(r.Timestamp))
		acked.Add(1)
	}
	clients := make([]*kgo.Client, cfg.Producers)
	for i := range clients {
		if clients[i], err = kgo.NewClient(opts...); err != nil {
			return loadResult{}, err
		}
		defer clients[i].Close()
		// Connect and load metadata before the clock starts.
		if err := clients[i].Ping(ctx); err != nil {
			return loadResult{}, err
		}
	}
	shared := make([]byte, cfg.RecordBytes)
	for i := range shared {
		shared[i] = byte('a' + i%26)
	}
	start := time.Now()
	measured = start.Add(cfg.Warmup)
	if warmEnd != nil {
		warmEnd.Store(measured.UnixNano())
	}
	deadline := measured.Add(cfg.Duration)
	if onMeasure != nil {
		t := time.AfterFunc(time.Until(measured), onMeasure)
		defer t.Stop()
	}
	var wg sync.WaitGroup
	for _, cl := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			perRate := cfg.Rate / float64(cfg.Producers)
			var n int64
			for {
				now := time.Now()
				if (cfg.Duration > 0 && now.After(deadline)) || ctx.Err() != nil {
					return
				}
				due := int64(1 << 62)
				if perRate > 0 {
					due = int64(now.Sub(start).Seconds()*perRate) + 1
					if n >= due {
						time.Sleep(time.Millisecond / 2)
						continue
					}
				}
				for ; n < due; n++ {
					if cfg.Records > 0 && sent.Load() >= cfg.Records {
						return
					}
					if n%256 == 255 && time.Now().After(deadline) && cfg.Duration > 0 {
						return
					}
					r := &kgo.Record{Value: shared, Timestamp: time.Now()}
					if stamp {
						r.Value = make([]byte, cfg.RecordBytes)
						binary.BigEndian.PutUint64(r.Value, uint64(r.Timestamp.UnixNano()))
					}
					if !r.Timestamp.Before(measured) {
						sent.Add(1)
					}
					cl.Produce(ctx, r, promise)
				}
			}
		}()
	}
	wg.Wait()
	for _, cl := range clients {
		if err := cl.Flush(ctx); err != nil {
			return loadResult{}, err
		}
	}
	res := loadResult{
		Records: acked.Load(), Bytes: acked.Load() * int64(cfg.RecordBytes), Elapsed: time.Since(measured), Warm: warm.Load(),
		Errors: errs.Load(), AckP50: h.quantile(0.5), AckP99: h.quantile(0.99), AckP999: h.quantile(0.999),
	}
	if p := firstErr.Load(); p != nil {
		res.FirstError = *p
	}
	return res, nil
}

// consume reads the topic from the start until it has read every record
// that was there when it started (or cfg.Records), or the duration passes.
func consume(ctx context.Context, cfg loadConfig) (loadResult, error) {
	want := cfg.Records
	if want == 0 {
		adm, cl, err := adminClient(cfg.Brokers)
		if err != nil {
			return loadResult{}, err
		}
		ends, err := adm.ListEndOffsets(ctx, cfg.Topic)
		cl.Close()
		if err != nil {
			return loadResult{}, err
		}
		ends.Each(func(o kadm.ListedOffset) { want += o.Offset })
	}
	if want == 0 {
		return loadResult{}, fmt.Errorf("topic %s is empty", cfg.Topic)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(cfg.Brokers...), kgo.ConsumeTopics(cfg.Topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return loadResult{}, err
	}
	defer cl.Close()
	if err := cl.Ping(ctx); err != nil {
		return loadResult{}, err
	}
	limit := cfg.Duration
	if limit <= 0 {
		limit = 5 * time.Minute
	}
	pctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	start := time.Now()
	var res loadResult
	for res.Records < want && pctx.Err() == nil {
		fs := cl.PollFetches(pctx)
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
	res.Elapsed = time.Since(start)
	if res.Records < want {
		return res, fmt.Errorf("consumed %d of %d records in %v", res.Records, want, limit)
	}
	return res, nil
}

// endToEnd consumes while it produces; each record's latency is the time
// from its send (in its first 8 bytes) to its consumption.
func endToEnd(ctx context.Context, cfg loadConfig, onMeasure func()) (loadResult, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(cfg.Brokers...), kgo.ConsumeTopics(cfg.Topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(time.Second))
	if err != nil {
		return loadResult{}, err
	}
	defer cl.Close()
	if err := cl.Ping(ctx); err != nil {
		return loadResult{}, err
	}
	var (
		h        hist
		consumed atomic.Int64
		warmEnd  atomic.Int64
	)
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
					if sent := int64(binary.BigEndian.Uint64(r.Value)); sent >= warmEnd.Load() {
						h.record(now.Sub(time.Unix(0, sent)))
					}
				}
				consumed.Add(1)
			})
		}
	}()
	res, err := produce(ctx, cfg, &warmEnd, onMeasure)
	if err != nil {
		return res, err
	}
	// Every acked record must come back; PollFetches does not return on
	// empty fetches, so the consumer is cancelled once it has them all.
	deadline := time.Now().Add(30 * time.Second)
	for consumed.Load() < res.Records+res.Warm && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	<-consumerDone
	if n := consumed.Load(); n < res.Records+res.Warm {
		res.Errors++
		res.FirstError = fmt.Sprintf("consumed only %d of %d acked records in 30s", n, res.Records+res.Warm)
	}
	res.E2EP50, res.E2EP99 = h.quantile(0.5), h.quantile(0.99)
	return res, nil
}

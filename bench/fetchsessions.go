package main

// The fetch-sessions measure of issue 17 (KIP-227): one consumer of 1,000
// partitions on one kbroker, with fetch sessions and without, alternated in
// the same run on the same filled topic. Each run reads the whole topic
// from the start in fetches of up to 1 MiB (the drain), then polls idle
// for a few seconds. Reported
// per mode, medians of the repetitions:
//
//   - the consumer's bytes on the wire per Fetch request and response
//     (franz-go's broker write/read hooks, frames as sent);
//   - the broker's CPU per MB of record values drained, and per second of
//     idle polling.
//
// A session saves listing every partition in every request and answering
// every partition in every response; the broker still reads every
// partition of the session on every fetch, which the idle CPU shows.

import (
	"context"
	"crypto/rand"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

const (
	fsTopic      = "fetch-sessions"
	fsPartitions = 1000
	fsRecordSize = 1024
	fsIdle       = 10 * time.Second
	// fsFetchMaxBytes makes a drain take a few hundred fetches of ~1 MiB,
	// as a consumer that keeps up makes, rather than a few of 50 MiB.
	fsFetchMaxBytes = 1 << 20
)

// fetchBytes counts a client's Fetch requests and their bytes on the wire.
type fetchBytes struct {
	requests, written, responses, read atomic.Int64
}

func (h *fetchBytes) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, n int, _, _ time.Duration, err error) {
	if key == 1 && err == nil {
		h.requests.Add(1)
		h.written.Add(int64(n))
	}
}

func (h *fetchBytes) OnBrokerRead(_ kgo.BrokerMetadata, key int16, n int, _, _ time.Duration, err error) {
	if key == 1 && err == nil {
		h.responses.Add(1)
		h.read.Add(int64(n))
	}
}

func (h *fetchBytes) snapshot() [4]int64 {
	return [4]int64{h.requests.Load(), h.written.Load(), h.responses.Load(), h.read.Load()}
}

// fsPhase is one phase of a run: its fetches, their bytes and the broker's CPU.
type fsPhase struct {
	Requests, Written, Responses, Read int64
	CPU                                time.Duration
	Wall                               time.Duration
}

func (p fsPhase) reqBytes() float64  { return float64(p.Written) / float64(max(p.Requests, 1)) }
func (p fsPhase) respBytes() float64 { return float64(p.Read) / float64(max(p.Responses, 1)) }

// fsRun is one consumer run.
type fsRun struct {
	Session bool
	Drain   fsPhase
	Idle    fsPhase
	MB      float64 // record values drained
}

func (s *suite) fetchSessions(ctx context.Context) error {
	c, done, err := s.kbrokerAlone(ctx, "fetch-sessions")
	if err != nil {
		return err
	}
	defer done()
	if err := ensureTopic(ctx, loadConfig{Brokers: c.addrs, Topic: fsTopic, Partitions: fsPartitions, RF: 1}); err != nil {
		return err
	}
	if err := fillSpread(ctx, c.addrs, s.cfg.FetchSessionRecords); err != nil {
		return fmt.Errorf("filling the topic: %w", err)
	}
	records, err := topicRecords(ctx, c.addrs, fsTopic)
	if err != nil {
		return fmt.Errorf("counting the records: %w", err)
	}
	var runs []fsRun
	for rep := range s.cfg.Reps + 1 { // the first pair warms up, unmeasured
		order := []bool{false, true}
		if rep%2 == 1 {
			slices.Reverse(order)
		}
		for _, session := range order {
			r, err := consumeAllOnce(ctx, c, session, records)
			if err != nil {
				return err
			}
			s.logf("fetch-sessions rep %d session=%v: drain %+v (%.0f MB), idle %+v", rep, session, r.Drain, r.MB, r.Idle)
			if rep > 0 {
				runs = append(runs, r)
			}
		}
	}
	s.reportFetchSessions(runs, records)
	return nil
}

// fillSpread produces records of 1 KiB values round robin over the partitions.
func fillSpread(ctx context.Context, addrs []string, records int64) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.DefaultProduceTopic(fsTopic),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		return err
	}
	defer cl.Close()
	// Random values: the bytes on the wire are the records', whatever the codec.
	values := make([]byte, 64*fsRecordSize)
	rand.Read(values)
	var firstErr atomic.Value
	for i := range records {
		off := (i % 63) * fsRecordSize
		cl.Produce(ctx, &kgo.Record{Value: values[off : off+fsRecordSize]}, func(_ *kgo.Record, err error) {
			if err != nil {
				firstErr.CompareAndSwap(nil, err)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		return err
	}
	if err, _ := firstErr.Load().(error); err != nil {
		return err
	}
	return nil
}

// consumeAllOnce reads the whole topic with a fresh consumer, then polls
// idle for fsIdle.
func consumeAllOnce(ctx context.Context, c *cluster, session bool, records int64) (fsRun, error) {
	hook := &fetchBytes{}
	opts := []kgo.Opt{kgo.SeedBrokers(c.addrs...), kgo.ConsumeTopics(fsTopic), kgo.WithHooks(hook),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100 * time.Millisecond),
		kgo.FetchMaxBytes(fsFetchMaxBytes)}
	if !session {
		opts = append(opts, kgo.DisableFetchSessions())
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return fsRun{}, err
	}
	defer cl.Close()
	run := fsRun{Session: session}
	phase := func(before [4]int64, w *procWatch, start time.Time) fsPhase {
		after := hook.snapshot()
		return fsPhase{Requests: after[0] - before[0], Written: after[1] - before[1], Responses: after[2] - before[2],
			Read: after[3] - before[3], CPU: w.finish().CPU, Wall: time.Since(start)}
	}
	before, w, start := hook.snapshot(), watchProcs(c.pids()), time.Now()
	var n, valueBytes int64
	seen := make(map[[2]int64]bool, records)
	dup := 0
	dctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	for n < records {
		fs := cl.PollFetches(dctx)
		if err := dctx.Err(); err != nil {
			w.finish()
			return fsRun{}, fmt.Errorf("drained %d of %d records: %w", n, records, err)
		}
		if err := fs.Err0(); err != nil {
			w.finish()
			return fsRun{}, fmt.Errorf("session=%v: draining: %w", session, err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			k := [2]int64{int64(r.Partition), r.Offset}
			if seen[k] {
				dup++
				return
			}
			seen[k] = true
			n++
			valueBytes += int64(len(r.Value))
		})
	}
	if dup > 0 {
		w.finish()
		return fsRun{}, fmt.Errorf("session=%v: %d records delivered twice", session, dup)
	}
	run.Drain = phase(before, w, start)
	run.MB = float64(valueBytes) / 1e6
	before, w, start = hook.snapshot(), watchProcs(c.pids()), time.Now()
	ictx, icancel := context.WithTimeout(ctx, fsIdle)
	defer icancel()
	for ictx.Err() == nil {
		cl.PollFetches(ictx)
	}
	run.Idle = phase(before, w, start)
	return run, nil
}

func (s *suite) reportFetchSessions(runs []fsRun, records int64) {
	fmt.Fprintf(s.out, "\n## Fetch sessions (KIP-227): one consumer of %d partitions\n\n", fsPartitions)
	fmt.Fprintf(s.out, "One kbroker, a topic of %d partitions (RF 1) holding %d records of %d B; a franz-go consumer "+
		"(FetchMaxWait 100 ms, FetchMaxBytes 1 MiB) drains it from the start, then polls idle for %s. Sessionless (DisableFetchSessions) "+
		"and session runs alternate; medians of %d runs each. Bytes are frames on the consumer's wire; CPU is the broker process's.\n\n",
		fsPartitions, records, fsRecordSize, fsIdle, len(runs)/2)
	fmt.Fprintf(s.out, "| mode | drain fetches | request B/fetch (drain) | response B/fetch (drain) | broker CPU ms/MB (drain) | request B/fetch (idle) | response B/fetch (idle) | broker CPU ms/s (idle) |\n|---|---|---|---|---|---|---|---|\n")
	for _, session := range []bool{false, true} {
		var reqs, dreq, dresp, cpuMB, ireq, iresp, icpu []float64
		for _, r := range runs {
			if r.Session != session {
				continue
			}
			reqs = append(reqs, float64(r.Drain.Requests))
			dreq, dresp = append(dreq, r.Drain.reqBytes()), append(dresp, r.Drain.respBytes())
			cpuMB = append(cpuMB, float64(r.Drain.CPU.Milliseconds())/max(r.MB, 1e-9))
			ireq, iresp = append(ireq, r.Idle.reqBytes()), append(iresp, r.Idle.respBytes())
			icpu = append(icpu, float64(r.Idle.CPU.Milliseconds())/max(r.Idle.Wall.Seconds(), 1e-9))
		}
		name := "sessionless"
		if session {
			name = "session"
		}
		m := func(vs []float64) float64 { v, _ := median(vs); return v }
		fmt.Fprintf(s.out, "| %s | %.0f | %.0f | %.0f | %.2f | %.0f | %.0f | %.1f |\n", name, m(reqs), m(dreq),
			m(dresp), m(cpuMB), m(ireq), m(iresp), m(icpu))
	}
}

package main

// Issue 8's restart target: a broker holding many segments (10,000 by
// default) must serve again within 5 s of being started. The suite fills one
// node with small segments, then times a clean restart (SIGTERM) and a crash
// restart (SIGKILL: recovery from the last checkpoint).

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

const restartPartitions = 100

func (s *suite) restart(ctx context.Context) error {
	c, done, err := s.kbrokerAlone(ctx, "restart")
	if err != nil {
		return err
	}
	defer done()
	adm, cl, err := adminClient(c.addrs)
	if err != nil {
		return err
	}
	segBytes := "16384"
	_, err = adm.CreateTopic(ctx, restartPartitions, 1, map[string]*string{"segment.bytes": &segBytes}, "restart")
	cl.Close()
	if err != nil {
		return err
	}
	fillStart := time.Now()
	n, err := fillSegments(ctx, c, s.cfg.Segments)
	if err != nil {
		return err
	}
	fmt.Fprintf(s.out, "\n## Restart with %d segments\n\n", n)
	fmt.Fprintf(s.out, "%d partitions, segment.bytes=16384, 1 KiB records; filled in %.1fs.\n\n",
		restartPartitions, time.Since(fillStart).Seconds())
	fmt.Fprintf(s.out, "| restart | stop took | start to Metadata served | start to a produce acked on every partition | target <= 5 s |\n|---|---|---|---|---|\n")
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		t0 := time.Now()
		c.stopNode(0, sig)
		stopped := time.Since(t0)
		t1 := time.Now()
		if err := c.restartNode(0); err != nil {
			return err
		}
		if err := waitServing(ctx, c, 120*time.Second); err != nil {
			return err
		}
		serving := time.Since(t1)
		if err := produceEveryPartition(ctx, c.addrs); err != nil {
			return err
		}
		acked := time.Since(t1)
		verdict := "MISSED"
		if acked <= 5*time.Second {
			verdict = "met"
		}
		name := map[syscall.Signal]string{syscall.SIGTERM: "clean (SIGTERM)", syscall.SIGKILL: "crash (SIGKILL)"}[sig]
		fmt.Fprintf(s.out, "| %s | %s | %s | %s | %s |\n", name, fmtDur(stopped), fmtDur(serving), fmtDur(acked), verdict)
	}
	return nil
}

// fillSegments produces 1 KiB records in batches of at most 16,000 bytes
// until the node holds want segment files, and returns how many it holds.
func fillSegments(ctx context.Context, c *cluster, want int) (int, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addrs...), kgo.DefaultProduceTopic("restart"),
		kgo.ProducerBatchMaxBytes(16000), kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.MaxProduceRequestsInflightPerBroker(5))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	value := make([]byte, 1024)
	deadline := time.Now().Add(10 * time.Minute)
	for {
		n := countSegments(c.dir)
		if n >= want {
			return n, nil
		}
		if time.Now().After(deadline) {
			return n, fmt.Errorf("only %d of %d segments after 10 minutes", n, want)
		}
		batch := max((want-n)*8, 1000)
		var mu sync.Mutex
		var firstErr error
		for range batch {
			cl.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
				mu.Lock()
				defer mu.Unlock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
			})
		}
		if err := cl.Flush(ctx); err != nil {
			return 0, err
		}
		if firstErr != nil {
			return 0, firstErr
		}
	}
}

func countSegments(dir string) int {
	m, _ := filepath.Glob(filepath.Join(dir, "node-1", "restart-*", "*.log"))
	return len(m)
}

func produceEveryPartition(ctx context.Context, brokers []string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic("restart"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		return err
	}
	defer cl.Close()
	for p := range int32(restartPartitions) {
		if err := cl.ProduceSync(ctx, &kgo.Record{Partition: p, Value: []byte("after restart")}).FirstErr(); err != nil {
			return fmt.Errorf("partition %d: %w", p, err)
		}
	}
	return nil
}

// kbrokerAlone starts one kbroker in a fresh directory runs/name of the
// results for a kbroker-only measure; done stops it and removes the
// directory.
func (s *suite) kbrokerAlone(ctx context.Context, name string) (c *cluster, done func(), err error) {
	dir := filepath.Join(s.cfg.Out, "runs", name)
	os.RemoveAll(dir)
	c, err = startCluster(ctx, startOpts{kind: kindKbroker, brokers: 1, dir: dir, kbroker: s.cfg.Kbroker})
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	return c, func() { c.stop(); os.RemoveAll(dir) }, nil
}

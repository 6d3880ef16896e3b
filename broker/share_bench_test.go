package broker

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kbroker/kbroker/config"
)

// BenchmarkShareConsume is the share path of one partition on one broker:
// four franz-go share consumers of one group read b.N records produced
// before they joined, each record acquired, handed out and accepted (the
// acceptance written to the share coordinator, which replicates nothing
// here), share.partition.max.record.locks=10000 as make bench's qs-share,
// which measures the same on three brokers.
func BenchmarkShareConsume(b *testing.B) {
	br := startTestBroker(b, func(c *config.Config) {
		c.OffsetsTopicNumPartitions = 1
		c.ShareCoordinatorStateTopicPartitions = 1
		c.GroupShareMinHeartbeatInterval = 100 * time.Millisecond
		c.GroupShareHeartbeatInterval = 200 * time.Millisecond // the members join in a fraction of a second
	})
	createTopic(b, br, "sq")
	addr := br.cfg.ClientListener().Address()
	prod, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("sq"), kgo.ProducerLinger(10*time.Millisecond))
	if err != nil {
		b.Fatal(err)
	}
	defer prod.Close()
	value := make([]byte, 1024)
	for range b.N {
		prod.Produce(context.Background(), &kgo.Record{Value: value}, nil)
	}
	if err := prod.Flush(context.Background()); err != nil {
		b.Fatal(err)
	}
	group := fmt.Sprintf("bench-%d", b.N)
	setGroupConfigs(b, prod, group, "share.auto.offset.reset", "earliest", "share.partition.max.record.locks", "10000")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// The clock runs from the first record handed out to the last: the
	// group's join (heartbeats, the share state's initialization) is not
	// the share path's throughput.
	var total atomic.Int64
	var first atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	for range 4 {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics("sq"), kgo.ShareGroup(group))
		if err != nil {
			b.Fatal(err)
		}
		defer cl.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for total.Load() < int64(b.N) && ctx.Err() == nil {
				n := int64(len(cl.PollFetches(ctx).Records()))
				if n > 0 {
					first.CompareAndSwap(0, time.Now().UnixNano())
				}
				total.Add(n)
			}
			cancel()
		}()
	}
	wg.Wait()
	elapsed := time.Since(time.Unix(0, first.Load()))
	b.StopTimer()
	if total.Load() < int64(b.N) {
		b.Fatalf("read %d of %d", total.Load(), b.N)
	}
	b.ReportMetric(float64(elapsed.Nanoseconds())/float64(b.N), "ns/op")
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "records/s")
}

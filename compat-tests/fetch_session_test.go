package compat

import (
	"context"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Fetch sessions (KIP-227), issue 17.

// fetchRequestBytes is the broker's Fetch request-size histogram: total
// bytes and requests.
func fetchRequestBytes(t *testing.T, n *node) (sum, count float64) {
	m := scrape(t, n)
	return m[`kbroker_request_size_bytes_sum{api="Fetch"}`], m[`kbroker_request_size_bytes_count{api="Fetch"}`]
}

// spreadRecords produces one record with value prefix-i to partition
// i % partitions for i < n, and returns the values.
func spreadRecords(t *testing.T, cl *kgo.Client, topic string, partitions, n int, prefix string) []string {
	t.Helper()
	ctx := ctxTimeout(t, 2*time.Minute)
	var rs []*kgo.Record
	var vals []string
	for i := range n {
		v := fmt.Sprintf("%s-%d", prefix, i)
		vals = append(vals, v)
		rs = append(rs, &kgo.Record{Topic: topic, Partition: int32(i % partitions), Value: []byte(v)})
	}
	must(t, cl.ProduceSync(ctx, rs...).FirstErr(), "producing %d records", n)
	return vals
}

// sessionConsumer reads a topic from the start and checks that every value
// arrives exactly once.
type sessionConsumer struct {
	t    *testing.T
	cl   *kgo.Client
	seen map[string]int
}

func newSessionConsumer(t *testing.T, seeds []string, topic string, opts ...kgo.Opt) *sessionConsumer {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100 * time.Millisecond)}, opts...)...)
	must(t, err, "consumer")
	t.Cleanup(cl.Close)
	return &sessionConsumer{t: t, cl: cl, seen: map[string]int{}}
}

// await polls until every value in want was read, failing on a duplicate,
// a non-retriable error or the deadline.
func (c *sessionConsumer) await(want []string, d time.Duration) {
	c.t.Helper()
	ctx := ctxTimeout(c.t, d)
	missing := func() int {
		n := 0
		for _, v := range want {
			if c.seen[v] == 0 {
				n++
			}
		}
		return n
	}
	for missing() > 0 {
		fs := c.cl.PollFetches(ctx)
		if ctx.Err() != nil {
			c.t.Fatalf("%d of %d values missing at the deadline", missing(), len(want))
		}
		fs.EachError(func(topic string, p int32, err error) {
			if !kerr.IsRetriable(err) && !errorsIs(err, context.DeadlineExceeded) {
				c.t.Fatalf("fetch %s-%d: %v", topic, p, err)
			}
		})
		fs.EachRecord(func(r *kgo.Record) {
			c.seen[string(r.Value)]++
			if c.seen[string(r.Value)] > 1 {
				c.t.Fatalf("value %q read twice", r.Value)
			}
		})
	}
}

// A franz-go consumer of 1,000 partitions: after the first fetch, the
// requests of a session consumer are more than 10x smaller than those of a
// sessionless one (the broker's request-size metric), and every record
// arrives exactly once.
func TestFetchSessionCutsRequestBytes(t *testing.T) {
	t.Parallel()
	needOwnCluster(t)
	const partitions = 1000
	c := startCluster(t, clusterOpts{brokers: 1, metrics: true})
	n := c.nodes[0]
	adm := newAdmin(t, c.seeds())
	topic := newTopic(t, adm, partitions, 1, nil)
	c.waitTopicEverywhere(topic, partitions, 1)
	producer := newClient(t, c.seeds(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	all := spreadRecords(t, producer, topic, partitions, 2*partitions, "initial")

	// measure consumes everything produced so far, then a trickle of
	// records and idle polls, and returns the mean Fetch request size of
	// the trickle phase (every fetch after the first ones).
	measure := func(name string, wantSessions float64, opts ...kgo.Opt) float64 {
		cons := newSessionConsumer(t, c.seeds(), topic, opts...)
		cons.await(all, 2*time.Minute)
		sum0, count0 := fetchRequestBytes(t, n)
		for i := range 20 {
			vals := spreadRecords(t, producer, topic, partitions, 1, fmt.Sprintf("%s-trickle-%d", name, i))
			all = append(all, vals...)
			cons.await(all, time.Minute)
		}
		waitFor(t, 30*time.Second, "idle fetches", func() error {
			if _, count := fetchRequestBytes(t, n); count < count0+40 {
				return fmt.Errorf("%v fetches so far", count-count0)
			}
			return nil
		})
		sum1, count1 := fetchRequestBytes(t, n)
		if got := scrape(t, n)["kbroker_fetch_sessions"]; got != wantSessions {
			t.Errorf("%s: kbroker_fetch_sessions = %v, want %v", name, got, wantSessions)
		}
		cons.cl.Close() // franz-go closes its session (epoch -1) on the way out
		// Let the closed consumer's last long poll end before the next phase.
		var last float64
		waitFor(t, 10*time.Second, "no more fetches", func() error {
			_, count := fetchRequestBytes(t, n)
			if count != last {
				last = count
				return fmt.Errorf("fetch count still moving: %v", count)
			}
			return nil
		})
		perFetch := (sum1 - sum0) / (count1 - count0)
		t.Logf("%s: %.0f fetches after the first ones, %.0f request bytes per fetch", name, count1-count0, perFetch)
		return perFetch
	}
	sessionless := measure("sessionless", 0, kgo.DisableFetchSessions())
	session := measure("session", 1)
	if sessionless < 10*session {
		t.Fatalf("a session fetch is %.0f bytes, a sessionless one %.0f: less than a 10x drop", session, sessionless)
	}
	t.Logf("request bytes per fetch: %.1fx fewer with a session", sessionless/session)
}

// A broker restart loses its sessions: the client's next incremental fetch
// gets FETCH_SESSION_ID_NOT_FOUND (or its connection drops), it starts a
// new session and reads on, every record exactly once.
func TestFetchSessionSurvivesBrokerRestart(t *testing.T) {
	needOwnCluster(t)
	c := startCluster(t, clusterOpts{brokers: 1, metrics: true})
	n := c.nodes[0]
	adm := newAdmin(t, c.seeds())
	topic := newTopic(t, adm, 20, 1, nil)
	c.waitTopicEverywhere(topic, 20, 1)
	producer := newClient(t, c.seeds(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	all := spreadRecords(t, producer, topic, 20, 100, "before")
	cons := newSessionConsumer(t, c.seeds(), topic)
	cons.await(all, time.Minute)
	waitFor(t, 10*time.Second, "a session on the broker", func() error {
		if got := scrape(t, n)["kbroker_fetch_sessions"]; got != 1 {
			return fmt.Errorf("%v sessions", got)
		}
		return nil
	})
	n.stop()
	c.restart(n)
	c.waitServing(60 * time.Second)
	all = append(all, spreadRecords(t, producer, topic, 20, 100, "after")...)
	cons.await(all, time.Minute)
	waitFor(t, 10*time.Second, "a new session after the restart", func() error {
		if got := scrape(t, n)["kbroker_fetch_sessions"]; got != 1 {
			return fmt.Errorf("%v sessions", got)
		}
		return nil
	})
}

// createAssigned creates a topic whose partition 0 has the given replicas
// (the first leads).
func createAssigned(t *testing.T, cl *kgo.Client, replicas ...int32) string {
	t.Helper()
	name := uniqueTopic(t.Name())
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 30000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, -1, -1
	ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	ra.Partition, ra.Replicas = 0, replicas
	rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctxTimeout(t, 30*time.Second), cl)
	must(t, err, "creating %s", name)
	if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil {
		t.Fatalf("creating %s: %v", name, err)
	}
	return name
}

// With one session slot, a follower's new session evicts a consumer's
// (followers' sessions are privileged, Kafka's FetchSessionCache): the
// consumer's next incremental fetch gets FETCH_SESSION_ID_NOT_FOUND, it
// falls back to full fetches (the cache has no room for it) and reads on,
// every record exactly once.
func TestFetchSessionEvictionSurvived(t *testing.T) {
	needOwnCluster(t)
	c := startCluster(t, clusterOpts{brokers: 2, metrics: true,
		flags: replicationFlags("--max.incremental.fetch.session.cache.slots=1")})
	leader := c.nodes[0]
	admin := newClient(t, c.seeds())
	consumed := createAssigned(t, admin, 1)
	c.waitTopicEverywhere(consumed, 1, 1)
	producer := newClient(t, c.seeds(), kgo.DefaultProduceTopic(consumed))
	ctx := ctxTimeout(t, time.Minute)
	var all []string
	produce := func(prefix string) {
		for i := range 50 {
			v := fmt.Sprintf("%s-%d", prefix, i)
			all = append(all, v)
			must(t, producer.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(), "produce")
		}
	}
	produce("before")
	cons := newSessionConsumer(t, c.seeds(), consumed)
	cons.await(all, time.Minute)
	waitFor(t, 10*time.Second, "the consumer's session on broker 1", func() error {
		if got := scrape(t, leader)["kbroker_fetch_sessions"]; got != 1 {
			return fmt.Errorf("%v sessions", got)
		}
		return nil
	})
	// Broker 2 starts following broker 1: its fetcher's session takes the slot.
	replicated := createAssigned(t, admin, 1, 2)
	waitFor(t, 30*time.Second, "an eviction on broker 1", func() error {
		if got := scrape(t, leader)["kbroker_fetch_session_evictions_total"]; got < 1 {
			return fmt.Errorf("%v evictions", got)
		}
		return nil
	})
	produce("after")
	cons.await(all, time.Minute)
	// The follower's session works: an acks=all produce to the replicated
	// topic completes.
	must(t, producer.ProduceSync(ctx, &kgo.Record{Topic: replicated, Value: []byte("x")}).FirstErr(), "acks=all produce to %s", replicated)
}

// segmentio/kafka-go's Client.Fetch sends session id -1 and epoch -1: a
// sessionless full fetch (it was answered FETCH_SESSION_ID_NOT_FOUND).
func TestKafkaGoClientFetch(t *testing.T) {
	tg := singleNode(t)
	adm := newAdmin(t, tg.seeds)
	topic := newTopic(t, adm, 1, 1, nil)
	for _, codec := range []kgo.CompressionCodec{kgo.NoCompression(), kgo.SnappyCompression()} {
		cl := newClient(t, tg.seeds, kgo.DefaultProduceTopic(topic), kgo.ProducerBatchCompression(codec))
		var rs []*kgo.Record
		for i := range 5 {
			rs = append(rs, &kgo.Record{Value: []byte(fmt.Sprintf("v-%d", i))})
		}
		must(t, cl.ProduceSync(ctxTimeout(t, 30*time.Second), rs...).FirstErr(), "produce")
	}
	client := &kafka.Client{Addr: kafka.TCP(tg.seeds[0]), Timeout: 10 * time.Second}
	resp, err := client.Fetch(ctxTimeout(t, 30*time.Second), &kafka.FetchRequest{
		Topic: topic, Partition: 0, Offset: 0, MinBytes: 1, MaxBytes: 1 << 20, MaxWait: 100 * time.Millisecond,
	})
	must(t, err, "kafka-go Client.Fetch")
	if resp.Error != nil {
		t.Fatalf("kafka-go Client.Fetch: %v", resp.Error)
	}
	var got []string
	for {
		r, err := resp.Records.ReadRecord()
		if err == io.EOF {
			break
		}
		must(t, err, "reading record %d", len(got))
		v, err := io.ReadAll(r.Value)
		must(t, err, "reading value")
		got = append(got, string(v))
	}
	if len(got) != 10 || got[0] != "v-0" || got[9] != "v-4" || resp.HighWatermark != 10 {
		t.Fatalf("kafka-go read %q with HW %d, want the 10 records (5 plain, 5 snappy)", got, resp.HighWatermark)
	}
}

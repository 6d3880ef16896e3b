package demo

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// queueJobs is how many records the queue scenario produces.
const queueJobs = 60

// queueGroup is the share group of the queue scenario.
const queueGroup = "demo-queue-workers"

// playQueue: a share group (KIP-932) is a queue on a Kafka topic. Three
// share consumers read one partition together, each handed its own
// records, locked to it until it acknowledges them. One is killed in the
// middle of a batch: the broker takes back the records it held but never
// acknowledged and hands them to the others (delivery count 2). Every job
// is accepted exactly once, and none is handed out after it was accepted.
func playQueue(ctx context.Context, r *run) error {
	adm, err := r.client()
	if err != nil {
		return err
	}
	defer adm.Close()
	if err := setShareGroupConfigs(ctx, adm, queueGroup, "share.auto.offset.reset", "earliest", "share.record.lock.duration.ms", "3000"); err != nil {
		return err
	}
	r.narr.Say("share group %s: share.auto.offset.reset=earliest, share.record.lock.duration.ms=3000 (a record handed to a consumer is locked to it for 3 s at most)", queueGroup)
	prod, err := r.producer(kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		return err
	}
	defer prod.Close()
	jobs, err := produceAll(ctx, prod, r.topic, values("job", queueJobs))
	if err != nil {
		return fmt.Errorf("producing the jobs: %w", err)
	}
	r.narr.Say("producer (acks=all) wrote %d jobs %s at offsets %s", len(jobs), valueRange(valuesOf(jobs)), offsetRange(jobs))

	q := &queue{r: r, deliveries: map[int64][]queueDelivery{}, accepted: map[int64]string{}, values: map[int64]string{}}
	var members []*shareMember
	for _, name := range []string{"c1", "c2", "c3"} {
		m, err := r.newShareMember(ctx, name, queueGroup, r.topic)
		if err != nil {
			return err
		}
		defer m.cl.Close()
		if err := m.join(ctx); err != nil {
			return err
		}
		members = append(members, m)
	}
	r.narr.Say("c1, c2 and c3 joined %s; each is assigned partition 0: unlike a consumer group, a share group lets several consumers read one partition", queueGroup)

	runCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for _, m := range []*shareMember{members[0], members[2]} {
		wg.Add(1)
		go func() { defer wg.Done(); q.work(runCtx, m) }()
	}
	// c2 starts once the others are well under way, and dies in its first batch.
	if err := poll(runCtx, 30*time.Second, "ten jobs accepted", func() error {
		if n := q.acceptedCount(); n < 10 {
			return fmt.Errorf("%d accepted", n)
		}
		return nil
	}); err != nil {
		return err
	}
	held := q.dieMidBatch(runCtx, members[1])
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return err
	}
	return q.account(ctx, adm, jobs, held)
}

// queue is the ledger of the queue scenario: what each consumer was handed
// and what it accepted.
type queue struct {
	r *run

	mu         sync.Mutex // guards the following
	deliveries map[int64][]queueDelivery
	accepted   map[int64]string // offset -> the consumer that accepted it
	values     map[int64]string
	twice      []string // accepted twice, or handed out after being accepted
}

type queueDelivery struct {
	member string
	count  int16
}

func (q *queue) acceptedCount() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.accepted)
}

// handed records a fetch's records.
func (q *queue) handed(m *shareMember, recs []delivered) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, d := range recs {
		if by, ok := q.accepted[d.offset]; ok {
			q.twice = append(q.twice, fmt.Sprintf("%s handed to %s after %s accepted it", d.value, m.name, by))
		}
		q.deliveries[d.offset] = append(q.deliveries[d.offset], queueDelivery{m.name, d.count})
		q.values[d.offset] = d.value
	}
	q.r.narr.Say("%s was handed %s", m.name, describeDelivered(recs))
}

// work is a consumer: fetch up to 5 jobs, process them (40 ms each),
// accept them, until every job is accepted.
func (q *queue) work(ctx context.Context, m *shareMember) {
	for ctx.Err() == nil && q.acceptedCount() < queueJobs {
		recs, err := m.fetch(ctx, q.r.cluster, 5)
		if err != nil {
			q.r.narr.Say("%s: fetch failed (%v); trying again", m.name, err)
			sleepCtx(ctx, 200*time.Millisecond)
			continue
		}
		if len(recs) == 0 {
			continue
		}
		q.handed(m, recs)
		sleepCtx(ctx, time.Duration(len(recs))*40*time.Millisecond)
		if err := m.accept(ctx, recs); err != nil {
			q.r.narr.Say("%s: accepting %s failed: %v", m.name, describeDelivered(recs), err)
			continue
		}
		q.mu.Lock()
		for _, d := range recs {
			if by, ok := q.accepted[d.offset]; ok {
				q.twice = append(q.twice, fmt.Sprintf("%s accepted by %s and by %s", d.value, by, m.name))
			}
			q.accepted[d.offset] = m.name
		}
		q.mu.Unlock()
		q.r.narr.Say("%s accepted %s", m.name, valueRange(deliveredValues(recs)))
	}
}

// dieMidBatch has m fetch a batch, process part of it and die: its
// connections drop without a word, as a killed process's do. It returns
// the records it held.
func (q *queue) dieMidBatch(ctx context.Context, m *shareMember) []delivered {
	var recs []delivered
	for len(recs) == 0 && ctx.Err() == nil {
		recs, _ = m.fetch(ctx, q.r.cluster, 5)
	}
	q.handed(m, recs)
	done := min(2, len(recs))
	sleepCtx(ctx, time.Duration(done)*40*time.Millisecond)
	m.cl.Close()
	q.r.narr.Say("%s processed %s and is KILLED mid-batch: no acknowledgement; the broker sees its connection close and takes back all %d records it held (a consumer that hangs instead loses them when its 3 s locks expire)",
		m.name, valueRange(deliveredValues(recs[:done])), len(recs))
	return recs
}

// account checks and narrates the outcome.
func (q *queue) account(ctx context.Context, adm *kgo.Client, jobs []acked, held []delivered) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := q.r.out
	out.Acked = len(q.accepted)
	for _, j := range jobs {
		if _, ok := q.accepted[j.offset]; !ok {
			out.Lost++
			out.LostValues = append(out.LostValues, j.value)
		}
	}
	out.Duplicates = len(q.twice)
	for _, ds := range q.deliveries {
		if len(ds) > 1 {
			out.Redelivered++
		}
	}
	for _, d := range held {
		ds := q.deliveries[d.offset]
		last := ds[len(ds)-1]
		q.r.narr.Say("%s: handed to %s (delivery 1), redelivered to %s (delivery %d), accepted by %s",
			d.value, ds[0].member, last.member, last.count, q.accepted[d.offset])
	}
	for _, s := range q.twice {
		q.r.narr.Say("DUPLICATE: %s", s)
	}
	start, lag, err := shareGroupStart(ctx, adm, queueGroup, q.r.topic)
	if err != nil {
		return err
	}
	q.r.narr.Say("%d of %d jobs accepted, %d lost, %d accepted twice or after their acceptance; %d redelivered (the ones the killed consumer held); the group's share-partition start offset is %d, lag %d",
		out.Acked, len(jobs), out.Lost, out.Duplicates, out.Redelivered, start, lag)
	q.r.narr.Say("lesson: a share group hands each record to one consumer at a time and takes it back when that consumer " +
		"dies before acknowledging it: at least once per record, never again after it was acknowledged.")
	return nil
}

func describeDelivered(recs []delivered) string {
	if len(recs) == 0 {
		return "nothing"
	}
	counts := map[int16]bool{}
	for _, d := range recs {
		counts[d.count] = true
	}
	var cs []string
	for _, c := range slices.Sorted(maps.Keys(counts)) {
		cs = append(cs, fmt.Sprint(c))
	}
	return fmt.Sprintf("%s (offsets %d-%d, delivery %s)", valueRange(deliveredValues(recs)), recs[0].offset, recs[len(recs)-1].offset, strings.Join(cs, "/"))
}

func deliveredValues(recs []delivered) []string {
	out := make([]string, len(recs))
	for i, d := range recs {
		out[i] = d.value
	}
	return out
}

func valuesOf(acks []acked) []string {
	out := make([]string, len(acks))
	for i, a := range acks {
		out[i] = a.value
	}
	return out
}

// setShareGroupConfigs sets a share group's GROUP configs (pairs).
func setShareGroupConfigs(ctx context.Context, cl *kgo.Client, group string, kvs ...string) error {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.IncrementalAlterConfigsRequestResource{ResourceType: kmsg.ConfigResourceTypeGroupConfig, ResourceName: group}
	for i := 0; i+1 < len(kvs); i += 2 {
		res.Configs = append(res.Configs, kmsg.IncrementalAlterConfigsRequestResourceConfig{Name: kvs[i], Value: kmsg.StringPtr(kvs[i+1])})
	}
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	return kerr.ErrorForCode(resp.Resources[0].ErrorCode)
}

// shareGroupStart is the share group's start offset and lag of partition 0.
func shareGroupStart(ctx context.Context, cl *kgo.Client, group, topic string) (start, lag int64, err error) {
	err = poll(ctx, 15*time.Second, "the share group's offsets", func() error {
		req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
		req.Groups = []kmsg.DescribeShareGroupOffsetsRequestGroup{{GroupID: group,
			Topics: []kmsg.DescribeShareGroupOffsetsRequestGroupTopic{{Topic: topic, Partitions: []int32{0}}}}}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return err
		}
		g := resp.Groups[0]
		if err := kerr.ErrorForCode(g.ErrorCode); err != nil {
			return err
		}
		if len(g.Topics) != 1 || len(g.Topics[0].Partitions) != 1 {
			return fmt.Errorf("partition 0 not described")
		}
		p := g.Topics[0].Partitions[0]
		if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
			return err
		}
		start, lag = p.StartOffset, p.Lag
		return nil
	})
	return start, lag, err
}

// sleepCtx waits d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

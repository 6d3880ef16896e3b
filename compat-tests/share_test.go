package compat

import (
	"context"
	"encoding/base64"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/internal/testsupport"
)

// Share groups (KIP-932, issue 16) against real brokers: competing
// consumers on fewer partitions than consumers, per-record
// acknowledgement, redelivery of what a dead consumer held, the poison
// record limit, and the group's state across kill -9 of the partition
// leader and of the share coordinator.

// produceShareRecords writes n records "0".."n-1" to topic (round robin over its
// partitions) and returns the high watermark of each partition.
func produceShareRecords(t *testing.T, cl *kgo.Client, topic string, n int) {
	t.Helper()
	ctx := ctxTimeout(t, 60*time.Second)
	for i := range n {
		r := kgo.StringRecord(fmt.Sprint(i))
		r.Topic = topic
		cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Errorf("produce %d: %v", i, err)
			}
		})
	}
	must(t, cl.Flush(ctx), "flush")
}

// Five share consumers on a two-partition topic: every one of them gets
// records (a partition goes to several members), every record is handed
// out once with delivery count 1 and accepted, and the group's start
// offsets end at the high watermarks with no lag.
func TestShareConsumersOutnumberPartitions(t *testing.T) {
	tg := singleNode(t, shareFlags...)
	adm := newAdmin(t, tg.seeds)
	topic := newTopic(t, adm, 2, 1, nil)
	group := uniqueTopic("share-many")
	admin := newClient(t, tg.seeds, kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	setShareConfigs(t, admin, group, "share.auto.offset.reset", "earliest")

	const consumers, total = 5, 600
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	type delivery struct {
		consumer int
		count    int32
	}
	var mu sync.Mutex
	seen := map[string][]delivery{} // "p/offset" -> deliveries
	per := make([]int, consumers)
	ackFailures := 0
	var wg sync.WaitGroup
	for i := range consumers {
		cl := newClient(t, tg.seeds, kgo.ConsumeTopics(topic), kgo.ShareGroup(group), kgo.ShareMaxRecords(10), kgo.ShareMaxRecordsStrict(),
			kgo.FetchMaxWait(300*time.Millisecond),
			kgo.ShareAckCallback(func(_ *kgo.Client, rs kgo.ShareAckResults) {
				if !rs.Ok() {
					mu.Lock()
					ackFailures++
					mu.Unlock()
					t.Logf("consumer %d acknowledgement failed: %v", i, rs.Error())
				}
			}))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				fs := cl.PollFetches(ctx)
				for _, r := range fs.Records() {
					mu.Lock()
					k := fmt.Sprintf("%d/%d", r.Partition, r.Offset)
					seen[k] = append(seen[k], delivery{i, r.DeliveryCount()})
					per[i]++
					mu.Unlock()
					r.Ack(kgo.AckAccept)
				}
				// Slow consumers, so that the records spread over all.
				testsupport.Sleep(ctx, 20*time.Millisecond)
			}
			cl.Close() // sends the last acknowledgements
		}()
	}
	waitFor(t, 30*time.Second, "every consumer assigned", func() error {
		req := kmsg.NewPtrShareGroupDescribeRequest()
		req.GroupIDs = []string{group}
		resp, err := req.RequestWith(ctx, admin)
		if err != nil {
			return err
		}
		g := resp.Groups[0]
		if g.ErrorCode != 0 {
			return kerr.ErrorForCode(g.ErrorCode)
		}
		if len(g.Members) != consumers {
			return fmt.Errorf("%d members", len(g.Members))
		}
		for _, m := range g.Members {
			if len(m.Assignment.TopicPartitions) == 0 {
				return fmt.Errorf("member %s has no partition", m.MemberID)
			}
		}
		return nil
	})
	produceShareRecords(t, admin, topic, total)
	waitFor(t, 45*time.Second, "every record delivered", func() error {
		mu.Lock()
		defer mu.Unlock()
		if len(seen) < total {
			return fmt.Errorf("%d of %d delivered", len(seen), total)
		}
		return nil
	})
	cancel()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	for k, ds := range seen {
		if len(ds) != 1 || ds[0].count != 1 {
			t.Errorf("record %s delivered %v, want once with delivery count 1", k, ds)
		}
	}
	for i, n := range per {
		if n == 0 {
			t.Errorf("consumer %d got no records (per consumer: %v)", i, per)
		}
	}
	if ackFailures > 0 {
		t.Errorf("%d acknowledgements failed", ackFailures)
	}
	t.Logf("records per consumer: %v", per)
	check := ctxTimeout(t, 20*time.Second)
	for p := range int32(2) {
		waitFor(t, 20*time.Second, fmt.Sprintf("partition %d fully acknowledged", p), func() error {
			start, lag, err := shareStartOffset(check, admin, group, topic, p)
			if err != nil {
				return err
			}
			if start != total/2 || lag != 0 {
				return fmt.Errorf("start offset %d lag %d, want %d and 0", start, lag, total/2)
			}
			return nil
		})
	}
}

// Per-record acknowledgement between members: RELEASE hands a record to
// another member, REJECT archives it, a consumer killed with records
// acquired (its connection gone) and one that went silent (its locks
// expire) have their records redelivered, a record released
// share.delivery.count.limit times is archived as poison, and every
// record ends accepted exactly once.
func TestShareAcknowledgeReleaseRejectRedeliver(t *testing.T) {
	tg := singleNode(t, shareFlags...)
	adm := newAdmin(t, tg.seeds)
	topic := newTopic(t, adm, 1, 1, nil)
	group := uniqueTopic("share-acks")
	admin := newClient(t, tg.seeds)
	setShareConfigs(t, admin, group, "share.auto.offset.reset", "earliest",
		"share.record.lock.duration.ms", "2000", "share.delivery.count.limit", "2")
	total := 60
	produceShareRecords(t, admin, topic, total)
	ctx := ctxTimeout(t, 90*time.Second)

	a := newShareMember(t, tg.seeds, group, "member-a", topic, 0)
	b := newShareMember(t, tg.seeds, group, "member-b", topic, 0)
	accepted := map[int64]int{}
	archived := map[int64]bool{}
	// take checks a fetch against what is settled and accepts its records
	// except those keep holds back (acquired, for the caller to settle).
	take := func(m *shareMember, got fetched, keep func(int64) bool) {
		t.Helper()
		acks := fetched{}
		for o, n := range got {
			if accepted[o] > 0 || archived[o] {
				t.Fatalf("offset %d delivered to %s (count %d) after it was settled", o, m.id, n)
			}
			if keep == nil || !keep(o) {
				acks[o] = n
			}
		}
		if len(acks) > 0 {
			must(t, m.acknowledgeRetrying(ctx, offsetsFor(acks, shareAccept)...), "%s accepting %v", m.id, acks)
			for o := range acks {
				accepted[o]++
			}
		}
	}
	// until fetches with m, settling what comes as take does, until want
	// holds of what it was handed; it returns that.
	until := func(m *shareMember, what string, want func(fetched) bool, keep func(int64) bool) fetched {
		t.Helper()
		all := fetched{}
		for !want(all) {
			if ctx.Err() != nil {
				t.Fatalf("%s: %s never happened (handed %v)", m.id, what, all)
			}
			got := m.fetchRetrying(ctx, 5)
			for o, n := range got {
				all[o] = n
			}
			take(m, got, keep)
		}
		return all
	}
	in := func(set fetched) func(int64) bool { return func(o int64) bool { _, ok := set[o]; return ok } }
	allAt := func(set fetched, count int16) func(fetched) bool {
		return func(got fetched) bool {
			for o := range set {
				if got[o] != count {
					return false
				}
			}
			return true
		}
	}

	// RELEASE and REJECT.
	first := a.fetchRetrying(ctx, 5)
	if len(first) != 5 {
		t.Fatalf("a's first fetch %v", first)
	}
	var released, rejected = fetched{}, fetched{}
	for o := range first {
		if o%2 == 0 {
			released[o] = 1
		} else {
			rejected[o], archived[o] = 1, true
		}
	}
	must(t, a.acknowledge(ctx, sortedAcks(append(offsetsFor(released, shareRelease), offsetsFor(rejected, shareReject)...))...), "release and reject")
	until(b, "the released records at delivery count 2", allAt(released, 2), nil)

	// A consumer killed holding records: its connection closes without a
	// word; its records come back (at once, or at the latest after the lock).
	c := newShareMember(t, tg.seeds, group, "member-c", topic, 0)
	held := c.fetchRetrying(ctx, 5)
	if len(held) != 5 {
		t.Fatalf("c got %v", held)
	}
	c.cl.Close()
	killedAt := time.Now()
	until(a, "the dead consumer's records at delivery count 2", allAt(held, 2), nil)
	t.Logf("a dead consumer's records redelivered %s after its connection closed", time.Since(killedAt).Round(time.Millisecond))

	// A consumer that went silent: its locks expire after 2 s.
	d := newShareMember(t, tg.seeds, group, "member-d", topic, 0)
	held = d.fetchRetrying(ctx, 5)
	lockedAt := time.Now()
	if len(held) != 5 {
		t.Fatalf("d got %v", held)
	}
	until(b, "the silent consumer's records at delivery count 2", func(got fetched) bool {
		for o := range held {
			if _, ok := got[o]; ok && time.Since(lockedAt) < 1500*time.Millisecond {
				t.Fatalf("d's record %d redelivered %s after it was locked for 2 s", o, time.Since(lockedAt))
			}
		}
		return allAt(held, 2)(got)
	}, nil)
	if err := d.acknowledge(ctx, offsetsFor(held, shareAccept)...); !errorsIs(err, kerr.InvalidRecordState) {
		t.Fatalf("d acknowledging records it lost: %v, want INVALID_RECORD_STATE", err)
	}

	// A poison record: released twice, then archived for good. (b took
	// every record while d's locks ran: there are more now.)
	produceShareRecords(t, admin, topic, 20)
	total += 20
	poison := a.fetchRetrying(ctx, 1)
	must(t, a.acknowledge(ctx, offsetsFor(poison, shareRelease)...), "first release")
	until(b, "the poison record a second time", allAt(poison, 2), in(poison))
	must(t, b.acknowledge(ctx, offsetsFor(poison, shareRelease)...), "second release")
	for o := range poison {
		archived[o] = true
	}

	// The rest is accepted; rejected and poison records never come back.
	until(a, "every record settled", func(fetched) bool { return len(accepted)+len(archived) == total }, nil)
	for o, n := range accepted {
		if n != 1 {
			t.Errorf("offset %d accepted %d times", o, n)
		}
	}
	start, lag, err := shareStartOffset(ctx, admin, group, topic, 0)
	if err != nil || start != int64(total) || lag != 0 {
		t.Fatalf("described start offset %d lag %d (%v), want %d and 0", start, lag, err, total)
	}
}

// shareCoordinatorOf is the broker leading the share state of a
// share-partition (FindCoordinator key type SHARE).
func shareCoordinatorOf(ctx context.Context, cl *kgo.Client, group string, topicID [16]byte, partition int32) (int32, error) {
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorType = 2
	req.CoordinatorKeys = []string{fmt.Sprintf("%s:%s:%d", group, base64.RawURLEncoding.EncodeToString(topicID[:]), partition)}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return -1, err
	}
	c := resp.Coordinators[0]
	if c.ErrorCode != 0 {
		return -1, kerr.ErrorForCode(c.ErrorCode)
	}
	return c.NodeID, nil
}

// The group's state survives kill -9 of the partition leader and of the
// share coordinator: no accepted record is delivered again, none is lost,
// and a record is delivered a second time only if it was acquired and not
// yet accepted when a fault struck.
func TestShareStateSurvivesKills(t *testing.T) {
	t.Parallel()
	needOwnCluster(t)
	c := startCluster(t, clusterOpts{brokers: 3, flags: replicationFlags(append([]string{
		"--default.replication.factor=3", "--min.insync.replicas=2",
	}, shareFlags...)...)})
	seeds := c.seeds()
	adm := newAdmin(t, seeds)
	topic := newTopic(t, adm, 1, 3, nil)
	group := uniqueTopic("share-kill")
	admin := newClient(t, seeds)
	setShareConfigs(t, admin, group, "share.auto.offset.reset", "earliest", "share.record.lock.duration.ms", "3000")
	const total = 300
	produceShareRecords(t, admin, topic, total)
	ctx := ctxTimeout(t, 4*time.Minute)
	members := []*shareMember{
		newShareMember(t, seeds, group, "member-a", topic, 0),
		newShareMember(t, seeds, group, "member-b", topic, 0),
	}

	accepted := map[int64]bool{}
	deliveries := map[int64]int{}
	outstanding := map[int64]bool{} // acquired, not yet accepted
	atFault := map[int64]bool{}     // outstanding when a fault struck
	step := func(m *shareMember) {
		got := m.fetchRetrying(ctx, 10)
		for o, n := range got {
			if accepted[o] {
				t.Fatalf("offset %d delivered to %s (count %d) after it was accepted", o, m.id, n)
			}
			deliveries[o]++
			if deliveries[o] > 1 && !atFault[o] {
				t.Fatalf("offset %d delivered again (count %d) though it was not held at a fault", o, n)
			}
			outstanding[o] = true
		}
		if err := m.acknowledgeRetrying(ctx, offsetsFor(got, shareAccept)...); err != nil {
			// The session died with its broker: these come back.
			t.Logf("%s: acknowledgement lost with its session (%v): %d records to be redelivered", m.id, err, len(got))
			return
		}
		for o := range got {
			accepted[o] = true
			delete(outstanding, o)
		}
	}
	// fault kills n while holder holds records it acquired, then has it
	// accept them: they are accepted, or (the session died with the
	// partition leader) delivered again later.
	lostAtFault := map[int64]bool{}
	fault := func(what string, n *node, holder *shareMember) {
		held := holder.fetchRetrying(ctx, 10)
		for o := range held {
			if accepted[o] {
				t.Fatalf("offset %d delivered after it was accepted", o)
			}
			deliveries[o]++
			outstanding[o] = true
		}
		for o := range outstanding {
			atFault[o] = true
		}
		t.Logf("kill -9 of node %d (%s) with %d accepted, %d outstanding (%d held by %s)", n.id, what, len(accepted), len(outstanding), len(held), holder.id)
		n.kill9()
		if err := holder.acknowledgeRetrying(ctx, offsetsFor(held, shareAccept)...); err != nil {
			t.Logf("%s's acknowledgement after the kill failed (%v): its %d records must come back", holder.id, err, len(held))
			for o := range held {
				lostAtFault[o] = true
			}
			return
		}
		t.Logf("%s's acknowledgement after the kill succeeded", holder.id)
		for o := range held {
			accepted[o] = true
			delete(outstanding, o)
		}
	}
	run := func(until int) {
		for i := 0; len(accepted) < until; i++ {
			step(members[i%len(members)])
			if ctx.Err() != nil {
				t.Fatalf("accepted %d of %d before the deadline", len(accepted), until)
			}
		}
	}

	run(total / 3)
	leader, err := members[0].partitionLeader(ctx)
	must(t, err, "partition leader")
	fault("partition leader", c.node(leader), members[1])
	run(total / 2)
	c.restart(c.node(leader))
	c.waitServing(60 * time.Second)

	// Right after the restart the key's state partition may have no
	// serving leader for a moment (COORDINATOR_NOT_AVAILABLE, retriable:
	// clients look it up again).
	var coord int32
	waitFor(t, 30*time.Second, "the share coordinator", func() error {
		var err error
		coord, err = shareCoordinatorOf(ctx, admin, group, members[0].topicID, 0)
		return err
	})
	fault("share coordinator", c.node(coord), members[1])
	run(total)
	c.restart(c.node(coord))

	if len(accepted) != total {
		t.Fatalf("accepted %d of %d", len(accepted), total)
	}
	redelivered := 0
	for o, n := range deliveries {
		if n > 1 {
			redelivered++
		}
		if lostAtFault[o] && n < 2 {
			t.Errorf("offset %d was held when its acknowledgement was lost but never delivered again", o)
		}
	}
	t.Logf("all %d records accepted once; %d redelivered, all of them held at a fault", total, redelivered)
	waitFor(t, 60*time.Second, "the start offset at the end", func() error {
		start, lag, err := shareStartOffset(ctx, admin, group, topic, 0)
		if err != nil {
			return err
		}
		if start != total || lag != 0 {
			return fmt.Errorf("start offset %d lag %d", start, lag)
		}
		return nil
	})
}

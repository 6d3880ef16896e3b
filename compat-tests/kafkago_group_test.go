package compat

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// kafka-go's consumer-group Reader (the classic protocol with its own
// JoinGroup/SyncGroup versions, client-side range and round-robin
// assignors): a second reader that joins gets half of the partitions, and
// a reader that commits asynchronously commits what it was given when it
// closes. kafka-go: TestReaderConsumerGroup/consumer_group_rebalance and
// consumer_group_commits_on_close. Issue 21.
func TestKafkaGoReaderGroup(t *testing.T) {
	t.Parallel()
	tg := singleNode(t, "--group.initial.rebalance.delay.ms=0")
	adm := newAdmin(t, tg.seeds)
	for _, balancer := range []kafka.GroupBalancer{kafka.RangeGroupBalancer{}, kafka.RoundRobinGroupBalancer{}} {
		t.Run(balancer.ProtocolName(), func(t *testing.T) {
			topic := newTopic(t, adm, 4, 1, nil)
			group := uniqueTopic("kafkago-" + balancer.ProtocolName())
			cl := newClient(t, tg.seeds, kgo.DefaultProduceTopic(topic))
			ctx := ctxTimeout(t, 90*time.Second)
			for i := range 40 {
				must(t, cl.ProduceSync(ctx, &kgo.Record{Partition: int32(i % 4), Value: []byte(fmt.Sprint(i))}).FirstErr(), "produce")
			}
			config := kafka.ReaderConfig{
				Brokers: tg.seeds, Topic: topic, GroupID: group,
				GroupBalancers:    []kafka.GroupBalancer{balancer},
				HeartbeatInterval: 500 * time.Millisecond,
				RebalanceTimeout:  5 * time.Second,
				SessionTimeout:    6 * time.Second,
				JoinGroupBackoff:  200 * time.Millisecond,
				CommitInterval:    time.Hour, // commits only when closing
				StartOffset:       kafka.FirstOffset,
				MaxWait:           200 * time.Millisecond,
			}
			waitCoordinator(t, adm, group)
			first := kafka.NewReader(config)
			defer first.Close()
			m, err := first.FetchMessage(ctx)
			must(t, err, "first reader: FetchMessage")
			must(t, first.CommitMessages(ctx, m), "first reader: CommitMessages")
			waitMembers(t, adm, group, 1, 4)

			// The second reader joins: both keep fetching, so both
			// answer the rebalance, and each ends with two partitions.
			second := kafka.NewReader(config)
			defer second.Close()
			var wg sync.WaitGroup
			fetchCtx, stop := context.WithCancel(ctx)
			for _, r := range []*kafka.Reader{first, second} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for fetchCtx.Err() == nil {
						r.FetchMessage(fetchCtx)
					}
				}()
			}
			waitMembers(t, adm, group, 2, 2)
			stop()
			wg.Wait()

			// Close commits what the first reader was asked to commit.
			must(t, first.Close(), "first reader: Close")
			offsets, err := adm.FetchOffsets(ctx, group)
			must(t, err, "OffsetFetch")
			o, ok := offsets.Lookup(topic, int32(m.Partition))
			if !ok || o.At != m.Offset+1 {
				t.Fatalf("committed offset of %s/%d is %+v after Close, want %d", topic, m.Partition, o, m.Offset+1)
			}
		})
	}
}

// waitMembers waits until the group is stable with members members, each
// assigned perMember partitions.
func waitMembers(t *testing.T, adm *kadm.Client, group string, members, perMember int) {
	t.Helper()
	waitFor(t, 45*time.Second, fmt.Sprintf("%d members with %d partitions each", members, perMember), func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		described, err := adm.DescribeGroups(ctx, group)
		if err != nil {
			return err
		}
		g := described[group]
		if g.State != "Stable" || len(g.Members) != members {
			return fmt.Errorf("group %s: %d members", g.State, len(g.Members))
		}
		for _, m := range g.Members {
			c, ok := m.Assigned.AsConsumer()
			n := 0
			if ok {
				for _, tp := range c.Topics {
					n += len(tp.Partitions)
				}
			}
			if n != perMember {
				return fmt.Errorf("member %s has %d partitions", m.MemberID, n)
			}
		}
		return nil
	})
}

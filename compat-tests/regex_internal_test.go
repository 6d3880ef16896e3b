package compat

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// A KIP-848 subscription regex resolves on the broker against every topic,
// internal ones included, as Kafka 4.x does: a regex naming
// __consumer_offsets gets its partitions assigned (franz-go's
// Test848RegexBrokerResolves). Issue 21.
func TestRegexSubscriptionResolvesInternalTopic(t *testing.T) {
	tg := singleNode(t)
	adm := newAdmin(t, tg.seeds)
	topic := newTopic(t, adm, 1, 1, nil)
	ctx := ctxTimeout(t, 30*time.Second)
	// __consumer_offsets exists once a group has a coordinator.
	group := uniqueTopic("regex-internal")
	waitCoordinator(t, adm, group)

	var mu sync.Mutex
	assigned := map[string][]int32{}
	cl := newClient(t, tg.seeds,
		kgo.ConsumerGroup(group),
		kgo.ServerSideBalancer(),
		kgo.ConsumeRegex(),
		kgo.ConsumeTopics(regexp.QuoteMeta(topic), regexp.QuoteMeta("__consumer_offsets")),
		kgo.DisableAutoCommit(),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			mu.Lock()
			defer mu.Unlock()
			for topic, ps := range m {
				assigned[topic] = append(assigned[topic], ps...)
			}
		}),
	)
	md, err := adm.Metadata(ctx, "__consumer_offsets")
	must(t, err, "Metadata")
	want := len(md.Topics["__consumer_offsets"].Partitions)
	if want == 0 {
		t.Fatal("__consumer_offsets has no partitions")
	}
	waitFor(t, 30*time.Second, "the regex's topics assigned", func() error {
		cl.PollFetches(ctxTimeout(t, 200*time.Millisecond))
		mu.Lock()
		defer mu.Unlock()
		if len(assigned[topic]) != 1 || len(assigned["__consumer_offsets"]) != want {
			return fmt.Errorf("assigned %v, want %s/0 and the %d partitions of __consumer_offsets", assigned, topic, want)
		}
		return nil
	})
	// The group's description agrees: the member's assignment names both.
	described, err := adm.DescribeConsumerGroups(ctx, group)
	must(t, err, "ConsumerGroupDescribe")
	d := described[group]
	topics := d.AssignedPartitions().Topics()
	if !slices.Contains(topics, "__consumer_offsets") {
		t.Fatalf("ConsumerGroupDescribe assignment %v lacks __consumer_offsets", topics)
	}
}

// waitCoordinator waits until the group has a coordinator: on a new
// cluster __consumer_offsets is created by the first FindCoordinator,
// which answers COORDINATOR_NOT_AVAILABLE meanwhile (as Kafka's).
func waitCoordinator(t *testing.T, adm *kadm.Client, group string) {
	t.Helper()
	waitFor(t, 30*time.Second, "a group coordinator", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		for _, r := range adm.FindGroupCoordinators(ctx, group) {
			if r.Err != nil {
				return r.Err
			}
		}
		return nil
	})
}

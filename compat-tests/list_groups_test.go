package compat

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// ListGroups goes to every broker (each lists the groups it coordinates);
// a group a consumer just joined is listed at once, while its first
// rebalance is still being delayed (group.initial.rebalance.delay.ms),
// with its state and type, and the v4 state and v5 type filters select
// it, case-insensitively, as Kafka's. confluent-kafka-go:
// TestAdminClient_ListAndDescribeConsumerGroups. Issue 21.
func TestListGroupsJustJoined(t *testing.T) {
	t.Parallel()
	needOwnCluster(t)
	c := startCluster(t, clusterOpts{brokers: 3, flags: replicationFlags("--group.initial.rebalance.delay.ms=3000")})
	adm := newAdmin(t, c.seeds())
	topic := newTopic(t, adm, 2, 3, nil)
	ctx := ctxTimeout(t, 60*time.Second)
	classic, kip848 := uniqueTopic("listed-classic"), uniqueTopic("listed-848")
	waitCoordinator(t, adm, classic)
	waitCoordinator(t, adm, kip848)

	poll := func(cl *kgo.Client) {
		go func() {
			for {
				if fs := cl.PollFetches(ctx); fs.IsClientClosed() || ctx.Err() != nil {
					return
				}
			}
		}()
	}
	joined := time.Now()
	poll(newClient(t, c.seeds(), kgo.ConsumerGroup(classic), kgo.ConsumeTopics(topic)))
	poll(newClient(t, c.seeds(), kgo.ConsumerGroup(kip848), kgo.ConsumeTopics(topic), kgo.ServerSideBalancer()))

	list := func(types []string, states ...string) kadm.ListedGroups {
		t.Helper()
		lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		listed, err := adm.ListGroupsByType(lctx, types, states...)
		must(t, err, "ListGroups types %v states %v", types, states)
		return listed
	}
	// Listed while the classic group waits out its initial delay (its
	// members joined: KIP-394's first JoinGroup only hands out a member id).
	waitFor(t, 2*time.Second, "both groups listed", func() error {
		listed := list(nil)
		if _, ok := listed[kip848]; !ok {
			return fmt.Errorf("%s not listed %v after joining", kip848, time.Since(joined))
		}
		if g := listed[classic]; g.GroupType != "classic" || g.ProtocolType != "consumer" || g.State != "PreparingRebalance" {
			return fmt.Errorf("classic group listed as %+v %v after joining", g, time.Since(joined))
		}
		return nil
	})
	if _, ok := list(nil, "preparingrebalance")[classic]; !ok {
		t.Error("the state filter PreparingRebalance (any case) does not select the joining classic group")
	}
	if _, ok := list(nil, "Stable")[classic]; ok {
		t.Error("the state filter Stable selects a group that is preparing its rebalance")
	}
	waitFor(t, 30*time.Second, "both groups stable", func() error {
		stable := list(nil, "Stable")
		for _, g := range []string{classic, kip848} {
			if _, ok := stable[g]; !ok {
				return fmt.Errorf("%s not stable yet", g)
			}
		}
		return nil
	})
	if listed := list([]string{"Consumer"}); listed[kip848].GroupType != "consumer" || listed[classic].Group != "" {
		t.Errorf("the type filter consumer lists %v", listed.Sorted())
	}
	if listed := list([]string{"classic"}, "Stable"); listed[classic].Group == "" || listed[kip848].Group != "" {
		t.Errorf("the type filter classic with state Stable lists %v", listed.Sorted())
	}
}

package compat

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A topic that CreateTopics reported created is known to every broker a
// client asks next, as with Kafka: librdkafka subscribes and sarama
// produces right after creating, through whichever broker they reach first
// (confluent-kafka-go TestAdminClient_DeleteConsumerGroups, sarama
// TestFuncConsumerGroupFuzzy). The test creates topics through one broker
// and at once asks each other broker for them, once; it logs how long each
// broker took to list a topic after CreateTopics returned. Issue 21.
func TestCreatedTopicKnownToEveryBroker(t *testing.T) {
	needOwnCluster(t)
	c := startCluster(t, clusterOpts{brokers: 3, flags: replicationFlags()})
	cl := newClient(t, c.seeds())
	ctx := ctxTimeout(t, 2*time.Minute)
	_, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl) // learn every broker
	must(t, err, "Metadata")

	const rounds = 20
	var misses []string
	var lags, firstAsk []time.Duration
	for i := range rounds {
		topic := uniqueTopic(fmt.Sprintf("visible-%d", i))
		req := kmsg.NewPtrCreateTopicsRequest()
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, 1, 3
		req.Topics = append(req.Topics, rt)
		req.TimeoutMillis = 30000
		// Through a broker that may not be the active controller.
		resp, err := req.RequestWith(ctx, cl)
		must(t, err, "CreateTopics")
		if resp.Topics[0].ErrorCode != 0 {
			t.Fatalf("CreateTopics %s: error %d", topic, resp.Topics[0].ErrorCode)
		}
		created := time.Now()
		for _, n := range c.nodes {
			asked := time.Now()
			known := knows(ctx, t, cl, n.id, topic)
			firstAsk = append(firstAsk, time.Since(asked))
			if !known {
				misses = append(misses, fmt.Sprintf("node %d did not know %s when first asked", n.id, topic))
			}
		}
		for _, n := range c.nodes {
			for !knows(ctx, t, cl, n.id, topic) {
				if ctx.Err() != nil {
					t.Fatalf("node %d never listed %s", n.id, topic)
				}
			}
		}
		lags = append(lags, time.Since(created))
	}
	slices.Sort(lags)
	slices.Sort(firstAsk)
	t.Logf("a broker's first answer took %v (median of %d), %v at most", firstAsk[len(firstAsk)/2], len(firstAsk), firstAsk[len(firstAsk)-1])
	t.Logf("every broker listed the new topic within %v (median of %d), %v at most, after CreateTopics returned", lags[len(lags)/2], rounds, lags[len(lags)-1])
	for _, m := range misses {
		t.Error(m)
	}
}

// knows asks broker id (and only it) whether topic exists.
func knows(ctx context.Context, t *testing.T, cl *kgo.Client, id int32, topic string) bool {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	req.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr(topic)}}
	req.AllowAutoTopicCreation = false
	resp, err := cl.Broker(int(id)).Request(ctx, req)
	must(t, err, "Metadata from node %d", id)
	md := resp.(*kmsg.MetadataResponse)
	return len(md.Topics) == 1 && md.Topics[0].ErrorCode == 0 && len(md.Topics[0].Partitions) == 1
}

package broker

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/config"
)

// startShareBroker is a single node with small internal topics and short
// share-group bounds, for the share group tests.
func startShareBroker(t *testing.T) (*Broker, string) {
	t.Helper()
	br := startTestBroker(t, func(c *config.Config) {
		c.OffsetsTopicNumPartitions = 3
		c.ShareCoordinatorStateTopicPartitions = 3
		c.GroupShareMinRecordLockDuration = time.Second
		c.GroupShareMinSessionTimeout = time.Second
		c.GroupShareMinHeartbeatInterval = 100 * time.Millisecond
		c.GroupShareHeartbeatInterval = 500 * time.Millisecond
	})
	return br, br.cfg.ClientListener().Address()
}

func setGroupConfigs(t *testing.T, cl *kgo.Client, group string, kvs ...string) {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	for i := 0; i < len(kvs); i += 2 {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value = kvs[i], kmsg.StringPtr(kvs[i+1])
		res.Configs = append(res.Configs, c)
	}
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	if err := kerr.ErrorForCode(resp.Resources[0].ErrorCode); err != nil {
		t.Fatalf("setting group configs: %v (%s)", err, derefString(resp.Resources[0].ErrorMessage))
	}
}

// A share consumer reads every record of a topic produced before it
// joined (share.auto.offset.reset=earliest) and acknowledges them.
func TestShareConsumeAll(t *testing.T) {
	br, addr := startShareBroker(t)
	createTopic(t, br, "q")
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("q"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range 100 {
		if err := cl.ProduceSync(ctx, kgo.StringRecord(fmt.Sprint(i))).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	setGroupConfigs(t, cl, "g", "share.auto.offset.reset", "earliest")
	sc, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics("q"), kgo.ShareGroup("g"))
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	seen := map[string]bool{}
	for len(seen) < 100 && ctx.Err() == nil {
		fs := sc.PollFetches(ctx)
		for _, e := range fs.Errors() {
			t.Logf("fetch error: %v", e)
		}
		for _, r := range fs.Records() {
			seen[string(r.Value)] = true
		}
	}
	if len(seen) != 100 {
		t.Fatalf("consumed %d distinct records, want 100", len(seen))
	}
}

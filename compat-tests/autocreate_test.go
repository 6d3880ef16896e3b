package compat

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// A Metadata request that auto-creates a topic (v1 implies it: kafka-go's
// ReadPartitions right after DeleteTopics) is answered, as Kafka answers
// it, LEADER_NOT_AVAILABLE with no partitions; the next request finds the
// topic led. kafka-go: TestConn/test_delete_topics. Issue 21.
func TestMetadataAutoCreateAnswersLeaderNotAvailable(t *testing.T) {
	tg := singleNode(t, "--auto.create.topics.enable=true")
	adm := newAdmin(t, tg.seeds)
	topic := newTopic(t, adm, 1, 1, nil)
	ctx := ctxTimeout(t, 30*time.Second)
	_, err := adm.DeleteTopics(ctx, topic)
	must(t, err, "DeleteTopics")

	v1 := kversion.Stable()
	v1.SetMaxKeyVersion(3, 1) // Metadata v1
	cl := newClient(t, tg.seeds, kgo.MaxVersions(v1))
	req := kmsg.NewPtrMetadataRequest()
	req.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr(topic)}}
	resp, err := req.RequestWith(ctx, cl)
	must(t, err, "Metadata v1")
	if len(resp.Topics) != 1 {
		t.Fatalf("Metadata answered %d topics, want 1", len(resp.Topics))
	}
	got := resp.Topics[0]
	if err := kerr.ErrorForCode(got.ErrorCode); err != kerr.LeaderNotAvailable || len(got.Partitions) != 0 {
		t.Fatalf("auto-created topic answered %v with %d partitions, want LEADER_NOT_AVAILABLE and none", err, len(got.Partitions))
	}
	waitFor(t, 10*time.Second, "the auto-created topic led", func() error {
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return err
		}
		if got := resp.Topics[0]; got.ErrorCode != 0 || len(got.Partitions) != 1 || got.Partitions[0].Leader < 0 {
			return fmt.Errorf("topic: %v, %d partitions", kerr.ErrorForCode(got.ErrorCode), len(got.Partitions))
		}
		return nil
	})
}

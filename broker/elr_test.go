package broker

import (
	"context"
	"log/slog"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/config"
	"github.com/kbroker/kbroker/protocol"
	"github.com/kbroker/kbroker/replication/controller"
)

// brokerWithImage is a broker that is not started, showing img.
func brokerWithImage(t *testing.T, img *controller.Image) *Broker {
	t.Helper()
	cfg := config.Defaults()
	cfg.NodeID = 1
	b := New(cfg, slog.New(slog.DiscardHandler))
	b.image.Store(newMetadataView(img, cfg))
	return b
}

// DescribeTopicPartitions is where clients see a partition's eligible
// leader replicas and last known leader (KIP-966).
func TestDescribeTopicPartitionsShowsELR(t *testing.T) {
	p := &controller.Partition{Topic: "t", Replicas: []int32{1, 2, 3}, ISR: []int32{}, Leader: -1,
		ELR: []int32{2}, LastKnownELR: []int32{1}}
	topic := &controller.Topic{Name: "t", ID: [16]byte{7}, Configs: map[string]string{}, Partitions: []*controller.Partition{p}}
	img := &controller.Image{Topics: map[string]*controller.Topic{"t": topic}, TopicsByID: map[[16]byte]*controller.Topic{topic.ID: topic},
		Brokers: map[int32]*controller.BrokerInfo{}}
	b := brokerWithImage(t, img)
	req := kmsg.NewPtrDescribeTopicPartitionsRequest()
	req.Topics = []kmsg.DescribeTopicPartitionsRequestTopic{{Topic: "t"}}
	resp := b.handleDescribeTopicPartitions(context.Background(), &protocol.Request{Body: req}).Body.(*kmsg.DescribeTopicPartitionsResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("response %+v", resp)
	}
	got := resp.Topics[0].Partitions[0]
	if !slices.Equal(got.EligibleLeaderReplicas, []int32{2}) || !slices.Equal(got.LastKnownELR, []int32{1}) || got.LeaderID != -1 {
		t.Fatalf("partition %+v, want ELR [2] and last known leader [1]", got)
	}
}

// ApiVersions lists eligible.leader.replicas.version as supported (0-1,
// v4+: v3 leaves out features whose minimum is 0) and, as a new cluster
// finalizes it (features.go), at level 1 (v3+).
func TestApiVersionsListsELRFeature(t *testing.T) {
	b := brokerWithImage(t, &controller.Image{Features: map[string]int16{controller.ELRFeature: 1}, FeaturesEpoch: 7})
	for _, v := range []int16{3, 4} {
		req := kmsg.NewPtrApiVersionsRequest()
		req.SetVersion(v)
		resp := b.handleApiVersions(context.Background(), &protocol.Request{Header: protocol.Header{Version: v}, Body: req}).Body.(*kmsg.ApiVersionsResponse)
		supported := slices.ContainsFunc(resp.SupportedFeatures, func(f kmsg.ApiVersionsResponseSupportedFeature) bool {
			return f.Name == controller.ELRFeature && f.MinVersion == 0 && f.MaxVersion == 1
		})
		finalized := slices.ContainsFunc(resp.FinalizedFeatures, func(f kmsg.ApiVersionsResponseFinalizedFeature) bool {
			return f.Name == controller.ELRFeature && f.MaxVersionLevel == 1 && f.MinVersionLevel == 1
		})
		if supported != (v >= 4) || !finalized || resp.FinalizedFeaturesEpoch != 7 {
			t.Fatalf("v%d: supported %v finalized %v (epoch %d): %+v %+v", v, supported, finalized,
				resp.FinalizedFeaturesEpoch, resp.SupportedFeatures, resp.FinalizedFeatures)
		}
	}
}

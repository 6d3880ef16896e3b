package broker

import (
	"context"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/protocol"
	"github.com/kbroker/kbroker/replication/controller"
)

// ApiVersions lists transaction.version from the one feature table:
// supported 0-2 (v4+; v3 leaves out features whose minimum is 0) and
// finalized at the cluster's level: 2 as a new cluster bootstraps it
// (franz-go and the Java client use KIP-890 part 2 only then), 1 once
// UpdateFeatures lowered it (clients then keep EndTxn v4, Produce v11 and
// AddPartitionsToTxn, the TV1 flow). v0-v2 carry no features.
func TestApiVersionsListsTransactionVersion(t *testing.T) {
	for _, level := range []int16{2, 1} {
		b := brokerWithImage(t, &controller.Image{Features: map[string]int16{controller.TransactionVersionFeature: level}, FeaturesEpoch: 3})
		for _, v := range []int16{2, 3, 4} {
			req := kmsg.NewPtrApiVersionsRequest()
			req.SetVersion(v)
			resp := b.handleApiVersions(context.Background(), &protocol.Request{Header: protocol.Header{Version: v}, Body: req}).Body.(*kmsg.ApiVersionsResponse)
			supported := slices.ContainsFunc(resp.SupportedFeatures, func(f kmsg.ApiVersionsResponseSupportedFeature) bool {
				return f.Name == "transaction.version" && f.MinVersion == 0 && f.MaxVersion == 2
			})
			finalized := slices.ContainsFunc(resp.FinalizedFeatures, func(f kmsg.ApiVersionsResponseFinalizedFeature) bool {
				return f.Name == "transaction.version" && f.MaxVersionLevel == level && f.MinVersionLevel == level
			})
			if v < 3 {
				if len(resp.SupportedFeatures)+len(resp.FinalizedFeatures) > 0 {
					t.Fatalf("v%d carries features", v)
				}
				continue
			}
			if supported != (v >= 4) || !finalized || resp.FinalizedFeaturesEpoch != 3 {
				t.Fatalf("level %d, v%d: supported %v finalized %v (epoch %d): %+v %+v", level, v, supported, finalized,
					resp.FinalizedFeaturesEpoch, resp.SupportedFeatures, resp.FinalizedFeatures)
			}
		}
	}
}

package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/protocol"
)

// ApiVersions v3+ finalizes transaction.version 2 (franz-go and the Java
// client use KIP-890 part 2 only then); v0-v2 carry no features.
func TestApiVersionsFinalizesTransactionVersion2(t *testing.T) {
	d := newDispatcher([]api{{key: protocol.ApiVersionsKey, minVersion: 0, maxVersion: 4}})
	for _, v := range []int16{0, 2, 3, 4} {
		req := &protocol.Request{}
		req.Version = v
		resp := apiVersionsResponse(req, d).(*kmsg.ApiVersionsResponse)
		found := false
		for _, f := range resp.FinalizedFeatures {
			if f.Name == "transaction.version" && f.MaxVersionLevel == 2 {
				found = true
			}
		}
		if v >= 3 && (!found || resp.FinalizedFeaturesEpoch < 0) {
			t.Fatalf("v%d: finalized features %+v (epoch %d)", v, resp.FinalizedFeatures, resp.FinalizedFeaturesEpoch)
		}
		if v < 3 && len(resp.FinalizedFeatures) > 0 {
			t.Fatalf("v%d carries features", v)
		}
	}
}

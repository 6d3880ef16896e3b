package broker

// ApiVersions (key 18), v0-v4.
//
// Lists the dispatch table and, from v3, the supported and finalized
// features. A request at a version newer than we know gets the v0 answer with UNSUPPORTED_VERSION and the full list (KIP-511), so the
// client can retry at a version we support. ApiVersions is answered before
// anything else, on every listener. v3+ adds the cluster features
// (KIP-584, replication/controller/features.go): the levels this build
// supports (v3 leaves out those whose minimum is 0, as Kafka does for
// clients that cannot read it: KAFKA-17011) and the finalized levels above
// 0 with the epoch of their last change.

import (
	"context"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/protocol"
	"github.com/kbroker/kbroker/replication/controller"
)

func (b *Broker) handleApiVersions(_ context.Context, req *protocol.Request) protocol.Response {
	resp := apiVersionsResponse(req, b.dispatch)
	if resp.Version >= 3 {
		addFeatures(resp, b.view().img)
	}
	return protocol.Response{Body: resp}
}

func apiVersionsResponse(req *protocol.Request, d *dispatcher) *kmsg.ApiVersionsResponse {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(req.Version)
	if a := d.table[protocol.ApiVersionsKey]; req.Version > a.maxVersion {
		resp.SetVersion(0)
		resp.ErrorCode = kerr.UnsupportedVersion.Code
	}
	resp.ApiKeys = d.apiVersionKeys()
	return resp
}

// addFeatures fills in the supported and finalized features (v3+).
func addFeatures(resp *kmsg.ApiVersionsResponse, img *controller.Image) {
	for _, f := range controller.Features {
		if f.Min == 0 && resp.Version < 4 {
			continue
		}
		resp.SupportedFeatures = append(resp.SupportedFeatures,
			kmsg.ApiVersionsResponseSupportedFeature{Name: f.Name, MinVersion: f.Min, MaxVersion: f.Max})
	}
	finalized, epoch := img.FinalizedFeatures()
	resp.FinalizedFeaturesEpoch = epoch
	for _, name := range slices.Sorted(maps.Keys(finalized)) {
		level := finalized[name]
		resp.FinalizedFeatures = append(resp.FinalizedFeatures,
			kmsg.ApiVersionsResponseFinalizedFeature{Name: name, MaxVersionLevel: level, MinVersionLevel: level})
	}
}

package broker

// ApiVersions (key 18), v0-v4.
//
// Lists the dispatch table. A request at a version newer than we know gets
// the v0 answer with UNSUPPORTED_VERSION and the full list (KIP-511), so the
// client can retry at a version we support. ApiVersions is answered before
// anything else, on every listener. v3+ carries the cluster features:
// eligible.leader.replicas.version (addELRFeature).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/protocol"
	"github.com/kbroker/kbroker/replication/controller"
)

func (b *Broker) handleApiVersions(_ context.Context, req *protocol.Request) protocol.Response {
	resp := apiVersionsResponse(req, b.dispatch)
	addELRFeature(resp.(*kmsg.ApiVersionsResponse), b.view().img)
	return protocol.Response{Body: resp}
}

// addELRFeature lists eligible.leader.replicas.version (KIP-966) among the
// supported features (v4+: v3 leaves out features whose minimum is 0, as
// Kafka does for clients that cannot read it, KAFKA-17011) and, when the
// cluster runs with it, among the finalized ones (v3+). It is the one
// cluster feature until the feature table of issue 21 lists them all.
func addELRFeature(resp *kmsg.ApiVersionsResponse, img *controller.Image) {
	lv := controller.ELRFeatureLevels
	if resp.Version >= 4 {
		resp.SupportedFeatures = append(resp.SupportedFeatures, kmsg.ApiVersionsResponseSupportedFeature{
			Name: controller.ELRFeature, MinVersion: lv.Min, MaxVersion: lv.Max})
	}
	if resp.Version >= 3 && img.ELREnabled() {
		resp.FinalizedFeaturesEpoch = 0
		resp.FinalizedFeatures = append(resp.FinalizedFeatures, kmsg.ApiVersionsResponseFinalizedFeature{
			Name: controller.ELRFeature, MinVersionLevel: lv.Finalized, MaxVersionLevel: lv.Finalized})
	}
}

func apiVersionsResponse(req *protocol.Request, d *dispatcher) kmsg.Response {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(req.Version)
	if a := d.table[protocol.ApiVersionsKey]; req.Version > a.maxVersion {
		resp.SetVersion(0)
		resp.ErrorCode = kerr.UnsupportedVersion.Code
	}
	resp.ApiKeys = d.apiVersionKeys()
	return resp
}

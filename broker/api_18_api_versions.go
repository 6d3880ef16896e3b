package broker

// ApiVersions (key 18), v0-v4.
//
// Lists the dispatch table and, from v3, the supported and finalized
// features (features.go). A request at a version newer than we know gets
// the v0 answer with UNSUPPORTED_VERSION and the full list (KIP-511), so the
// client can retry at a version we support. ApiVersions is answered before
// anything else, on every listener.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/protocol"
)

func (b *Broker) handleApiVersions(_ context.Context, req *protocol.Request) protocol.Response {
	return protocol.Response{Body: apiVersionsResponse(req, b.dispatch)}
}

func apiVersionsResponse(req *protocol.Request, d *dispatcher) kmsg.Response {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(req.Version)
	if a := d.table[protocol.ApiVersionsKey]; req.Version > a.maxVersion {
		resp.SetVersion(0)
		resp.ErrorCode = kerr.UnsupportedVersion.Code
	}
	resp.ApiKeys = d.apiVersionKeys()
	addFeatures(resp)
	return resp
}

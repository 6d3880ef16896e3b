package broker

// ListConfigResources (key 74), v0-v1 (KIP-1142).
//
// v0 lists client-metrics resources: kbroker has none. v1 lists resources
// by type: topics (2), brokers (4), and groups (32) this broker
// coordinates are not listed (their configs are not served yet); no type
// filter means topics and brokers.

import (
	"context"
	"slices"
	"sort"
	"strconv"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/protocol"
	"github.com/kbroker/kbroker/security/acl"
)

func (b *Broker) handleListConfigResources(_ context.Context, req *protocol.Request) protocol.Response {
	r := req.Body.(*kmsg.ListConfigResourcesRequest)
	resp := r.ResponseKind().(*kmsg.ListConfigResourcesResponse)
	if resp.ErrorCode = b.clusterAllowed(req, acl.OpDescribeConfigs); resp.ErrorCode != 0 {
		return protocol.Response{Body: resp}
	}
	if r.Version == 0 {
		return protocol.Response{Body: resp} // client metrics resources only
	}
	want := func(t int8) bool { return len(r.ResourceTypes) == 0 || slices.Contains(r.ResourceTypes, t) }
	img := b.view().img
	add := func(name string, typ int8) {
		c := kmsg.NewListConfigResourcesResponseConfigResource()
		c.Name, c.Type = name, typ
		resp.ConfigResources = append(resp.ConfigResources, c)
	}
	if want(2) {
		names := make([]string, 0, len(img.Topics))
		for name := range img.Topics {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			add(name, 2)
		}
	}
	if want(4) {
		ids := make([]int, 0, len(img.Brokers))
		for id := range img.Brokers {
			ids = append(ids, int(id))
		}
		sort.Ints(ids)
		for _, id := range ids {
			add(strconv.Itoa(id), 4)
		}
	}
	return protocol.Response{Body: resp}
}

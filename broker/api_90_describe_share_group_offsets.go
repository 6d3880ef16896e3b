package broker

// DescribeShareGroupOffsets (key 90), v0-v1: the share-partition start
// offset of each share-partition of a share group (v1: and its lag, the
// records not yet delivered to completion, KIP-1226), read from the share
// coordinator. Served by the share-group coordinator (broker/share;
// NOT_COORDINATOR elsewhere). Authorization: DESCRIBE on each group
// (GROUP_AUTHORIZATION_FAILED for the others) and on each named topic
// (TOPIC_AUTHORIZATION_FAILED per partition).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/protocol"
	"github.com/kbroker/kbroker/security/acl"
)

func (b *Broker) handleDescribeShareGroupOffsets(_ context.Context, req *protocol.Request) protocol.Response {
	r := req.Body.(*kmsg.DescribeShareGroupOffsetsRequest)
	return protocol.Response{Later: func(ctx context.Context) kmsg.Response {
		resp := r.ResponseKind().(*kmsg.DescribeShareGroupOffsetsResponse)
		for _, rg := range r.Groups {
			if code := b.groupAllowed(req, acl.OpDescribe, rg.GroupID); code != 0 {
				dg := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
				dg.GroupID, dg.ErrorCode = rg.GroupID, code
				resp.Groups = append(resp.Groups, dg)
				continue
			}
			one := *r
			one.Groups = []kmsg.DescribeShareGroupOffsetsRequestGroup{rg}
			out := b.shares.groups.DescribeShareGroupOffsets(ctx, &one).Groups
			for i := range out {
				b.filterShareOffsetTopics(req, rg.Topics != nil, &out[i])
			}
			resp.Groups = append(resp.Groups, out...)
		}
		return resp
	}}
}

// filterShareOffsetTopics answers the topics the principal may not
// DESCRIBE: TOPIC_AUTHORIZATION_FAILED when the request named them, left
// out when it asked for every topic.
func (b *Broker) filterShareOffsetTopics(req *protocol.Request, named bool, g *kmsg.DescribeShareGroupOffsetsResponseGroup) {
	if b.authz == nil {
		return
	}
	kept := g.Topics[:0]
	for _, t := range g.Topics {
		keep, code := b.fetchedTopicCheck(req, named, t.Topic)
		if !keep {
			continue
		}
		for i := range t.Partitions {
			if code != 0 {
				t.Partitions[i].ErrorCode, t.Partitions[i].StartOffset = code, -1
			}
		}
		kept = append(kept, t)
	}
	g.Topics = kept
}

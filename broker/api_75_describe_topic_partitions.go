package broker

// DescribeTopicPartitions (key 75), v0 (KIP-966).
//
// Metadata of topics' partitions, paginated: at most ResponsePartitionLimit
// partitions per answer (default 2000), resuming at Cursor, with NextCursor
// set when more remain. No topics asked for means every topic. Each
// partition carries its eligible leader replicas and last known leader
// (KIP-966: replication/controller/elr.go), the one API that shows them.

import (
	"context"
	"slices"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/protocol"
	"github.com/kbroker/kbroker/security/acl"
)

func (b *Broker) handleDescribeTopicPartitions(_ context.Context, req *protocol.Request) protocol.Response {
	r := req.Body.(*kmsg.DescribeTopicPartitionsRequest)
	resp := r.ResponseKind().(*kmsg.DescribeTopicPartitionsResponse)
	img := b.view().img
	limit := int(r.ResponsePartitionLimit)
	if limit <= 0 || limit > 2000 {
		limit = 2000
	}
	var names []string
	if len(r.Topics) == 0 {
		for name := range img.Topics {
			names = append(names, name)
		}
	} else {
		for _, t := range r.Topics {
			names = append(names, t.Topic)
		}
	}
	sort.Strings(names)
	start := 0
	if r.Cursor != nil {
		start = sort.SearchStrings(names, r.Cursor.Topic)
	}
	count := 0
	for i := start; i < len(names); i++ {
		name := names[i]
		out := kmsg.NewDescribeTopicPartitionsResponseTopic()
		out.Topic = kmsg.StringPtr(name)
		out.AuthorizedOperations = authorizedOpsOmitted
		if keep, code := b.describedTopicCheck(req, len(r.Topics) > 0, name); code != 0 || !keep {
			if keep {
				out.ErrorCode = code
				resp.Topics = append(resp.Topics, out)
			}
			continue
		}
		out.AuthorizedOperations = b.authorizedOps(req, acl.ResourceTopic, name)
		t, ok := img.Topics[name]
		if !ok {
			out.ErrorCode = kerr.UnknownTopicOrPartition.Code
			resp.Topics = append(resp.Topics, out)
			continue
		}
		out.TopicID, out.IsInternal = t.ID, isInternalTopic(name)
		first := 0
		if r.Cursor != nil && name == r.Cursor.Topic {
			first = int(r.Cursor.Partition)
		}
		for _, p := range t.Partitions[min(first, len(t.Partitions)):] {
			if count == limit {
				resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: name, Partition: p.Index}
				resp.Topics = append(resp.Topics, out)
				return protocol.Response{Body: resp}
			}
			op := kmsg.NewDescribeTopicPartitionsResponseTopicPartition()
			op.Partition, op.LeaderID, op.LeaderEpoch = p.Index, p.Leader, p.LeaderEpoch
			op.Replicas, op.ISR = slices.Clone(p.Replicas), slices.Clone(p.ISR)
			op.EligibleLeaderReplicas = append([]int32{}, p.ELR...)
			op.LastKnownELR = append([]int32{}, p.LastKnownELR...)
			op.OfflineReplicas = offlineReplicas(img, p.Replicas)
			if p.Leader < 0 {
				op.ErrorCode = kerr.LeaderNotAvailable.Code
			}
			out.Partitions = append(out.Partitions, op)
			count++
		}
		resp.Topics = append(resp.Topics, out)
	}
	return protocol.Response{Body: resp}
}

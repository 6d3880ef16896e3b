package sharestate

import (
	"context"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The five state APIs (keys 83-87), sent by share-partition leaders and
// the group coordinator to this broker when it leads the keys'
// partitions. Each takes the decoded request at the sender's version and
// returns the response at the same version; errors are per partition.
// Keys of one request are served concurrently, each on its partition's
// goroutine, so that requests for many keys share appends.

type keyedDecide struct {
	key    Key
	decide func(cur *keyState, nowMs int64) decision
}

// keyed builds one keyed decision per partition of a request, in order.
func keyed[T, P any](group string, topics []T, split func(T) ([16]byte, []P), partition func(P) int32,
	decide func(k Key, p P) func(*keyState, int64) decision) []keyedDecide {
	var out []keyedDecide
	for _, t := range topics {
		id, ps := split(t)
		for _, p := range ps {
			k := Key{Group: group, TopicID: id, Partition: partition(p)}
			out = append(out, keyedDecide{k, decide(k, p)})
		}
	}
	return out
}

// respond builds the response topics from the decisions, in request order.
func respond[T, P, RT, RP any](topics []T, split func(T) ([16]byte, []P), ds []decision,
	topic func([16]byte, []RP) RT, part func(P, decision) RP) []RT {
	out := make([]RT, 0, len(topics))
	for _, t := range topics {
		id, ps := split(t)
		rps := make([]RP, 0, len(ps))
		for _, p := range ps {
			rps = append(rps, part(p, ds[0]))
			ds = ds[1:]
		}
		out = append(out, topic(id, rps))
	}
	return out
}

// runAll decides every key on its shard and returns the decisions in order.
func (c *Coordinator) runAll(ctx context.Context, ops []keyedDecide) []decision {
	out := make([]decision, len(ops))
	var wg sync.WaitGroup
	for i, kd := range ops {
		if code, msg := checkKey(kd.key, c.opts.PartitionExists); code != 0 {
			out[i] = fail(code, msg)
			continue
		}
		s, code := c.shardFor(kd.key)
		if code != 0 {
			out[i] = fail(code, "")
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] = s.submit(ctx, &op{key: kd.key, decide: kd.decide})
		}()
	}
	wg.Wait()
	return out
}

func errMsg(d decision) *string {
	if d.code == 0 || d.msg == "" {
		return nil
	}
	return &d.msg
}

type (
	initTopic    = kmsg.InitializeShareGroupStateRequestTopic
	initPart     = kmsg.InitializeShareGroupStateRequestTopicPartition
	writeTopic   = kmsg.WriteShareGroupStateRequestTopic
	writePart    = kmsg.WriteShareGroupStateRequestTopicPartition
	readTopic    = kmsg.ReadShareGroupStateRequestTopic
	readPart     = kmsg.ReadShareGroupStateRequestTopicPartition
	deleteTopic  = kmsg.DeleteShareGroupStateRequestTopic
	deletePart   = kmsg.DeleteShareGroupStateRequestTopicPartition
	summaryTopic = kmsg.ReadShareGroupStateSummaryRequestTopic
	summaryPart  = kmsg.ReadShareGroupStateSummaryRequestTopicPartition
)

// InitializeShareGroupState handles InitializeShareGroupState v0.
func (c *Coordinator) InitializeShareGroupState(ctx context.Context, req *kmsg.InitializeShareGroupStateRequest) *kmsg.InitializeShareGroupStateResponse {
	resp := req.ResponseKind().(*kmsg.InitializeShareGroupStateResponse)
	split := func(t initTopic) ([16]byte, []initPart) { return t.TopicID, t.Partitions }
	ds := c.runAll(ctx, keyed(req.GroupID, req.Topics, split, func(p initPart) int32 { return p.Partition },
		func(k Key, p initPart) func(*keyState, int64) decision {
			return func(cur *keyState, now int64) decision {
				return decideInitialize(cur, k, p.StateEpoch, p.StartOffset, now)
			}
		}))
	resp.Topics = respond(req.Topics, split, ds,
		func(id [16]byte, ps []kmsg.InitializeShareGroupStateResponseTopicPartition) kmsg.InitializeShareGroupStateResponseTopic {
			return kmsg.InitializeShareGroupStateResponseTopic{TopicID: id, Partitions: ps}
		},
		func(p initPart, d decision) kmsg.InitializeShareGroupStateResponseTopicPartition {
			return kmsg.InitializeShareGroupStateResponseTopicPartition{Partition: p.Partition, ErrorCode: d.code, ErrorMessage: errMsg(d)}
		})
	return resp
}

// WriteShareGroupState handles WriteShareGroupState v0-v1 (v1 carries the
// delivery complete count).
func (c *Coordinator) WriteShareGroupState(ctx context.Context, req *kmsg.WriteShareGroupStateRequest) *kmsg.WriteShareGroupStateResponse {
	resp := req.ResponseKind().(*kmsg.WriteShareGroupStateResponse)
	split := func(t writeTopic) ([16]byte, []writePart) { return t.TopicID, t.Partitions }
	ds := c.runAll(ctx, keyed(req.GroupID, req.Topics, split, func(p writePart) int32 { return p.Partition },
		func(k Key, p writePart) func(*keyState, int64) decision {
			w := writeDataOf(p, req.Version)
			return func(cur *keyState, now int64) decision { return decideWrite(cur, k, w, now, c.opts.UpdatesPerSnapshot) }
		}))
	resp.Topics = respond(req.Topics, split, ds,
		func(id [16]byte, ps []kmsg.WriteShareGroupStateResponseTopicPartition) kmsg.WriteShareGroupStateResponseTopic {
			return kmsg.WriteShareGroupStateResponseTopic{TopicID: id, Partitions: ps}
		},
		func(p writePart, d decision) kmsg.WriteShareGroupStateResponseTopicPartition {
			return kmsg.WriteShareGroupStateResponseTopicPartition{Partition: p.Partition, ErrorCode: d.code, ErrorMessage: errMsg(d)}
		})
	return resp
}

func writeDataOf(p writePart, version int16) writeData {
	w := writeData{stateEpoch: p.StateEpoch, leaderEpoch: p.LeaderEpoch, startOffset: p.StartOffset, deliveryCompleteCount: unknownDeliveryComplete}
	if version >= 1 {
		w.deliveryCompleteCount = p.DeliveryCompleteCount
	}
	for _, b := range p.StateBatches {
		w.batches = append(w.batches, StateBatch{b.FirstOffset, b.LastOffset, b.DeliveryState, b.DeliveryCount})
	}
	return w
}

// ReadShareGroupState handles ReadShareGroupState v0. A reader with a newer
// leader epoch than recorded has it written before it gets the state.
func (c *Coordinator) ReadShareGroupState(ctx context.Context, req *kmsg.ReadShareGroupStateRequest) *kmsg.ReadShareGroupStateResponse {
	resp := req.ResponseKind().(*kmsg.ReadShareGroupStateResponse)
	split := func(t readTopic) ([16]byte, []readPart) { return t.TopicID, t.Partitions }
	ds := c.runAll(ctx, keyed(req.GroupID, req.Topics, split, func(p readPart) int32 { return p.Partition },
		func(k Key, p readPart) func(*keyState, int64) decision {
			return func(cur *keyState, now int64) decision {
				return decideRead(cur, k, p.LeaderEpoch, now, c.opts.UpdatesPerSnapshot)
			}
		}))
	resp.Topics = respond(req.Topics, split, ds,
		func(id [16]byte, ps []kmsg.ReadShareGroupStateResponseTopicPartition) kmsg.ReadShareGroupStateResponseTopic {
			return kmsg.ReadShareGroupStateResponseTopic{TopicID: id, Partitions: ps}
		},
		func(p readPart, d decision) kmsg.ReadShareGroupStateResponseTopicPartition {
			return readPartition(p.Partition, d)
		})
	return resp
}

func readPartition(partition int32, d decision) kmsg.ReadShareGroupStateResponseTopicPartition {
	rp := kmsg.NewReadShareGroupStateResponseTopicPartition()
	rp.Partition, rp.ErrorCode, rp.ErrorMessage = partition, d.code, errMsg(d)
	if d.code != 0 || d.state == nil {
		rp.StartOffset = uninitializedStartOffset
		return rp
	}
	rp.StateEpoch, rp.StartOffset = d.state.StateEpoch, d.state.StartOffset
	rp.StateBatches = make([]kmsg.ReadShareGroupStateResponseTopicPartitionStateBatch, 0, len(d.state.Batches))
	for _, b := range d.state.Batches {
		rp.StateBatches = append(rp.StateBatches, kmsg.ReadShareGroupStateResponseTopicPartitionStateBatch{
			FirstOffset: b.FirstOffset, LastOffset: b.LastOffset, DeliveryState: b.DeliveryState, DeliveryCount: b.DeliveryCount,
		})
	}
	return rp
}

// DeleteShareGroupState handles DeleteShareGroupState v0.
func (c *Coordinator) DeleteShareGroupState(ctx context.Context, req *kmsg.DeleteShareGroupStateRequest) *kmsg.DeleteShareGroupStateResponse {
	resp := req.ResponseKind().(*kmsg.DeleteShareGroupStateResponse)
	split := func(t deleteTopic) ([16]byte, []deletePart) { return t.TopicID, t.Partitions }
	ds := c.runAll(ctx, keyed(req.GroupID, req.Topics, split, func(p deletePart) int32 { return p.Partition },
		func(k Key, _ deletePart) func(*keyState, int64) decision {
			return func(cur *keyState, _ int64) decision { return decideDelete(cur, k) }
		}))
	resp.Topics = respond(req.Topics, split, ds,
		func(id [16]byte, ps []kmsg.DeleteShareGroupStateResponseTopicPartition) kmsg.DeleteShareGroupStateResponseTopic {
			return kmsg.DeleteShareGroupStateResponseTopic{TopicID: id, Partitions: ps}
		},
		func(p deletePart, d decision) kmsg.DeleteShareGroupStateResponseTopicPartition {
			return kmsg.DeleteShareGroupStateResponseTopicPartition{Partition: p.Partition, ErrorCode: d.code, ErrorMessage: errMsg(d)}
		})
	return resp
}

// ReadShareGroupStateSummary handles ReadShareGroupStateSummary v0-v1 (v1
// carries the delivery complete count): the start offset and epochs
// without the batches, for DescribeShareGroupOffsets.
func (c *Coordinator) ReadShareGroupStateSummary(ctx context.Context, req *kmsg.ReadShareGroupStateSummaryRequest) *kmsg.ReadShareGroupStateSummaryResponse {
	resp := req.ResponseKind().(*kmsg.ReadShareGroupStateSummaryResponse)
	split := func(t summaryTopic) ([16]byte, []summaryPart) { return t.TopicID, t.Partitions }
	ds := c.runAll(ctx, keyed(req.GroupID, req.Topics, split, func(p summaryPart) int32 { return p.Partition },
		func(Key, summaryPart) func(*keyState, int64) decision {
			return func(cur *keyState, _ int64) decision {
				s := summary(cur)
				return decision{state: &s}
			}
		}))
	resp.Topics = respond(req.Topics, split, ds,
		func(id [16]byte, ps []kmsg.ReadShareGroupStateSummaryResponseTopicPartition) kmsg.ReadShareGroupStateSummaryResponseTopic {
			return kmsg.ReadShareGroupStateSummaryResponseTopic{TopicID: id, Partitions: ps}
		}, summaryPartition)
	return resp
}

func summaryPartition(p summaryPart, d decision) kmsg.ReadShareGroupStateSummaryResponseTopicPartition {
	rp := kmsg.NewReadShareGroupStateSummaryResponseTopicPartition()
	rp.Partition, rp.ErrorCode, rp.ErrorMessage = p.Partition, d.code, errMsg(d)
	rp.StartOffset = uninitializedStartOffset
	if d.code == 0 && d.state != nil {
		rp.StateEpoch, rp.LeaderEpoch, rp.StartOffset = d.state.StateEpoch, d.state.LeaderEpoch, d.state.StartOffset
		rp.DeliveryCompleteCount = d.state.DeliveryCompleteCount
	}
	return rp
}

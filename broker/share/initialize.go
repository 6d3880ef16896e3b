package share

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Share-state initialization (KIP-932, Kafka 4.1's
// ShareGroupStatePartitionMetadata). A partition is assigned to members
// only once the share coordinator holds state for it:
//
//	subscribed, no state ──heartbeat──> initializing (record 15) ──InitializeShareGroupState──┐
//	      ^                                 (state epoch = group epoch, start offset -1       │
//	      │                                  or the offset AlterShareGroupOffsets set)        │
//	      └──── failed: dropped from initializing, retried ────────────────┬──────────────────┘
//	                                                                       v ok
//	                                   initialized (record 15) ──next heartbeat──> epoch bump, assigned
//
// DeleteShareGroupOffsets and DeleteGroups take topics through deleting.

// initializeState asks the share coordinator to initialize the given
// partitions, off the group goroutine, and records the outcome on it.
// starts holds explicit start offsets (AlterShareGroupOffsets); the others
// start at -1 (share.auto.offset.reset decides on the partition leader).
func (g *shareGroup) initializeState(topics map[[16]byte]topicInit, stateEpoch int32, starts map[tp]int64) {
	req := initRequest(g.id, topics, stateEpoch, starts)
	s, opts := g.s, g.c.opts
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		ctx, cancel := context.WithTimeout(s.ctx, opts.StateTimeout)
		codes := initializeCodes(req, callInitialize(ctx, opts.State, req))
		cancel()
		g.run(s.ctx, func() { g.completeInitialize(topics, codes) })
	}()
}

func callInitialize(ctx context.Context, st StateStore, req *kmsg.InitializeShareGroupStateRequest) *kmsg.InitializeShareGroupStateResponse {
	if st == nil {
		return nil
	}
	resp, err := st.InitializeShareGroupState(ctx, req)
	if err != nil {
		return nil
	}
	return resp
}

// initializeCodes maps every requested partition to its code (missing
// from the response, or no response: COORDINATOR_NOT_AVAILABLE).
func initializeCodes(req *kmsg.InitializeShareGroupStateRequest, resp *kmsg.InitializeShareGroupStateResponse) map[tp]int16 {
	codes := map[tp]int16{}
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			codes[tp{t.TopicID, p.Partition}] = codeCoordinatorNotAvailable
		}
	}
	if resp == nil {
		return codes
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if _, asked := codes[tp{t.TopicID, p.Partition}]; asked {
				codes[tp{t.TopicID, p.Partition}] = p.ErrorCode
			}
		}
	}
	return codes
}

// completeInitialize moves the initialized partitions from initializing
// to initialized and drops the failed ones from initializing, so that a
// later heartbeat tries them again (Kafka's initializeShareGroupState and
// uninitializeShareGroupState).
func (g *shareGroup) completeInitialize(topics map[[16]byte]topicInit, codes map[tp]int16) {
	if g.dead {
		return
	}
	s := g.state.clone()
	for _, id := range sortedIDs(topics) {
		t := topics[id]
		var ok, failed []int32
		for _, p := range t.partitions {
			if codes[tp{id, p}] == 0 {
				ok = append(ok, p)
			} else {
				failed = append(failed, p)
			}
		}
		if cur, in := s.initializing[id]; in {
			cur.partitions = slices.DeleteFunc(cur.partitions, func(p int32) bool {
				return slices.Contains(ok, p) || slices.Contains(failed, p)
			})
			if len(cur.partitions) == 0 {
				delete(s.initializing, id)
			} else {
				s.initializing[id] = cur
			}
		}
		if len(ok) > 0 {
			in := s.initialized[id]
			in.name = t.name
			in.partitions = sortedUnique(append(in.partitions, ok...))
			if in.createdMs == 0 {
				in.createdMs = g.c.opts.NowMs()
			}
			s.initialized[id] = in
		}
		if len(failed) > 0 {
			g.c.log.Warn("share: initializing share state failed", "group", g.id, "topic", t.name, "partitions", failed)
		}
	}
	if code := g.append([]Record{stateRecord(g.id, s)}); code != 0 {
		return // still initializing: retried after the retry interval
	}
	g.state = s
}

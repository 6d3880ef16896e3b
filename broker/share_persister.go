package broker

import (
	"context"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/broker/sharestate"
	"github.com/kbroker/kbroker/protocol"
)

// statePersister is the share coordinator as the share-group coordinator
// (broker/share.StateStore) and the share-partition leaders
// (broker/sharepartition.StateStore) use it, Kafka's DefaultStatePersister:
// each share-partition key goes to the leader of its __share_group_state
// partition (sharestate.PartitionFor), this broker's share coordinator
// directly or another broker's through requests 83-87. A key whose
// coordinator is moving (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE,
// COORDINATOR_LOAD_IN_PROGRESS, or no answer) is asked again after a
// backoff, looked up anew, until the caller's context ends: then the last
// error is its answer. The topic is created on first use.
//
// Every request is split into one request per key, sent concurrently: the
// keys of one request may have different coordinators, and a share-partition
// leader's reads and writes name one key anyway. A write sent again after a
// lost answer is harmless: the share coordinator merges the same batches to
// the same state.
type statePersister struct {
	s    *shares
	pool *protocol.Pool
}

const (
	stateRetryFirst = 20 * time.Millisecond
	stateRetryMax   = time.Second
)

func newStatePersister(s *shares) *statePersister {
	return &statePersister{s: s, pool: protocol.NewPool("kbroker-share-persister", 4, 64<<20, protocol.WithSecurity(s.b.sec.interBroker))}
}

func (p *statePersister) close() { p.pool.Close() }

// stateDestination is where a key's share coordinator is: here, or addr.
type stateDestination struct {
	local bool
	addr  string
}

// destination finds the share coordinator of key, creating
// __share_group_state when it does not exist yet; the code is non-zero
// (and retriable) while there is none.
func (p *statePersister) destination(ctx context.Context, key sharestate.Key) (stateDestination, int16) {
	img := p.s.b.view().img
	t, ok := img.Topics[sharestate.StateTopicName]
	if !ok {
		if err := p.s.createStateTopic(ctx); err != nil {
			p.s.log.Warn("creating the share state topic failed", "err", err)
		}
		return stateDestination{}, kerr.CoordinatorNotAvailable.Code
	}
	idx := sharestate.PartitionFor(key, p.s.b.cfg.ShareCoordinatorStateTopicPartitions)
	if int(idx) >= len(t.Partitions) {
		return stateDestination{}, kerr.CoordinatorNotAvailable.Code
	}
	leader := t.Partitions[idx].Leader
	if leader == p.s.b.cfg.NodeID {
		return stateDestination{local: true}, 0
	}
	br, ok := img.Brokers[leader]
	if leader < 0 || !ok || br.Fenced {
		return stateDestination{}, kerr.CoordinatorNotAvailable.Code
	}
	ep, ok := endpointFor(br, p.s.b.cfg.InterBrokerListenerName, p.s.b.cfg.InterBrokerListenerName)
	if !ok {
		return stateDestination{}, kerr.CoordinatorNotAvailable.Code
	}
	return stateDestination{addr: net.JoinHostPort(ep.Host, strconv.Itoa(int(ep.Port)))}, 0
}

// retriableStateCode: the key's coordinator is moving or loading.
func retriableStateCode(code int16) bool {
	switch code {
	case kerr.NotCoordinator.Code, kerr.CoordinatorNotAvailable.Code, kerr.CoordinatorLoadInProgress.Code:
		return true
	}
	return false
}

// callState sends req (one key) to the key's share coordinator until it
// answers something other than a retriable error or ctx ends, and returns
// the key's partition answer and code. part extracts them from a response
// (ok=false: the response does not hold the key).
func callState[Req kmsg.Request, Resp kmsg.Response, P any](ctx context.Context, p *statePersister, key sharestate.Key, req Req,
	local func(context.Context, Req) Resp, part func(Resp) (P, int16, bool)) (P, int16) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(p.s.ctx, cancel) // the broker is stopping
	defer stop()
	var last P
	code := kerr.CoordinatorNotAvailable.Code
	wait := stateRetryFirst
	for {
		dest, dcode := p.destination(ctx, key)
		code = dcode
		if dcode == 0 {
			code = kerr.CoordinatorNotAvailable.Code
			if resp, ok := ask(ctx, p, dest, req, local); ok {
				pr, c, found := part(resp)
				if !found {
					return pr, kerr.UnknownServerError.Code
				}
				last, code = pr, c
			}
		}
		if !retriableStateCode(code) {
			return last, code
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return last, code
		case <-t.C:
		}
		wait = min(2*wait, stateRetryMax)
	}
}

// ask sends req to dest; false when no answer came (the destination is
// down or moving: asked again).
func ask[Req kmsg.Request, Resp kmsg.Response](ctx context.Context, p *statePersister, dest stateDestination, req Req,
	local func(context.Context, Req) Resp) (Resp, bool) {
	if dest.local {
		return local(ctx, req), true
	}
	r, err := p.pool.RoundTrip(ctx, dest.addr, req)
	if err != nil {
		p.s.log.Debug("share state request failed", "key", req.Key(), "addr", dest.addr, "err", err)
		var zero Resp
		return zero, false
	}
	resp, ok := r.(Resp)
	return resp, ok
}

// forEachKey runs call for every partition of a state request
// concurrently and returns the answers in request order.
func forEachKey[T, P, R any](topics []T, split func(T) ([16]byte, []P), call func(id [16]byte, p P) R) [][]R {
	out := make([][]R, len(topics))
	var wg sync.WaitGroup
	for i, t := range topics {
		id, ps := split(t)
		out[i] = make([]R, len(ps))
		for j, pt := range ps {
			wg.Add(1)
			go func() {
				defer wg.Done()
				out[i][j] = call(id, pt)
			}()
		}
	}
	wg.Wait()
	return out
}

// stateKeyOf is the share coordinator key of a request's partition.
func stateKeyOf(group string, id [16]byte, partition int32) sharestate.Key {
	return sharestate.Key{Group: group, TopicID: id, Partition: partition}
}

// InitializeShareGroupState (83) through the key's coordinators.
func (p *statePersister) InitializeShareGroupState(ctx context.Context, req *kmsg.InitializeShareGroupStateRequest) (*kmsg.InitializeShareGroupStateResponse, error) {
	type (
		rt = kmsg.InitializeShareGroupStateRequestTopic
		rp = kmsg.InitializeShareGroupStateRequestTopicPartition
		pr = kmsg.InitializeShareGroupStateResponseTopicPartition
	)
	answers := forEachKey(req.Topics, func(t rt) ([16]byte, []rp) { return t.TopicID, t.Partitions }, func(id [16]byte, part rp) pr {
		one := kmsg.NewPtrInitializeShareGroupStateRequest()
		one.Version, one.GroupID = req.Version, req.GroupID
		one.Topics = []rt{{TopicID: id, Partitions: []rp{part}}}
		out, code := callState(ctx, p, stateKeyOf(req.GroupID, id, part.Partition), one, p.s.state.InitializeShareGroupState,
			func(r *kmsg.InitializeShareGroupStateResponse) (pr, int16, bool) {
				if len(r.Topics) == 1 && len(r.Topics[0].Partitions) == 1 {
					return r.Topics[0].Partitions[0], r.Topics[0].Partitions[0].ErrorCode, true
				}
				return pr{}, 0, false
			})
		out.Partition, out.ErrorCode = part.Partition, code
		return out
	})
	resp := req.ResponseKind().(*kmsg.InitializeShareGroupStateResponse)
	for i, t := range req.Topics {
		resp.Topics = append(resp.Topics, kmsg.InitializeShareGroupStateResponseTopic{TopicID: t.TopicID, Partitions: answers[i]})
	}
	return resp, nil
}

// ReadShareGroupState (84) through the key's coordinators.
func (p *statePersister) ReadShareGroupState(ctx context.Context, req *kmsg.ReadShareGroupStateRequest) (*kmsg.ReadShareGroupStateResponse, error) {
	type (
		rt = kmsg.ReadShareGroupStateRequestTopic
		rp = kmsg.ReadShareGroupStateRequestTopicPartition
		pr = kmsg.ReadShareGroupStateResponseTopicPartition
	)
	answers := forEachKey(req.Topics, func(t rt) ([16]byte, []rp) { return t.TopicID, t.Partitions }, func(id [16]byte, part rp) pr {
		one := kmsg.NewPtrReadShareGroupStateRequest()
		one.Version, one.GroupID = req.Version, req.GroupID
		one.Topics = []rt{{TopicID: id, Partitions: []rp{part}}}
		out, code := callState(ctx, p, stateKeyOf(req.GroupID, id, part.Partition), one, p.s.state.ReadShareGroupState,
			func(r *kmsg.ReadShareGroupStateResponse) (pr, int16, bool) {
				if len(r.Topics) == 1 && len(r.Topics[0].Partitions) == 1 {
					return r.Topics[0].Partitions[0], r.Topics[0].Partitions[0].ErrorCode, true
				}
				return pr{}, 0, false
			})
		out.Partition, out.ErrorCode = part.Partition, code
		return out
	})
	resp := req.ResponseKind().(*kmsg.ReadShareGroupStateResponse)
	for i, t := range req.Topics {
		resp.Topics = append(resp.Topics, kmsg.ReadShareGroupStateResponseTopic{TopicID: t.TopicID, Partitions: answers[i]})
	}
	return resp, nil
}

// WriteShareGroupState (85) through the key's coordinators.
func (p *statePersister) WriteShareGroupState(ctx context.Context, req *kmsg.WriteShareGroupStateRequest) (*kmsg.WriteShareGroupStateResponse, error) {
	type (
		rt = kmsg.WriteShareGroupStateRequestTopic
		rp = kmsg.WriteShareGroupStateRequestTopicPartition
		pr = kmsg.WriteShareGroupStateResponseTopicPartition
	)
	answers := forEachKey(req.Topics, func(t rt) ([16]byte, []rp) { return t.TopicID, t.Partitions }, func(id [16]byte, part rp) pr {
		one := kmsg.NewPtrWriteShareGroupStateRequest()
		one.Version, one.GroupID = req.Version, req.GroupID
		one.Topics = []rt{{TopicID: id, Partitions: []rp{part}}}
		out, code := callState(ctx, p, stateKeyOf(req.GroupID, id, part.Partition), one, p.s.state.WriteShareGroupState,
			func(r *kmsg.WriteShareGroupStateResponse) (pr, int16, bool) {
				if len(r.Topics) == 1 && len(r.Topics[0].Partitions) == 1 {
					return r.Topics[0].Partitions[0], r.Topics[0].Partitions[0].ErrorCode, true
				}
				return pr{}, 0, false
			})
		out.Partition, out.ErrorCode = part.Partition, code
		return out
	})
	resp := req.ResponseKind().(*kmsg.WriteShareGroupStateResponse)
	for i, t := range req.Topics {
		resp.Topics = append(resp.Topics, kmsg.WriteShareGroupStateResponseTopic{TopicID: t.TopicID, Partitions: answers[i]})
	}
	return resp, nil
}

// DeleteShareGroupState (86) through the key's coordinators.
func (p *statePersister) DeleteShareGroupState(ctx context.Context, req *kmsg.DeleteShareGroupStateRequest) (*kmsg.DeleteShareGroupStateResponse, error) {
	type (
		rt = kmsg.DeleteShareGroupStateRequestTopic
		rp = kmsg.DeleteShareGroupStateRequestTopicPartition
		pr = kmsg.DeleteShareGroupStateResponseTopicPartition
	)
	answers := forEachKey(req.Topics, func(t rt) ([16]byte, []rp) { return t.TopicID, t.Partitions }, func(id [16]byte, part rp) pr {
		one := kmsg.NewPtrDeleteShareGroupStateRequest()
		one.Version, one.GroupID = req.Version, req.GroupID
		one.Topics = []rt{{TopicID: id, Partitions: []rp{part}}}
		out, code := callState(ctx, p, stateKeyOf(req.GroupID, id, part.Partition), one, p.s.state.DeleteShareGroupState,
			func(r *kmsg.DeleteShareGroupStateResponse) (pr, int16, bool) {
				if len(r.Topics) == 1 && len(r.Topics[0].Partitions) == 1 {
					return r.Topics[0].Partitions[0], r.Topics[0].Partitions[0].ErrorCode, true
				}
				return pr{}, 0, false
			})
		out.Partition, out.ErrorCode = part.Partition, code
		return out
	})
	resp := req.ResponseKind().(*kmsg.DeleteShareGroupStateResponse)
	for i, t := range req.Topics {
		resp.Topics = append(resp.Topics, kmsg.DeleteShareGroupStateResponseTopic{TopicID: t.TopicID, Partitions: answers[i]})
	}
	return resp, nil
}

// ReadShareGroupStateSummary (87) through the key's coordinators.
func (p *statePersister) ReadShareGroupStateSummary(ctx context.Context, req *kmsg.ReadShareGroupStateSummaryRequest) (*kmsg.ReadShareGroupStateSummaryResponse, error) {
	type (
		rt = kmsg.ReadShareGroupStateSummaryRequestTopic
		rp = kmsg.ReadShareGroupStateSummaryRequestTopicPartition
		pr = kmsg.ReadShareGroupStateSummaryResponseTopicPartition
	)
	answers := forEachKey(req.Topics, func(t rt) ([16]byte, []rp) { return t.TopicID, t.Partitions }, func(id [16]byte, part rp) pr {
		one := kmsg.NewPtrReadShareGroupStateSummaryRequest()
		one.Version, one.GroupID = req.Version, req.GroupID
		one.Topics = []rt{{TopicID: id, Partitions: []rp{part}}}
		out, code := callState(ctx, p, stateKeyOf(req.GroupID, id, part.Partition), one, p.s.state.ReadShareGroupStateSummary,
			func(r *kmsg.ReadShareGroupStateSummaryResponse) (pr, int16, bool) {
				if len(r.Topics) == 1 && len(r.Topics[0].Partitions) == 1 {
					return r.Topics[0].Partitions[0], r.Topics[0].Partitions[0].ErrorCode, true
				}
				return pr{}, 0, false
			})
		out.Partition, out.ErrorCode = part.Partition, code
		return out
	})
	resp := req.ResponseKind().(*kmsg.ReadShareGroupStateSummaryResponse)
	for i, t := range req.Topics {
		resp.Topics = append(resp.Topics, kmsg.ReadShareGroupStateSummaryResponseTopic{TopicID: t.TopicID, Partitions: answers[i]})
	}
	return resp, nil
}

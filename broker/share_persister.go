package broker

import (
	"context"
	"net"
	"reflect"
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

// fanOutState sends every key of a state request (83-87) to its share
// coordinator, concurrently, one key a request, and assembles the answers
// in request order. The five requests and responses share one layout,
// which this walks by reflection rather than five copies of the same code:
// a request's GroupID and Topics[].TopicID/Partitions[].Partition, a
// response's Topics[].TopicID/Partitions[] with Partition and ErrorCode.
// A key with no answer gets the last retriable code with its partition
// number.
func fanOutState[Req kmsg.Request, Resp kmsg.Response](ctx context.Context, p *statePersister, req Req, local func(context.Context, Req) Resp) Resp {
	resp := req.ResponseKind().(Resp)
	rq, rs := reflect.ValueOf(req).Elem(), reflect.ValueOf(resp).Elem()
	group := rq.FieldByName("GroupID").String()
	topics := rq.FieldByName("Topics")
	out := reflect.MakeSlice(rs.FieldByName("Topics").Type(), topics.Len(), topics.Len())
	var wg sync.WaitGroup
	for i := range topics.Len() {
		t, ot := topics.Index(i), out.Index(i)
		id := t.FieldByName("TopicID").Interface().([16]byte)
		ot.FieldByName("TopicID").Set(t.FieldByName("TopicID"))
		parts := t.FieldByName("Partitions")
		answers := reflect.MakeSlice(ot.FieldByName("Partitions").Type(), parts.Len(), parts.Len())
		ot.FieldByName("Partitions").Set(answers)
		for j := range parts.Len() {
			// The same request with this key alone.
			one := reflect.New(rq.Type())
			one.Elem().Set(rq)
			oneTopic := reflect.New(t.Type()).Elem()
			oneTopic.Set(t)
			oneTopic.FieldByName("Partitions").Set(parts.Slice(j, j+1))
			oneTopics := reflect.MakeSlice(topics.Type(), 1, 1)
			oneTopics.Index(0).Set(oneTopic)
			one.Elem().FieldByName("Topics").Set(oneTopics)
			partition := int32(parts.Index(j).FieldByName("Partition").Int())
			wg.Add(1)
			go func() {
				defer wg.Done()
				key := sharestate.Key{Group: group, TopicID: id, Partition: partition}
				answer, code := callState(ctx, p, key, one.Interface().(Req), local, func(r Resp) (reflect.Value, int16, bool) {
					ts := reflect.ValueOf(r).Elem().FieldByName("Topics")
					if ts.Len() != 1 || ts.Index(0).FieldByName("Partitions").Len() != 1 {
						return reflect.Value{}, 0, false
					}
					a := ts.Index(0).FieldByName("Partitions").Index(0)
					return a, int16(a.FieldByName("ErrorCode").Int()), true
				})
				a := answers.Index(j)
				if answer.IsValid() {
					a.Set(answer)
				}
				a.FieldByName("Partition").SetInt(int64(partition))
				a.FieldByName("ErrorCode").SetInt(int64(code))
			}()
		}
	}
	wg.Wait()
	rs.FieldByName("Topics").Set(out)
	return resp
}

// InitializeShareGroupState (83) through the keys' coordinators.
func (p *statePersister) InitializeShareGroupState(ctx context.Context, req *kmsg.InitializeShareGroupStateRequest) (*kmsg.InitializeShareGroupStateResponse, error) {
	return fanOutState(ctx, p, req, p.s.state.InitializeShareGroupState), nil
}

// ReadShareGroupState (84) through the keys' coordinators.
func (p *statePersister) ReadShareGroupState(ctx context.Context, req *kmsg.ReadShareGroupStateRequest) (*kmsg.ReadShareGroupStateResponse, error) {
	return fanOutState(ctx, p, req, p.s.state.ReadShareGroupState), nil
}

// WriteShareGroupState (85) through the keys' coordinators.
func (p *statePersister) WriteShareGroupState(ctx context.Context, req *kmsg.WriteShareGroupStateRequest) (*kmsg.WriteShareGroupStateResponse, error) {
	return fanOutState(ctx, p, req, p.s.state.WriteShareGroupState), nil
}

// DeleteShareGroupState (86) through the keys' coordinators.
func (p *statePersister) DeleteShareGroupState(ctx context.Context, req *kmsg.DeleteShareGroupStateRequest) (*kmsg.DeleteShareGroupStateResponse, error) {
	return fanOutState(ctx, p, req, p.s.state.DeleteShareGroupState), nil
}

// ReadShareGroupStateSummary (87) through the keys' coordinators.
func (p *statePersister) ReadShareGroupStateSummary(ctx context.Context, req *kmsg.ReadShareGroupStateSummaryRequest) (*kmsg.ReadShareGroupStateSummaryResponse, error) {
	return fanOutState(ctx, p, req, p.s.state.ReadShareGroupStateSummary), nil
}

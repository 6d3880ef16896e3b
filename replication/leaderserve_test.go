package replication

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Test doubles of the fetcher's surroundings: a leader broker answering a
// follower's Fetch and ListOffsets from its Partition (as broker/
// api_01_fetch.go and api_02_list_offsets.go do for replica requests), a
// LeaderClient over it, and a clock with timers moved by hand.

// serveReplicaFetch answers a replica's Fetch from leader, the one
// partition this test broker holds (nil: it holds none), as
// broker/api_01_fetch.go does: the replica and its broker epoch from
// FetchReplica, topics by id from v13 (an id it does not know is
// UNKNOWN_TOPIC_ID), by name below.
func serveReplicaFetch(leader *Partition, req *kmsg.FetchRequest) *kmsg.FetchResponse {
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	replicaID, replicaEpoch := FetchReplica(req)
	var topicID [16]byte
	if leader != nil {
		topicID = leader.currentTopicID()
	}
	for _, rt := range req.Topics {
		st := kmsg.NewFetchResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		known := leader != nil && rt.Topic == leader.Topic
		if req.GetVersion() >= 13 {
			known = leader != nil && rt.TopicID == topicID
		}
		for _, rp := range rt.Partitions {
			sp := kmsg.NewFetchResponseTopicPartition()
			sp.Partition = rp.Partition
			switch {
			case !known && req.GetVersion() >= 13:
				sp.ErrorCode, sp.HighWatermark = kerr.UnknownTopicID.Code, -1
			case !known || rp.Partition != leader.Index:
				sp.ErrorCode, sp.HighWatermark = kerr.NotLeaderForPartition.Code, -1
			default:
				fillReplicaFetch(leader, replicaID, replicaEpoch, &rp, &sp)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

// currentTopicID is the partition's topic id as its metadata gave it.
func (p *Partition) currentTopicID() [16]byte {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.topicID
}

// requestOverWire and responseOverWire pass a message through Kafka's wire
// format at its version, as a connection does: a field the version does not
// carry (a v12 fetch's ReplicaState, a v2 AlterPartition's broker epochs, a
// v13+ fetch response's topic names) is lost on the way.
func requestOverWire[R kmsg.Request](req R) R {
	return overWire(req, func(key int16) R { return kmsg.RequestForKey(key).(R) })
}

func responseOverWire[R kmsg.Response](resp R) R {
	return overWire(resp, func(key int16) R { return kmsg.ResponseForKey(key).(R) })
}

// wireMessage is what kmsg requests and responses have in common.
type wireMessage interface {
	Key() int16
	GetVersion() int16
	SetVersion(int16)
	AppendTo([]byte) []byte
	ReadFrom([]byte) error
}

func overWire[M wireMessage](m M, fresh func(key int16) M) M {
	out := fresh(m.Key())
	out.SetVersion(m.GetVersion())
	if err := out.ReadFrom(m.AppendTo(nil)); err != nil {
		panic(fmt.Sprintf("%T v%d does not survive the wire: %v", m, m.GetVersion(), err))
	}
	return out
}

// fetchOverWire is a replica Fetch to leader and its answer, both over the
// wire.
func fetchOverWire(leader *Partition, req *kmsg.FetchRequest) *kmsg.FetchResponse {
	return responseOverWire(serveReplicaFetch(leader, requestOverWire(req)))
}

// listOffsetsOverWire is a replica ListOffsets to leader and its answer,
// both over the wire.
func listOffsetsOverWire(leader *Partition, req *kmsg.ListOffsetsRequest) *kmsg.ListOffsetsResponse {
	return responseOverWire(serveListOffsets(leader, requestOverWire(req)))
}

func fillReplicaFetch(leader *Partition, replicaID int32, replicaEpoch int64, rp *kmsg.FetchRequestTopicPartition, sp *kmsg.FetchResponseTopicPartition) {
	res, err := leader.UpdateFollowerAndRead(FollowerFetch{ReplicaID: replicaID, ReplicaEpoch: replicaEpoch, FetchOffset: rp.FetchOffset,
		LastFetchedEpoch: rp.LastFetchedEpoch, CurrentLeaderEpoch: rp.CurrentLeaderEpoch,
		MaxBytes: rp.PartitionMaxBytes, MinOneBatch: true})
	if res.Release != nil {
		defer res.Release()
	}
	sp.HighWatermark, sp.LastStableOffset, sp.LogStartOffset = res.HighWatermark, res.HighWatermark, res.LogStartOffset
	switch {
	case err != nil:
		sp.ErrorCode = kafkaCode(err)
		sp.HighWatermark, sp.LastStableOffset = -1, -1
	case res.Diverging != nil:
		sp.DivergingEpoch.Epoch, sp.DivergingEpoch.EndOffset = res.Diverging.Epoch, res.Diverging.EndOffset
	default:
		sp.RecordBatches = res.Data // memLog's reads are copies already (a storage.Log's would need one)
	}
}

// serveListOffsets answers a replica's ListOffsets from leader.
func serveListOffsets(leader *Partition, req *kmsg.ListOffsetsRequest) *kmsg.ListOffsetsResponse {
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewListOffsetsResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewListOffsetsResponseTopicPartition()
			sp.Partition = rp.Partition
			if leader == nil || rt.Topic != leader.Topic || rp.Partition != leader.Index {
				sp.ErrorCode = kerr.NotLeaderForPartition.Code
			} else if got, err := leader.ListOffset(rp.Timestamp, rp.CurrentLeaderEpoch, req.ReplicaID >= 0); err != nil {
				sp.ErrorCode = kafkaCode(err)
			} else {
				sp.Offset, sp.Timestamp, sp.LeaderEpoch = got.Offset, got.Timestamp, got.LeaderEpoch
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

func kafkaCode(err error) int16 {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	return kerr.UnknownServerError.Code
}

// directClient is a LeaderClient that reaches its leader's partition at
// once (leader returns nil when the leader is unreachable: the request
// fails). It counts requests and remembers being closed.
type directClient struct {
	leader func() *Partition
	down   func() bool

	mu      sync.Mutex
	fetches int
	lists   int
	closed  bool
}

var errUnreachable = errors.New("leader unreachable")

func (c *directClient) Fetch(_ context.Context, req *kmsg.FetchRequest) (*kmsg.FetchResponse, error) {
	c.mu.Lock()
	c.fetches++
	c.mu.Unlock()
	if c.down != nil && c.down() {
		return nil, errUnreachable
	}
	return fetchOverWire(c.leader(), req), nil
}

func (c *directClient) ListOffsets(_ context.Context, req *kmsg.ListOffsetsRequest) (*kmsg.ListOffsetsResponse, error) {
	c.mu.Lock()
	c.lists++
	c.mu.Unlock()
	if c.down != nil && c.down() {
		return nil, errUnreachable
	}
	return listOffsetsOverWire(c.leader(), req), nil
}

func (c *directClient) Close() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
}

func (c *directClient) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// fakeTimers is a timer source over a fakeClock: After's channels fire when
// Advance moves the clock past their deadline.
type fakeTimers struct {
	clock *fakeClock

	mu      sync.Mutex
	pending []fakeTimer
}

type fakeTimer struct {
	at time.Time
	c  chan time.Time
}

func (ft *fakeTimers) After(d time.Duration) <-chan time.Time {
	c := make(chan time.Time, 1)
	ft.mu.Lock()
	ft.pending = append(ft.pending, fakeTimer{at: ft.clock.Now().Add(d), c: c})
	ft.mu.Unlock()
	return c
}

// Advance moves the clock and fires every timer now due.
func (ft *fakeTimers) Advance(d time.Duration) {
	ft.clock.Advance(d)
	now := ft.clock.Now()
	ft.mu.Lock()
	defer ft.mu.Unlock()
	kept := ft.pending[:0]
	for _, t := range ft.pending {
		if t.at.After(now) {
			kept = append(kept, t)
			continue
		}
		t.c <- now
	}
	ft.pending = kept
}

// waiting is how many timers are pending.
func (ft *fakeTimers) waiting() int {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	return len(ft.pending)
}

package sharepartition

import (
	"context"
	"log/slog"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/broker/shareconfig"
)

// Partition is one share-partition on its topic-partition's leader
// (Kafka's SharePartition): the in-flight window of records with their
// delivery states, counts and acquisition locks, and the writes of its
// state to the share coordinator.
//
// Concurrency: mu guards the state; it is held only to decide and to
// apply, never across a state read or write or a callback. A partition
// belongs to one leader epoch of its topic-partition; a new leadership
// makes a new Partition (Manager).
type Partition struct {
	key         Key
	leaderEpoch int32
	log         Log
	opts        Options
	logger      *slog.Logger
	stats       counters

	mu         sync.Mutex // guards the following
	state      partitionState
	failCode   int16         // why the state is Failed
	ready      chan struct{} // closed when initialization ends
	stateEpoch int32
	w          window
	// writes: transitions waiting for the state write, and whether a
	// goroutine is writing (one write at a time, so the coordinator sees
	// the start offset move forward only).
	queue   []*pendingWrite
	writing bool
	// the acquisition lock timer, armed for the earliest lock expiry.
	timerStop func() bool
	timerAtMs int64
}

func newPartition(key Key, leaderEpoch int32, log Log, opts Options) *Partition {
	return &Partition{
		key: key, leaderEpoch: leaderEpoch, log: log, opts: opts,
		logger: opts.Logger.With("group", key.Group, "topic", key.Topic, "partition", key.Partition),
	}
}

func (p *Partition) config() shareconfig.Config { return p.opts.Config(p.key.Group) }

// becomeLocked makes a checked transition.
// Must be called with p.mu held.
func (p *Partition) becomeLocked(to partitionState) {
	checkPartitionTransition(p.state, to)
	p.state = to
}

// Initialize reads the share-partition's state from the share coordinator
// (ReadShareGroupState with this leader epoch) the first time it is
// called; concurrent and later callers wait for and get the same outcome.
// The code is 0 once the partition is Active.
func (p *Partition) Initialize(ctx context.Context) int16 {
	p.mu.Lock()
	switch p.state {
	case stateEmpty:
		p.becomeLocked(stateInitializing)
		p.ready = make(chan struct{})
		p.mu.Unlock()
		p.load(ctx)
	case stateInitializing:
		ready := p.ready
		p.mu.Unlock()
		select {
		case <-ready:
		case <-ctx.Done():
			return kerr.RequestTimedOut.Code
		}
	default:
		p.mu.Unlock()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stateCodeLocked()
}

// stateCodeLocked is the code a request gets for the partition's state.
// Must be called with p.mu held.
func (p *Partition) stateCodeLocked() int16 {
	switch p.state {
	case stateActive:
		return 0
	case stateFailed:
		return p.failCode
	case stateFenced:
		return kerr.NotLeaderForPartition.Code
	}
	return kerr.CoordinatorLoadInProgress.Code
}

// load does the read of Initialize.
func (p *Partition) load(ctx context.Context) {
	req := kmsg.NewPtrReadShareGroupStateRequest()
	req.GroupID = p.key.Group
	rt := kmsg.NewReadShareGroupStateRequestTopic()
	rt.TopicID = p.key.TopicID
	rp := kmsg.NewReadShareGroupStateRequestTopicPartition()
	rp.Partition, rp.LeaderEpoch = p.key.Partition, p.leaderEpoch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)

	ctx, cancel := context.WithTimeout(ctx, p.opts.WriteTimeout)
	resp, err := p.opts.Store.ReadShareGroupState(ctx, req)
	cancel()
	part, code := readResult(resp, err, p.key)

	p.mu.Lock()
	defer p.mu.Unlock()
	defer close(p.ready)
	if p.state != stateInitializing { // closed meanwhile
		return
	}
	if code != 0 {
		p.failCode = persisterCode(code)
		p.becomeLocked(stateFailed)
		p.logger.Warn("sharepartition: reading the share-partition state failed", "err", err, "code", code)
		return
	}
	p.installLocked(part)
	p.becomeLocked(stateActive)
	p.logger.Info("sharepartition: initialized", "startOffset", p.w.start, "endOffset", p.w.end(), "stateEpoch", p.stateEpoch)
}

func readResult(resp *kmsg.ReadShareGroupStateResponse, err error, k Key) (kmsg.ReadShareGroupStateResponseTopicPartition, int16) {
	if err != nil || resp == nil {
		return kmsg.ReadShareGroupStateResponseTopicPartition{}, kerr.CoordinatorNotAvailable.Code
	}
	for _, t := range resp.Topics {
		for _, rp := range t.Partitions {
			if t.TopicID == k.TopicID && rp.Partition == k.Partition {
				return rp, rp.ErrorCode
			}
		}
	}
	return kmsg.ReadShareGroupStateResponseTopicPartition{}, kerr.UnknownServerError.Code
}

// installLocked sets the window from the persisted state: the start offset
// (or where share.auto.offset.reset puts a new one) and the persisted
// batches from it on; offsets between persisted batches were never
// delivered durably and are Available with no deliveries.
// Must be called with p.mu held.
func (p *Partition) installLocked(part kmsg.ReadShareGroupStateResponseTopicPartition) {
	p.stateEpoch = part.StateEpoch
	start := part.StartOffset
	if start < 0 {
		start = p.resetOffset()
	}
	p.w = window{start: start}
	for _, b := range part.StateBatches {
		if b.LastOffset < start || b.LastOffset < b.FirstOffset {
			continue
		}
		for p.w.end()+1 < b.FirstOffset {
			p.w.push(inflight{state: Available})
		}
		for off := max(b.FirstOffset, p.w.end()+1); off <= b.LastOffset; off++ {
			p.w.push(inflight{state: persistedState(b.DeliveryState), deliveryCount: b.DeliveryCount})
		}
	}
	p.w.advance()
}

func persistedState(s int8) RecordState {
	switch RecordState(s) {
	case Acknowledged, Archived:
		return RecordState(s)
	}
	return Available // Acquired is never persisted; anything else is not ours
}

// resetOffset is the start of a share-partition without one
// (share.auto.offset.reset): earliest is the log start, latest the high
// watermark, by_duration the first offset at or after now - duration
// (latest when there is none).
func (p *Partition) resetOffset() int64 {
	r := p.config().AutoOffsetReset
	switch r.Strategy {
	case shareconfig.Earliest:
		return p.log.LogStartOffset()
	case shareconfig.ByDuration:
		ts := p.opts.NowMs() - r.Duration.Milliseconds()
		if off, ok := p.log.OffsetForTimestamp(ts); ok {
			return max(off, p.log.LogStartOffset())
		}
	}
	return p.log.HighWatermark()
}

// persisterCode maps a share coordinator error to what a client gets, as
// Kafka's SharePartition does.
func persisterCode(code int16) int16 {
	switch code {
	case kerr.NotCoordinator.Code, kerr.CoordinatorNotAvailable.Code, kerr.CoordinatorLoadInProgress.Code, kerr.RequestTimedOut.Code:
		return kerr.CoordinatorNotAvailable.Code
	case kerr.GroupIDNotFound.Code, kerr.UnknownTopicOrPartition.Code, kerr.FencedStateEpoch.Code:
		return code
	case kerr.FencedLeaderEpoch.Code:
		return kerr.NotLeaderForPartition.Code
	}
	return kerr.UnknownServerError.Code
}

// Close fences the partition: the broker lost leadership or dropped it.
// Later requests get NOT_LEADER_OR_FOLLOWER; timers stop. A write in flight
// finishes, its outcome is ignored.
func (p *Partition) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.state == stateFenced {
		return
	}
	p.becomeLocked(stateFenced) // a load in flight sees it and gives up
	if p.timerStop != nil {
		p.timerStop()
		p.timerStop = nil
	}
}

// Offsets returns the start offset (SPSO) and end offset (SPEO).
func (p *Partition) Offsets() (start, end int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.w.start, p.w.end()
}

// NextFetchOffset is where the broker reads the log for the next
// acquisition.
func (p *Partition) NextFetchOffset() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.w.nextFetchOffset()
}

// CanAcquire reports whether an acquisition could get records now: the
// partition is active and has records available in its window, or room
// for new ones below the acquisition limit (HW, or LSO for
// read_committed). A long-polling ShareFetch waits while it is false.
func (p *Partition) CanAcquire() bool {
	cfg := p.config()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.state != stateActive {
		return false
	}
	next := p.w.nextFetchOffset()
	if next <= p.w.end() {
		return true
	}
	return int64(p.w.size()) < int64(cfg.PartitionMaxRecordLocks) && next < p.acquireLimit(cfg)
}

// WaitsOn reports whether an acquisition for member can only get records
// once member itself acknowledges some: the window is full (nothing
// available, no room for new records) and member holds acquired records in
// it. A client that fetches ahead sends its acknowledgements only with its
// next request, so a long poll would wait out its whole MaxWait for
// acknowledgements stuck behind it (franz-go prefetches this way).
func (p *Partition) WaitsOn(member string) bool {
	if p.CanAcquire() {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := range p.w.size() {
		if r := p.w.rec(i); r.state == Acquired && r.member == member {
			return true
		}
	}
	return false
}

// acquireLimit is the first offset that may not be acquired.
func (p *Partition) acquireLimit(cfg shareconfig.Config) int64 {
	if cfg.ReadCommitted {
		return p.log.LastStableOffset()
	}
	return p.log.HighWatermark()
}

package replication

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/protocol"
	"github.com/kbroker/kbroker/record"
)

// FetcherOptions tune replica fetchers (Kafka's replica.fetch.* configs).
type FetcherOptions struct {
	MaxWait           time.Duration // replica.fetch.wait.max.ms
	MinBytes          int32         // replica.fetch.min.bytes
	MaxBytes          int32         // replica.fetch.response.max.bytes
	PartitionMaxBytes int32         // replica.fetch.max.bytes
	Backoff           time.Duration // replica.fetch.backoff.ms
	// LeaderAddr resolves a broker id to its inter-broker listener address.
	LeaderAddr func(brokerID int32) (string, bool)
	// BrokerEpoch is this broker's registration epoch (Fetch v15+ ReplicaState).
	BrokerEpoch func() int64
}

func (o FetcherOptions) withDefaults() FetcherOptions {
	if o.MaxWait <= 0 {
		o.MaxWait = 500 * time.Millisecond
	}
	if o.MinBytes <= 0 {
		o.MinBytes = 1
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = 10 << 20
	}
	if o.PartitionMaxBytes <= 0 {
		o.PartitionMaxBytes = 1 << 20
	}
	if o.Backoff <= 0 {
		o.Backoff = time.Second
	}
	return o
}

// fetcher pulls every partition this broker follows from one leader broker,
// batching them into one Fetch request (Kafka's ReplicaFetcherThread).
type fetcher struct {
	m      *Manager
	leader int32
	opts   FetcherOptions
	logger *slog.Logger

	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
	wake   chan struct{} // partitions added

	mu         sync.Mutex // guards partitions
	partitions map[*Partition]*fetchPartition

	client *protocol.Client // owned by the loop goroutine
}

// fetchPartition is a partition's fetch status in one fetcher.
type fetchPartition struct {
	// delayUntil backs off a partition after an error, without stalling the
	// others.
	delayUntil time.Time
}

// fetcherFor returns the fetcher for leader, starting it if needed.
func (m *Manager) fetcherFor(leader int32) *fetcher {
	m.mu.Lock()
	defer m.mu.Unlock()
	if f, ok := m.fetchers[leader]; ok {
		return f
	}
	ctx, cancel := context.WithCancel(m.ctx)
	f := &fetcher{
		m: m, leader: leader, opts: m.opts.Fetcher.withDefaults(),
		logger: m.logger.With("fetcher_leader", leader),
		ctx:    ctx, cancel: cancel, done: make(chan struct{}), wake: make(chan struct{}, 1),
		partitions: make(map[*Partition]*fetchPartition),
	}
	m.fetchers[leader] = f
	go func() {
		defer close(f.done)
		f.run()
	}()
	return f
}

func (f *fetcher) add(p *Partition) {
	f.mu.Lock()
	f.partitions[p] = &fetchPartition{}
	f.mu.Unlock()
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

func (f *fetcher) remove(p *Partition) {
	f.mu.Lock()
	delete(f.partitions, p)
	f.mu.Unlock()
}

func (f *fetcher) stop() {
	f.cancel()
	<-f.done
}

func (f *fetcher) run() {
	defer func() {
		if f.client != nil {
			f.client.Close()
		}
	}()
	for f.ctx.Err() == nil {
		req, parts := f.buildRequest()
		if len(parts) == 0 {
			select {
			case <-f.wake:
			case <-time.After(f.nextDelay()):
			case <-f.ctx.Done():
			}
			continue
		}
		resp, err := f.send(req)
		if err != nil {
			if f.ctx.Err() == nil {
				f.logger.Debug("replica fetch failed", "err", err)
				f.sleep(f.opts.Backoff)
			}
			continue
		}
		f.handleResponse(resp, parts)
	}
}

// nextDelay is how long to wait when every partition is backing off.
func (f *fetcher) nextDelay() time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	d := f.opts.Backoff
	now := time.Now()
	for _, fp := range f.partitions {
		if wait := fp.delayUntil.Sub(now); wait > 0 && wait < d {
			d = wait
		}
	}
	return d
}

func (f *fetcher) sleep(d time.Duration) {
	select {
	case <-time.After(d):
	case <-f.ctx.Done():
	}
}

// sent remembers what a fetch asked for each partition.
type sent struct {
	p     *Partition
	state FollowerFetchState
}

func (f *fetcher) buildRequest() (*kmsg.FetchRequest, map[string]map[int32]sent) {
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(12) // names, LastFetchedEpoch and DivergingEpoch
	req.ReplicaID = f.m.opts.LocalID
	req.MaxWaitMillis = int32(f.opts.MaxWait / time.Millisecond)
	req.MinBytes = f.opts.MinBytes
	req.MaxBytes = f.opts.MaxBytes
	req.SessionID = 0
	req.SessionEpoch = -1 // full fetches, no session
	parts := make(map[string]map[int32]sent)
	now := time.Now()
	f.mu.Lock()
	defer f.mu.Unlock()
	topicIdx := make(map[string]int)
	for p, fp := range f.partitions {
		st, ok := p.FetchState()
		if !ok || st.Leader != f.leader {
			delete(f.partitions, p)
			continue
		}
		if now.Before(fp.delayUntil) {
			continue
		}
		i, ok := topicIdx[p.Topic]
		if !ok {
			i = len(req.Topics)
			topicIdx[p.Topic] = i
			t := kmsg.NewFetchRequestTopic()
			t.Topic = p.Topic
			req.Topics = append(req.Topics, t)
			parts[p.Topic] = make(map[int32]sent)
		}
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition = p.Index
		rp.CurrentLeaderEpoch = st.LeaderEpoch
		rp.FetchOffset = st.FetchOffset
		rp.LastFetchedEpoch = st.LastFetchedEpoch
		rp.LogStartOffset = p.log.LogStartOffset()
		rp.PartitionMaxBytes = f.opts.PartitionMaxBytes
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
		parts[p.Topic][p.Index] = sent{p: p, state: st}
	}
	if len(req.Topics) == 0 {
		return req, nil
	}
	return req, parts
}

func (f *fetcher) send(req *kmsg.FetchRequest) (*kmsg.FetchResponse, error) {
	addr, ok := f.opts.LeaderAddr(f.leader)
	if !ok {
		return nil, fmt.Errorf("no address for broker %d", f.leader)
	}
	if f.client == nil || f.client.Addr() != addr {
		if f.client != nil {
			f.client.Close()
		}
		f.client = protocol.NewClient(addr, fmt.Sprintf("kbroker-replica-fetcher-%d", f.m.opts.LocalID))
	}
	ctx, cancel := context.WithTimeout(f.ctx, f.opts.MaxWait+30*time.Second)
	defer cancel()
	resp, err := f.client.Request(ctx, req)
	if err != nil {
		return nil, err
	}
	return resp.(*kmsg.FetchResponse), nil
}

func (f *fetcher) handleResponse(resp *kmsg.FetchResponse, parts map[string]map[int32]sent) {
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		f.logger.Warn("replica fetch refused", "err", err)
		f.sleep(f.opts.Backoff)
		return
	}
	// The response's record batches alias the client's buffer, which the
	// next request overwrites: partitions out of range (which need a
	// ListOffsets) are handled after every other one has been appended.
	var outOfRange []sent
	for _, t := range resp.Topics {
		for i := range t.Partitions {
			rp := &t.Partitions[i]
			s, ok := parts[t.Topic][rp.Partition]
			if !ok {
				continue
			}
			if errors.Is(kerr.ErrorForCode(rp.ErrorCode), kerr.OffsetOutOfRange) {
				outOfRange = append(outOfRange, s)
				continue
			}
			if err := f.handlePartition(s, rp); err != nil {
				f.backoff(s.p, err)
			}
		}
	}
	for _, s := range outOfRange {
		if err := f.handleOutOfRange(s); err != nil {
			f.backoff(s.p, err)
		}
	}
}

func (f *fetcher) handlePartition(s sent, rp *kmsg.FetchResponseTopicPartition) error {
	if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
		return err
	}
	if rp.DivergingEpoch.EndOffset >= 0 {
		return f.truncate(s, EpochEndOffset{Epoch: rp.DivergingEpoch.Epoch, EndOffset: rp.DivergingEpoch.EndOffset})
	}
	batches := record.WholeBatches(rp.RecordBatches)
	return s.p.AppendAsFollower(s.state.LeaderEpoch, batches, rp.HighWatermark, rp.LogStartOffset)
}

func (f *fetcher) truncate(s sent, leader EpochEndOffset) error {
	offset, _ := s.p.TruncationPoint(leader)
	return s.p.TruncateTo(s.state.LeaderEpoch, offset)
}

// handleOutOfRange follows Kafka's fetcher: if the leader's log ends below
// ours we truncate to it (an unclean leader); if ours ends below the leader's
// log start, we restart our log there.
func (f *fetcher) handleOutOfRange(s sent) error {
	earliest, latest, err := f.leaderOffsets(s.p, s.state.LeaderEpoch)
	if err != nil {
		return err
	}
	switch {
	case latest < s.state.FetchOffset:
		f.logger.Warn("leader's log ends below ours; truncating", "partition", s.p.String(), "leader_leo", latest)
		return s.p.TruncateTo(s.state.LeaderEpoch, latest)
	case s.state.FetchOffset < earliest:
		return s.p.ResetTo(s.state.LeaderEpoch, earliest)
	}
	return nil
}

func (f *fetcher) leaderOffsets(p *Partition, epoch int32) (earliest, latest int64, err error) {
	ask := func(ts int64) (int64, error) {
		req := kmsg.NewPtrListOffsetsRequest()
		req.SetVersion(4)
		req.ReplicaID = f.m.opts.LocalID
		t := kmsg.NewListOffsetsRequestTopic()
		t.Topic = p.Topic
		lp := kmsg.NewListOffsetsRequestTopicPartition()
		lp.Partition, lp.Timestamp, lp.CurrentLeaderEpoch = p.Index, ts, epoch
		t.Partitions = append(t.Partitions, lp)
		req.Topics = append(req.Topics, t)
		ctx, cancel := context.WithTimeout(f.ctx, 10*time.Second)
		defer cancel()
		resp, err := f.client.Request(ctx, req)
		if err != nil {
			return 0, err
		}
		r := resp.(*kmsg.ListOffsetsResponse)
		if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
			return 0, fmt.Errorf("ListOffsets: malformed answer")
		}
		rp := r.Topics[0].Partitions[0]
		if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
			return 0, err
		}
		return rp.Offset, nil
	}
	if earliest, err = ask(-2); err != nil {
		return 0, 0, err
	}
	latest, err = ask(-1)
	return earliest, latest, err
}

func (f *fetcher) backoff(p *Partition, err error) {
	d := f.opts.Backoff
	if metadataLag(err) {
		// The leader has not applied the image that made it leader (or
		// made us its follower) yet: that takes milliseconds, and waiting
		// a whole replica.fetch.backoff.ms would stall acks=all behind us.
		d = min(d, metadataLagBackoff)
	}
	f.logger.Debug("replica fetch partition error; backing off", "partition", p.String(), "err", err, "backoff", d)
	f.mu.Lock()
	if fp, ok := f.partitions[p]; ok {
		fp.delayUntil = time.Now().Add(d)
	}
	f.mu.Unlock()
}

// metadataLagBackoff is the retry delay after an error that only says the
// leader's metadata is a step behind ours.
const metadataLagBackoff = 50 * time.Millisecond

func metadataLag(err error) bool {
	return errors.Is(err, kerr.UnknownLeaderEpoch) || errors.Is(err, kerr.NotLeaderForPartition) ||
		errors.Is(err, kerr.UnknownTopicOrPartition)
}

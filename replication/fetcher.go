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
	// Client, if set, returns the connection to a leader (tests); by
	// default a protocol client to LeaderAddr(leader).
	Client func(leader int32) LeaderClient
	// Security is how the default client reaches the inter-broker
	// listener: TLS and SASL, as any client (zero: PLAINTEXT).
	Security protocol.ClientSecurity
	// Throttle is the follower side's replication throttle (throttle.go);
	// nil: none.
	Throttle *ReplicaQuota
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
//
// One round is nextRound (build the request from the partitions' fetch
// states), a Fetch through the LeaderClient, then complete (append, truncate
// or back off per partition). run loops over rounds on the fetcher's own
// goroutine; a test drives the same steps one by one. Time comes from now
// and after, never from the wall clock. A fetcher left without partitions
// asks its retire callback to take it out of the manager, then stops.
type fetcher struct {
	leader  int32
	localID int32
	opts    FetcherOptions
	client  LeaderClient // used by the loop only
	now     func() time.Time
	after   func(time.Duration) <-chan time.Time
	logger  *slog.Logger
	// retire is asked, when the fetcher holds no partition, whether it may
	// stop: true once the manager dropped it (no partition was added
	// meanwhile).
	retire func(*fetcher) bool

	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{} // closed when run returns
	wake   chan struct{} // partitions added or removed

	mu         sync.Mutex // guards partitions and the round state below
	partitions map[*Partition]*fetchPartition
	// changes collects the partitions that changed since the last round:
	// its waiter watches every partition of the fetcher (changes.go).
	changes  changeSet
	listener *Waiter
	// recheck holds the partitions a round checks whatever changed: those
	// backing off after an error and, with a throttle, those not in sync
	// (their turn depends on the time and the quota, not on an event).
	recheck map[*Partition]struct{}
	// fullCheck makes the next round check every partition (one was added
	// or removed); fullCheckAt is when one is due anyway.
	fullCheck   bool
	fullCheckAt time.Time
	// checked counts the partitions rounds checked (tests).
	checked int

	session fetchSession // used by the loop only
	// Buffers of the loop, reused by every round (a round is completed
	// before the next is built): an idle round allocates next to nothing.
	due      []sent
	changed  []*Partition
	parts    map[fetchPartKey]sent
	topicIdx map[fetchTopicKey]int
}

// fetchPartition is a partition's fetch status in one fetcher.
type fetchPartition struct {
	// delayUntil backs off a partition after an error, without stalling the
	// others.
	delayUntil time.Time
	// lag is the leader's HW less our log end after the last fetch; -1
	// before one (fetcher_throttle.go).
	lag int64
	// state is the partition's fetch state as the last round found it,
	// valid (stateOK) while the partition's version, log end and log start
	// are as then: an idle partition's is not computed again each round.
	state    FollowerFetchState
	stateOK  bool
	version  uint64
	logStart int64
	// due is whether the last round fetched the partition.
	due bool
	// warnedAt is when a local error of this partition was last logged
	// at WARN (backoff).
	warnedAt time.Time
}

// fetchState is p's fetch state (Partition.FetchState), from fp's copy when
// nothing it depends on moved (fresh false). Called with f.mu held.
func (fp *fetchPartition) fetchState(p *Partition) (st FollowerFetchState, ok, fresh bool) {
	// Load the version and log start before the state: a change after
	// them shows next round.
	version, logStart := p.version.Load(), p.log.LogStartOffset()
	if fp.stateOK && version == fp.version && logStart == fp.logStart && p.log.LogEndOffset() == fp.state.FetchOffset {
		return fp.state, true, false
	}
	st, ok = p.FetchState()
	fp.state, fp.stateOK, fp.version, fp.logStart = st, ok, version, logStart
	return st, ok, true
}

// fetcherConfig is what a fetcher is built from.
type fetcherConfig struct {
	parent  context.Context
	leader  int32
	localID int32
	opts    FetcherOptions
	client  LeaderClient
	now     func() time.Time
	after   func(time.Duration) <-chan time.Time
	logger  *slog.Logger
	retire  func(*fetcher) bool
}

func newFetcher(c fetcherConfig) *fetcher {
	ctx, cancel := context.WithCancel(c.parent)
	f := &fetcher{
		leader: c.leader, localID: c.localID, opts: c.opts.withDefaults(), client: c.client,
		now: c.now, after: c.after, logger: c.logger.With("fetcher_leader", c.leader), retire: c.retire,
		ctx: ctx, cancel: cancel, done: make(chan struct{}), wake: make(chan struct{}, 1),
		partitions: make(map[*Partition]*fetchPartition), recheck: make(map[*Partition]struct{}),
	}
	// Its channel is never read: the fetcher only wants the changes.
	f.listener = &Waiter{C: make(chan struct{}, 1), onChange: f.changes.add}
	return f
}

func (f *fetcher) add(p *Partition) {
	f.mu.Lock()
	if _, ok := f.partitions[p]; !ok {
		p.WatchOn(f.listener)
	}
	f.partitions[p] = &fetchPartition{lag: -1}
	f.fullCheck = true
	f.mu.Unlock()
	f.poke()
}

// remove drops p; a fetcher left empty is woken to retire.
func (f *fetcher) remove(p *Partition) {
	f.mu.Lock()
	f.dropLocked(p)
	empty := len(f.partitions) == 0
	f.mu.Unlock()
	if empty {
		f.poke()
	}
}

// dropLocked takes p out of the fetcher. Must be called with mu held.
func (f *fetcher) dropLocked(p *Partition) {
	if _, ok := f.partitions[p]; !ok {
		return
	}
	p.Unwatch(f.listener)
	delete(f.partitions, p)
	delete(f.recheck, p)
	f.fullCheck = true
}

func (f *fetcher) poke() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// idle reports whether the fetcher holds no partition.
func (f *fetcher) idle() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.partitions) == 0
}

// stop ends the loop and waits for it.
func (f *fetcher) stop() {
	f.cancel()
	<-f.done
}

// run is the fetcher's goroutine: rounds until the context ends or the
// fetcher retires, idle.
func (f *fetcher) run() {
	defer close(f.done)
	defer f.client.Close()
	for f.ctx.Err() == nil {
		r, ok := f.nextRound()
		if !ok {
			if f.idle() && f.retire(f) {
				f.logger.Info("replica fetcher has no partitions left; stopping")
				return
			}
			f.waitOrWake(f.nextDelay())
			continue
		}
		resp, err := f.client.Fetch(f.ctx, r.req)
		f.wait(f.complete(r, resp, err))
	}
}

// nextDelay is how long to wait when every partition is backing off.
func (f *fetcher) nextDelay() time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	d := f.opts.Backoff
	now := f.now()
	for _, fp := range f.partitions {
		if wait := fp.delayUntil.Sub(now); wait > 0 && wait < d {
			d = wait
		}
	}
	return d
}

func (f *fetcher) wait(d time.Duration) {
	if d <= 0 {
		return
	}
	select {
	case <-f.after(d):
	case <-f.ctx.Done():
	}
}

func (f *fetcher) waitOrWake(d time.Duration) {
	select {
	case <-f.wake:
	case <-f.after(d):
	case <-f.ctx.Done():
	}
}

// sent remembers what a fetch asked for each partition.
type sent struct {
	p     *Partition
	state FollowerFetchState
}

// Fetch versions a replica fetcher sends. From v13 topics go by id, and
// from v15 the replica names itself in ReplicaState with its broker epoch,
// which the leader passes on to the controller with an ISR expansion
// (KIP-903); v16 is what Kafka 3.7+ replica fetchers send and the highest
// kbroker serves. A round holding a partition whose topic id is unknown
// falls back to v12 (names, ReplicaID, no epoch), as Kafka's fetcher does.
const (
	replicaFetchVersion = 16
	namesFetchVersion   = 12
)

// fetchTopicKey names a topic of a round: by id from v13, by name below.
type fetchTopicKey struct {
	id   [16]byte
	name string
}

// fetchPartKey names a partition of a round.
type fetchPartKey struct {
	topic     fetchTopicKey
	partition int32
}

// fetchRound is one Fetch of a fetcher: the request and what it asked of
// each partition.
type fetchRound struct {
	req   *kmsg.FetchRequest
	parts map[fetchPartKey]sent
}

// keyOf is the key of a response topic: the leader answers a v13+ fetch
// by topic id only.
func (r fetchRound) keyOf(t *kmsg.FetchResponseTopic) fetchTopicKey {
	if r.req.GetVersion() >= 13 {
		return fetchTopicKey{id: t.TopicID}
	}
	return fetchTopicKey{name: t.Topic}
}

// nextRound builds the next Fetch from the partitions' fetch states; ok is
// false when no partition can be fetched now (all back off, or none is
// left).
func (f *fetcher) nextRound() (fetchRound, bool) {
	due, changed := f.duePartitions()
	if len(due) == 0 {
		return fetchRound{}, false
	}
	if !changed && f.parts != nil && f.session.incremental() {
		// The same partitions as last round, each in the same state: the
		// session's request lists nothing, and last round's partitions
		// stand for the answer.
		req := f.newFetchRequest(f.session.byID)
		f.session.unchanged(req)
		return fetchRound{req: req, parts: f.parts}, true
	}
	byID := true
	for _, s := range due {
		byID = byID && s.state.TopicID != [16]byte{}
	}
	req := f.newFetchRequest(byID)
	if f.parts == nil {
		f.parts, f.topicIdx = make(map[fetchPartKey]sent, len(due)), make(map[fetchTopicKey]int)
	}
	clear(f.parts)
	clear(f.topicIdx)
	parts, topicIdx := f.parts, f.topicIdx
	for _, s := range due {
		key := fetchTopicKey{name: s.p.Topic}
		if byID {
			key = fetchTopicKey{id: s.state.TopicID}
		}
		i, ok := topicIdx[key]
		if !ok {
			i = len(req.Topics)
			topicIdx[key] = i
			t := kmsg.NewFetchRequestTopic()
			t.Topic, t.TopicID = s.p.Topic, s.state.TopicID
			req.Topics = append(req.Topics, t)
		}
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, f.fetchPartition(s))
		parts[fetchPartKey{key, s.p.Index}] = s
	}
	f.session.build(req)
	return fetchRound{req: req, parts: parts}, true
}

// duePartitions returns the partitions to fetch now with their fetch
// states, and whether they or their states may differ from last round's
// (changed false: the same partitions, each in the same state).
// Partitions no longer following this leader are dropped.
//
// A round checks only the partitions that told the fetcher of a change
// since the last one, and those in recheck (changes.go); every partition
// after one was added or removed, and once per fullCheckInterval.
func (f *fetcher) duePartitions() (due []sent, changed bool) {
	now := f.now()
	f.changed = f.changes.take(f.changed[:0])
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fullCheck || !now.Before(f.fullCheckAt) {
		f.fullCheck, f.fullCheckAt = false, now.Add(fullCheckInterval)
		return f.checkAllLocked(now)
	}
	for _, p := range f.changed {
		if fp, ok := f.partitions[p]; ok {
			changed = f.checkLocked(p, fp, now) || changed
		}
	}
	clear(f.changed)
	for p := range f.recheck {
		if fp, ok := f.partitions[p]; ok {
			changed = f.checkLocked(p, fp, now) || changed
		} else {
			delete(f.recheck, p)
		}
	}
	if !changed {
		return f.due, false
	}
	due = f.due[:0]
	for p, fp := range f.partitions {
		if fp.due {
			due = append(due, sent{p: p, state: fp.state})
		}
	}
	f.due = due
	return due, true
}

// checkAllLocked is duePartitions checking every partition. Must be
// called with mu held.
func (f *fetcher) checkAllLocked(now time.Time) (due []sent, changed bool) {
	due = f.due[:0]
	for p, fp := range f.partitions {
		if f.checkLocked(p, fp, now) {
			changed = true
		}
		if fp.due {
			due = append(due, sent{p: p, state: fp.state})
		}
	}
	// A partition removed since (remove) changes the count, unless
	// another became due, which is a change of its own.
	changed = changed || len(due) != len(f.due)
	f.due = due
	return due, changed
}

// checkLocked brings fp, p's status, up to date: its fetch state and
// whether it is due now. It reports whether either moved (a partition no
// longer following this leader is dropped, a change too). Must be called
// with mu held.
func (f *fetcher) checkLocked(p *Partition, fp *fetchPartition, now time.Time) bool {
	f.checked++
	st, ok, fresh := fp.fetchState(p)
	if !ok || st.Leader != f.leader {
		f.dropLocked(p)
		return true
	}
	backingOff := now.Before(fp.delayUntil)
	isDue := !backingOff && !f.throttled(p, fp)
	changed := isDue != fp.due || (isDue && fresh)
	fp.due = isDue
	if backingOff || (f.opts.Throttle != nil && fp.lag != 0) {
		f.recheck[p] = struct{}{}
	} else {
		delete(f.recheck, p)
	}
	return changed
}

// newFetchRequest is a round's request without its topics.
func (f *fetcher) newFetchRequest(byID bool) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(replicaFetchVersion)
	if !byID {
		req.SetVersion(namesFetchVersion)
	}
	// Below v15 the replica names itself in ReplicaID; from v15 in
	// ReplicaState, with its broker epoch (KIP-903).
	req.ReplicaID = f.localID
	req.ReplicaState.ID, req.ReplicaState.Epoch = f.localID, -1
	if f.opts.BrokerEpoch != nil {
		req.ReplicaState.Epoch = f.opts.BrokerEpoch()
	}
	req.MaxWaitMillis = int32(f.opts.MaxWait / time.Millisecond)
	req.MinBytes = f.opts.MinBytes
	req.MaxBytes = f.opts.MaxBytes
	return req
}

func (f *fetcher) fetchPartition(s sent) kmsg.FetchRequestTopicPartition {
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition = s.p.Index
	rp.CurrentLeaderEpoch = s.state.LeaderEpoch
	rp.FetchOffset = s.state.FetchOffset
	rp.LastFetchedEpoch = s.state.LastFetchedEpoch
	rp.LogStartOffset = s.p.log.LogStartOffset()
	rp.PartitionMaxBytes = f.opts.PartitionMaxBytes
	return rp
}

// complete handles the answer to a round (or the error of sending it) and
// returns how long the fetcher waits before the next round.
func (f *fetcher) complete(r fetchRound, resp *kmsg.FetchResponse, err error) time.Duration {
	if err != nil {
		f.session.onError()
		if f.ctx.Err() == nil {
			f.logger.Debug("replica fetch failed", "err", err)
		}
		return f.opts.Backoff
	}
	f.session.onResponse(resp)
	return f.handleResponse(r, resp)
}

func (f *fetcher) handleResponse(r fetchRound, resp *kmsg.FetchResponse) time.Duration {
	if sessionError(resp.ErrorCode) {
		// The leader lost or moved on from our session (a restart, an
		// eviction): the next fetch is full and starts a new one, now.
		f.logger.Info("replica fetch session refused; starting a new one", "err", kerr.ErrorForCode(resp.ErrorCode))
		return 0
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		f.logger.Warn("replica fetch refused", "err", err)
		return f.opts.Backoff
	}
	// The response's record batches alias the client's buffer, which the
	// next request overwrites: partitions out of range (which need a
	// ListOffsets) are handled after every other one has been appended.
	var outOfRange, durable []sent
	for ti := range resp.Topics {
		t := &resp.Topics[ti]
		for i := range t.Partitions {
			rp := &t.Partitions[i]
			s, ok := r.parts[fetchPartKey{r.keyOf(t), rp.Partition}]
			if !ok {
				continue
			}
			if errors.Is(kerr.ErrorForCode(rp.ErrorCode), kerr.OffsetOutOfRange) {
				outOfRange = append(outOfRange, s)
				continue
			}
			if err := f.handlePartition(s, rp); err != nil {
				f.backoff(s.p, err)
			} else if len(rp.RecordBatches) > 0 && s.p.log.Durable() {
				durable = append(durable, s)
			}
		}
	}
	// Durable mode: the next fetch offset (our LEO) tells the leader what
	// we have on disk, so wait for the flush of everything appended. The
	// first wait joins the log dir's group commit round, which covers the
	// other partitions appended above too.
	for _, s := range durable {
		if err := s.p.log.WaitDurable(); err != nil {
			f.backoff(s.p, err)
		}
	}
	for _, s := range outOfRange {
		if err := f.handleOutOfRange(s); err != nil {
			f.backoff(s.p, err)
		}
	}
	return 0
}

func (f *fetcher) handlePartition(s sent, rp *kmsg.FetchResponseTopicPartition) error {
	if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
		return err
	}
	if rp.DivergingEpoch.EndOffset >= 0 {
		return f.truncate(s, EpochEndOffset{Epoch: rp.DivergingEpoch.Epoch, EndOffset: rp.DivergingEpoch.EndOffset})
	}
	batches := record.WholeBatches(rp.RecordBatches)
	if err := s.p.AppendAsFollower(s.state.LeaderEpoch, batches, rp.HighWatermark, rp.LogStartOffset); err != nil {
		return err
	}
	f.fetched(s.p, len(batches), rp.HighWatermark)
	return nil
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
		req.ReplicaID = f.localID
		t := kmsg.NewListOffsetsRequestTopic()
		t.Topic = p.Topic
		lp := kmsg.NewListOffsetsRequestTopicPartition()
		lp.Partition, lp.Timestamp, lp.CurrentLeaderEpoch = p.Index, ts, epoch
		t.Partitions = append(t.Partitions, lp)
		req.Topics = append(req.Topics, t)
		r, err := f.client.ListOffsets(f.ctx, req)
		if err != nil {
			return 0, err
		}
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
	var remote *kerr.Error
	local := !errors.As(err, &remote)
	now := f.now()
	warn := false
	f.mu.Lock()
	if fp, ok := f.partitions[p]; ok {
		fp.delayUntil = now.Add(d)
		f.recheck[p] = struct{}{}
		if local && (fp.warnedAt.IsZero() || now.Sub(fp.warnedAt) >= localErrorLogInterval) {
			fp.warnedAt, warn = now, true
		}
	}
	f.mu.Unlock()
	if warn {
		// A local failure (the log refusing the leader's batches, a disk
		// error) does not heal by retrying alone, and a replica stuck on
		// it stays out of the ISR: say so where an operator looks, as
		// Kafka logs a failed partition at ERROR, once per interval.
		f.logger.Warn("replica fetch of partition keeps failing here; retrying", "partition", p.String(),
			"leader", f.leader, "err", err, "backoff", d, "next_log_after", localErrorLogInterval)
		return
	}
	f.logger.Debug("replica fetch partition error; backing off", "partition", p.String(), "err", err, "backoff", d)
}

// localErrorLogInterval is how often a partition's persisting local fetch
// error is logged at WARN (each retry in between logs at DEBUG).
const localErrorLogInterval = 30 * time.Second

// metadataLagBackoff is the retry delay after an error that only says the
// leader's metadata is a step behind ours.
const metadataLagBackoff = 50 * time.Millisecond

// metadataLag reports whether err says one side's metadata is a step
// behind: the partition's epoch, leadership or topic (UNKNOWN_TOPIC_ID from
// v13, when the leader has not applied the topic's creation yet; Kafka's
// fetcher backs the partition off and retries on newer metadata, as here).
func metadataLag(err error) bool {
	return errors.Is(err, kerr.UnknownLeaderEpoch) || errors.Is(err, kerr.NotLeaderForPartition) ||
		errors.Is(err, kerr.UnknownTopicOrPartition) || errors.Is(err, kerr.UnknownTopicID)
}

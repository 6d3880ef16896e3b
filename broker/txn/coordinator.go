package txn

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Coordinator is the transaction coordinator of one broker: it serves the
// transactional ids of the __transaction_state partitions this broker
// leads.
//
// Concurrency: every transactional id has an entry whose mutex guards its
// metadata; a request takes it to decide and to prepare a transition, never
// across I/O. The state-log write runs without it, and the pending
// transition keeps other requests off the id meanwhile (they get
// CONCURRENT_TRANSACTIONS, as in Kafka). Marker writes and their completion
// run on a goroutine per completing transaction, owned by the partition's
// shard: Resign and Close cancel and wait for them. Coordinator.mu guards
// the registry of partitions and ids.
//
// Lock order: entry.mu, then Coordinator.mu. Nothing waits for an entry's
// mutex while holding Coordinator.mu.
type Coordinator struct {
	opts    Options
	log     *slog.Logger
	markers MarkerWriter
	ids     ProducerIDAllocator
	stats   stats

	mu sync.Mutex // guards the following
	// shards holds the partitions this broker leads or is loading.
	shards map[int32]*shard
	closed bool
	timers map[string]func() bool // armed periodic scans
	scans  sync.WaitGroup         // running periodic scans
}

type shardState int8

const (
	shardLoading shardState = iota // replaying: COORDINATOR_LOAD_IN_PROGRESS
	shardActive                    // serving
)

// shard is one led __transaction_state partition.
type shard struct {
	p     int32
	epoch int32 // coordinator epoch: the partition's leader epoch
	log   StateLog
	ctx   context.Context // cancelled on Resign: appends and marker writes stop
	stop  context.CancelFunc
	wg    sync.WaitGroup // transaction completions, aborts and expiries

	// guarded by Coordinator.mu:
	state   shardState
	txns    map[string]*entry
	stopped bool
}

func (s *shard) resigned() bool { return s.ctx.Err() != nil }

// entry is one transactional id on a led partition.
type entry struct {
	s  *shard // immutable
	mu sync.Mutex
	md *txnMetadata // guarded by mu
	// settled, when not nil, is closed at the next end of a pending
	// transition (its write committed or failed, a completion stopped):
	// requests that met it wait on it (awaitSettled). Guarded by mu.
	settled chan struct{}
}

// settledLocked returns the channel closed when md's pending transition
// ends. The caller holds e.mu.
func (e *entry) settledLocked() chan struct{} {
	if e.settled == nil {
		e.settled = make(chan struct{})
	}
	return e.settled
}

// wakeLocked wakes the requests waiting for the pending transition. The
// caller holds e.mu.
func (e *entry) wakeLocked() {
	if e.settled != nil {
		close(e.settled)
		e.settled = nil
	}
}

type stats struct {
	commits, aborts, timedOut, fenced, expired atomic.Int64
	// completions: their count and time in nanoseconds, from PrepareX
	// committed to the markers written and to CompleteX committed.
	completions, markerNanos, completionNanos atomic.Int64
	// waits: requests that met a pending transition and waited for it.
	waits atomic.Int64
}

// Stats are the coordinator's counters since it started.
type Stats struct {
	Open       int   // transactions Ongoing or completing on led partitions
	Commits    int64 // transactions committed (CompleteCommit written)
	Aborts     int64 // transactions aborted, timed out ones included
	TimedOut   int64 // transactions aborted by their timeout
	Fenced     int64 // producers fenced by InitProducerId or a timeout
	ExpiredIDs int64 // transactional ids expired (tombstones written)
	// Completions counts the transactions completed (CompleteX committed);
	// MarkersTime and CompletionTime sum, over them, the time from
	// PrepareX committed to every marker written and to CompleteX
	// committed. ConcurrentWaits counts the requests that met a pending
	// transition (a state write, a completion) and waited for it rather
	// than answer CONCURRENT_TRANSACTIONS at once.
	Completions, ConcurrentWaits int64
	MarkersTime, CompletionTime  time.Duration
	Partitions                   int // __transaction_state partitions served
	Transactional                int // transactional ids known
}

// NewCoordinator returns a coordinator that leads no partition yet. markers
// writes transaction markers; ids allocates producer ids. It arms the
// periodic scans for timed-out transactions and expired ids; Close stops
// them.
func NewCoordinator(markers MarkerWriter, ids ProducerIDAllocator, opts Options) *Coordinator {
	opts = opts.withDefaults()
	c := &Coordinator{
		opts: opts, log: opts.Logger.With("component", "txn"), markers: markers, ids: ids,
		shards: make(map[int32]*shard), timers: make(map[string]func() bool),
	}
	c.mu.Lock()
	c.scheduleLocked("abort-timed-out", opts.AbortTimedOutInterval, c.abortTimedOut)
	c.scheduleLocked("remove-expired", opts.RemoveExpiredInterval, c.removeExpired)
	c.mu.Unlock()
	return c
}

// PartitionFor returns the __transaction_state partition of a
// transactional id: Kafka's Utils.abs(id.hashCode()) %
// transaction.state.log.num.partitions.
func (c *Coordinator) PartitionFor(transactionalID string) int32 {
	return PartitionFor(transactionalID, c.opts.NumPartitions)
}

func (c *Coordinator) nowMs() int64 { return c.opts.Now().UnixMilli() }

var errClosed = errors.New("txn: coordinator closed")

// BecomeLeader is called when this broker becomes leader of
// __transaction_state partition p at leader epoch coordinatorEpoch. It
// replays the partition's records (the last value per id wins, tombstones
// delete), serves the ids on it, then finishes every transaction that was
// in PrepareCommit or PrepareAbort by writing its markers again. Until it
// returns, requests for those ids get COORDINATOR_LOAD_IN_PROGRESS. If p
// was led already it is unloaded first. An error from records aborts the
// load (the partition is then not served: NOT_COORDINATOR). Brokers that
// must not wait call it on a goroutine of their own (Resign may be called
// meanwhile).
func (c *Coordinator) BecomeLeader(p, coordinatorEpoch int32, log StateLog, records iter.Seq2[Record, error]) error {
	if p < 0 || p >= c.opts.NumPartitions {
		return fmt.Errorf("txn: partition %d out of range [0, %d)", p, c.opts.NumPartitions)
	}
	c.Resign(p)
	s, err := c.register(p, coordinatorEpoch, log)
	if err != nil {
		return err
	}
	loaded, err := c.replay(p, records)
	if err != nil {
		c.unregister(s)
		return fmt.Errorf("txn: loading %s-%d: %w", StateTopicName, p, err)
	}
	c.activate(s, loaded)
	return nil
}

// register adds a loading shard for partition p.
func (c *Coordinator) register(p, coordinatorEpoch int32, log StateLog) (*shard, error) {
	ctx, cancel := context.WithCancel(context.Background())
	s := &shard{p: p, epoch: coordinatorEpoch, log: log, ctx: ctx, stop: cancel, txns: make(map[string]*entry)}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		cancel()
		return nil, errClosed
	}
	c.shards[p] = s
	return s, nil
}

// unregister drops a shard whose load failed.
func (c *Coordinator) unregister(s *shard) {
	c.mu.Lock()
	if c.shards[s.p] == s {
		delete(c.shards, s.p)
	}
	c.mu.Unlock()
	s.stop()
}

// activate serves the loaded ids of s and restarts their completions.
func (c *Coordinator) activate(s *shard, loaded map[string]*txnState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.shards[s.p] != s { // resigned while loading
		return
	}
	now := c.nowMs()
	completing := 0
	for id, st := range loaded {
		e := &entry{s: s, md: &txnMetadata{id: id, txnState: *st}}
		s.txns[id] = e
		if st.state == PrepareCommit || st.state == PrepareAbort {
			// Nobody sees the entry before the shard is active: no lock.
			if c.beginCompletionLocked(e, now) != nil {
				completing++
			}
		}
	}
	s.state = shardActive
	c.log.Info("loaded transaction state partition", "partition", s.p, "coordinatorEpoch", s.epoch,
		"transactionalIds", len(loaded), "completing", completing)
}

// Resign is called when this broker stops leading partition p: its ids are
// unloaded and later requests for them get NOT_COORDINATOR. Pending writes
// are cancelled; it waits for the partition's goroutines to stop.
func (c *Coordinator) Resign(p int32) {
	c.mu.Lock()
	s, led := c.shards[p]
	if led {
		delete(c.shards, p)
		s.stopped = true
	}
	c.mu.Unlock()
	if led {
		s.stop()
		s.wg.Wait()
	}
}

// Close unloads every partition and stops every goroutine and timer the
// coordinator owns. Later BecomeLeader calls fail.
func (c *Coordinator) Close() {
	c.mu.Lock()
	c.closed = true
	for name, stop := range c.timers {
		stop()
		delete(c.timers, name)
	}
	shards := c.shards
	c.shards = make(map[int32]*shard)
	for _, s := range shards {
		s.stopped = true
	}
	c.mu.Unlock()
	c.scans.Wait()
	for _, s := range shards {
		s.stop()
		s.wg.Wait()
	}
}

// lookup finds the entry of id; create, when not nil, is added if there is
// none. The code is NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS when
// this broker does not serve id's partition; a nil entry with code 0 is an
// unknown id.
func (c *Coordinator) lookup(id string, create *txnMetadata) (*entry, int16) {
	p := c.PartitionFor(id)
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.shards[p]
	switch {
	case s == nil || s.stopped:
		return nil, codeNotCoordinator
	case s.state == shardLoading:
		return nil, codeCoordinatorLoadInProgress
	}
	e := s.txns[id]
	if e == nil && create != nil {
		e = &entry{s: s, md: create}
		s.txns[id] = e
	}
	return e, 0
}

// removeEntry drops an expired id from the registry.
func (c *Coordinator) removeEntry(e *entry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e.s.txns[e.md.id] == e {
		delete(e.s.txns, e.md.id)
	}
}

// spawnLocked runs fn on a goroutine owned by s, unless s stopped.
// Must be called with c.mu held.
func (c *Coordinator) spawnLocked(s *shard, fn func()) bool {
	if s.stopped {
		return false
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		fn()
	}()
	return true
}

func (c *Coordinator) spawn(s *shard, fn func()) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.spawnLocked(s, fn)
}

// entries returns the entries of the active shards and whether a shard is
// loading.
func (c *Coordinator) entries() (entries []*entry, loading bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.shards {
		if s.state == shardLoading {
			loading = true
			continue
		}
		entries = slices.AppendSeq(entries, maps.Values(s.txns))
	}
	return entries, loading
}

// scheduleLocked arms the periodic scan name every d.
// Must be called with c.mu held.
func (c *Coordinator) scheduleLocked(name string, d time.Duration, scan func()) {
	if c.closed {
		return
	}
	c.timers[name] = c.opts.AfterFunc(d, func() {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return
		}
		c.scans.Add(1) // Close waits for this round
		c.mu.Unlock()
		defer c.scans.Done()
		scan()
		c.mu.Lock()
		c.scheduleLocked(name, d, scan)
		c.mu.Unlock()
	})
}

// Stats returns the coordinator's counters and the open transactions now.
func (c *Coordinator) Stats() Stats {
	entries, _ := c.entries()
	st := Stats{
		Commits: c.stats.commits.Load(), Aborts: c.stats.aborts.Load(), TimedOut: c.stats.timedOut.Load(),
		Fenced: c.stats.fenced.Load(), ExpiredIDs: c.stats.expired.Load(), Transactional: len(entries),
		Completions: c.stats.completions.Load(), ConcurrentWaits: c.stats.waits.Load(),
		MarkersTime: time.Duration(c.stats.markerNanos.Load()), CompletionTime: time.Duration(c.stats.completionNanos.Load()),
	}
	for _, e := range entries {
		e.mu.Lock()
		if e.md.state.inTransaction() {
			st.Open++
		}
		e.mu.Unlock()
	}
	c.mu.Lock()
	st.Partitions = len(c.shards)
	c.mu.Unlock()
	return st
}

package group

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"sync"
	"time"
)

// Coordinator is the group coordinator of one broker: it serves the groups
// of the __consumer_offsets partitions this broker leads.
//
// Concurrency: every group has one goroutine that owns its state (members,
// offsets, timers) and runs the requests for it one at a time, including the
// Store.Append of their records; groups progress independently. The
// Coordinator's mutex only guards the registry of partitions and groups and
// is never held across I/O or channel sends. Lock order: Coordinator.mu,
// then nothing.
type Coordinator struct {
	opts Options
	log  *slog.Logger

	mu sync.Mutex // guards the following
	// shards holds the partitions this broker leads or is loading.
	shards map[int32]*shard
	closed bool
}

type shardState int8

const (
	shardLoading shardState = iota // replaying: COORDINATOR_LOAD_IN_PROGRESS
	shardActive                    // serving
)

func (s shardState) String() string {
	if s == shardLoading {
		return "Loading"
	}
	return "Active"
}

// shard is one led __consumer_offsets partition.
type shard struct {
	p      int32
	store  Store
	ctx    context.Context // cancelled on Resign: pending appends stop
	cancel context.CancelFunc
	wg     sync.WaitGroup // group goroutines and the retention timer callback

	// guarded by Coordinator.mu:
	state         shardState
	groups        map[string]*group
	stopped       bool
	stopRetention func() bool
	// txnGroups indexes the groups with pending transactional offsets by
	// producer id; completions are markers that arrived while loading
	// (txn_offsets.go).
	txnGroups   map[int64]map[string]bool
	completions []txnCompletion
}

// NewCoordinator returns a coordinator that leads no partition yet.
func NewCoordinator(opts Options) *Coordinator {
	opts = opts.withDefaults()
	return &Coordinator{opts: opts, log: opts.Logger.With("component", "group"), shards: make(map[int32]*shard)}
}

// PartitionFor returns the __consumer_offsets partition of a group (Kafka's
// abs(groupId.hashCode()) % offsets.topic.num.partitions).
func (c *Coordinator) PartitionFor(groupID string) int32 {
	return PartitionFor(groupID, c.opts.NumPartitions)
}

func (c *Coordinator) nowMs() int64 { return c.opts.Now().UnixMilli() }

// BecomeLeader is called when this broker becomes leader of
// __consumer_offsets partition p. It replays the partition's records (the
// last value per key wins, tombstones delete), then serves the groups on it.
// Until it returns, requests for those groups get
// COORDINATOR_LOAD_IN_PROGRESS. If p was led already, its groups are
// unloaded first. An error from records aborts the load: the partition is
// then not served (NOT_COORDINATOR). BecomeLeader returns once the partition
// is loaded; brokers that must not wait call it on a goroutine of their own
// (Resign may be called meanwhile).
func (c *Coordinator) BecomeLeader(p int32, store Store, records iter.Seq2[Record, error]) error {
	if p < 0 || p >= c.opts.NumPartitions {
		return fmt.Errorf("group: partition %d out of range [0, %d)", p, c.opts.NumPartitions)
	}
	c.Resign(p)
	ctx, cancel := context.WithCancel(context.Background())
	s := &shard{p: p, store: store, ctx: ctx, cancel: cancel, groups: make(map[string]*group)}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		cancel()
		return errClosed
	}
	c.shards[p] = s
	c.mu.Unlock()

	loaded, err := c.replay(p, records)
	if err != nil {
		c.mu.Lock()
		if c.shards[p] == s {
			delete(c.shards, p)
		}
		c.mu.Unlock()
		cancel()
		return fmt.Errorf("group: loading __consumer_offsets-%d: %w", p, err)
	}

	c.mu.Lock()
	if c.shards[p] != s { // resigned while loading
		c.mu.Unlock()
		return nil
	}
	for _, g := range loaded {
		g.s = s
		s.groups[g.id] = g
		for pid := range g.pendingTxn {
			if s.txnGroups == nil {
				s.txnGroups = make(map[int64]map[string]bool)
			}
			if s.txnGroups[pid] == nil {
				s.txnGroups[pid] = make(map[string]bool)
			}
			s.txnGroups[pid][g.id] = true
		}
		g.start(true)
	}
	s.state = shardActive
	c.scheduleRetentionLocked(s)
	queued := s.completions
	s.completions = nil
	c.mu.Unlock()
	c.log.Info("loaded __consumer_offsets partition", "partition", p, "groups", len(loaded))
	for _, q := range queued {
		c.CompleteTransaction(s.ctx, []int32{p}, q.pid, q.commit)
	}
	return nil
}

var errClosed = errors.New("group: coordinator closed")

// Resign is called when this broker stops leading partition p: its groups
// are unloaded; parked JoinGroup and SyncGroup requests are answered
// NOT_COORDINATOR and later requests get NOT_COORDINATOR. It waits for the
// groups' goroutines to stop.
func (c *Coordinator) Resign(p int32) {
	c.mu.Lock()
	s := c.shards[p]
	delete(c.shards, p)
	c.mu.Unlock()
	if s != nil {
		c.stopShard(s)
	}
}

func (c *Coordinator) stopShard(s *shard) {
	c.mu.Lock()
	s.stopped = true
	if s.stopRetention != nil {
		s.stopRetention()
	}
	groups := make([]*group, 0, len(s.groups))
	for _, g := range s.groups {
		groups = append(groups, g)
	}
	c.mu.Unlock()
	s.cancel()
	for _, g := range groups {
		g.stopOnce.Do(func() { close(g.stop) })
	}
	s.wg.Wait()
}

// Close unloads every partition and stops every goroutine the coordinator
// owns. Later BecomeLeader calls fail.
func (c *Coordinator) Close() {
	c.mu.Lock()
	c.closed = true
	shards := c.shards
	c.shards = make(map[int32]*shard)
	c.mu.Unlock()
	for _, s := range shards {
		c.stopShard(s)
	}
}

// groupKind says which group a lookup may create when the id is unknown.
type groupKind int8

const (
	kindNone     groupKind = iota // do not create
	kindClassic                   // JoinGroup, OffsetCommit of a simple consumer
	kindConsumer                  // ConsumerGroupHeartbeat with epoch 0
)

// lookup finds the group of id, creating it (kind) when unknown. The code is
// NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS when this broker does not
// serve the group's partition; a nil group with code 0 is an unknown group.
func (c *Coordinator) lookup(id string, create groupKind) (*group, int16) {
	p := c.PartitionFor(id)
	// Asked before c.mu is taken: the other coordinator has locks of its own.
	otherType := create != kindNone && c.opts.OtherGroupType(id) != ""
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.shards[p]
	switch {
	case s == nil || s.stopped:
		return nil, codeNotCoordinator
	case s.state == shardLoading:
		return nil, codeCoordinatorLoadInProgress
	}
	g := s.groups[id]
	if g == nil && otherType {
		return nil, codeGroupIDNotFound
	}
	if g == nil && create != kindNone {
		g = newGroup(c, s, id)
		g.fresh = true
		if create == kindClassic {
			g.classic = newClassicGroup(id, c.nowMs())
		} else {
			g.consumer = newConsumerGroup()
		}
		s.groups[id] = g
		g.start(false)
	}
	return g, 0
}

// withGroup runs fn on the goroutine of group id (created when unknown if
// create says so). fn gets nil when the group does not exist. The code is
// non-zero when the group's partition is not served here or ctx ended.
func (c *Coordinator) withGroup(ctx context.Context, id string, create groupKind, fn func(g *group)) int16 {
	for {
		g, code := c.lookup(id, create)
		if code != 0 {
			return code
		}
		if g == nil {
			fn(nil)
			return 0
		}
		if g.run(ctx, func() { fn(g) }) {
			return 0
		}
		if ctx.Err() != nil {
			return codeCoordinatorNotAvailable
		}
		// The group stopped (deleted or unloaded) before fn ran: look again.
	}
}

// GroupType returns the type of group id if this coordinator serves it
// ("classic" or "consumer"), "" otherwise (for broker/share's one type per
// id check).
func (c *Coordinator) GroupType(id string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.shards[c.PartitionFor(id)]
	if s == nil || s.groups[id] == nil {
		return ""
	}
	if sum := s.groups[id].summary.Load(); sum != nil && sum.state != "Dead" {
		return sum.groupType
	}
	return ""
}

// removeGroup drops a deleted group from the registry.
func (c *Coordinator) removeGroup(g *group) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if g.s.groups[g.id] == g {
		delete(g.s.groups, g.id)
	}
}

// activeShards returns the served partitions and whether one is loading.
func (c *Coordinator) activeShards() (groups []*group, loading bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.shards {
		if s.state == shardLoading {
			loading = true
			continue
		}
		for _, g := range s.groups {
			groups = append(groups, g)
		}
	}
	return groups, loading
}

// scheduleRetentionLocked arms the periodic offset expiration of a shard
// (offsets.retention.check.interval.ms).
// Must be called with c.mu held.
func (c *Coordinator) scheduleRetentionLocked(s *shard) {
	if s.stopped {
		return
	}
	s.stopRetention = c.opts.AfterFunc(c.opts.OffsetsRetentionCheckInterval, func() { c.runRetention(s) })
}

// runRetention asks every group of the shard to expire its offsets, then
// re-arms the timer.
func (c *Coordinator) runRetention(s *shard) {
	c.mu.Lock()
	if s.stopped {
		c.mu.Unlock()
		return
	}
	s.wg.Add(1) // Resign and Close wait for this round
	defer s.wg.Done()
	groups := make([]*group, 0, len(s.groups))
	for _, g := range s.groups {
		groups = append(groups, g)
	}
	c.mu.Unlock()
	for _, g := range groups {
		g.run(context.Background(), g.cleanupExpiredOffsets)
	}
	c.mu.Lock()
	c.scheduleRetentionLocked(s)
	c.mu.Unlock()
}

func msDuration(ms int32) time.Duration { return time.Duration(ms) * time.Millisecond }

package share

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kbroker/kbroker/broker/group"
)

// Coordinator is the share-group coordinator of one broker (the share
// part of Kafka's GroupMetadataManager): it serves the share groups of the
// __consumer_offsets partitions this broker leads, beside broker/group's
// coordinator of classic and consumer groups on the same partitions.
//
// Concurrency: every group has one goroutine that owns its state (members,
// epochs, assignment, share-state metadata, timers) and runs the requests
// for it one at a time, Store.Append included. The Coordinator's mutex
// guards only the registry of partitions and groups and is never held
// across I/O or channel sends. Lock order: Coordinator.mu, then nothing.
type Coordinator struct {
	opts Options
	log  *slog.Logger

	mu     sync.Mutex // guards the following
	shards map[int32]*shard
	closed bool
}

// shard is one led __consumer_offsets partition.
type shard struct {
	p      int32
	store  Store
	ctx    context.Context // cancelled on Resign
	cancel context.CancelFunc
	wg     sync.WaitGroup // the group goroutines and their helpers

	// guarded by Coordinator.mu:
	loading bool
	stopped bool
	groups  map[string]*shareGroup
}

// NewCoordinator returns a coordinator that leads no partition yet.
func NewCoordinator(opts Options) *Coordinator {
	opts = opts.withDefaults()
	return &Coordinator{opts: opts, log: opts.Logger.With("component", "share"), shards: make(map[int32]*shard)}
}

// PartitionFor returns the __consumer_offsets partition of a group.
func (c *Coordinator) PartitionFor(groupID string) int32 {
	return group.PartitionFor(groupID, c.opts.NumPartitions)
}

var errClosed = errors.New("share: coordinator closed")

// BecomeLeader is called when this broker becomes leader of
// __consumer_offsets partition p, with the partition's records (all of
// them: the records of other group types are skipped). It replays the
// share groups (the last value per key wins, tombstones delete), re-arms
// their session timeouts and serves them; until then their requests get
// COORDINATOR_LOAD_IN_PROGRESS.
func (c *Coordinator) BecomeLeader(p int32, store Store, records iter.Seq2[Record, error]) error {
	if p < 0 || p >= c.opts.NumPartitions {
		return fmt.Errorf("share: partition %d out of range [0, %d)", p, c.opts.NumPartitions)
	}
	c.Resign(p)
	ctx, cancel := context.WithCancel(context.Background())
	s := &shard{p: p, store: store, ctx: ctx, cancel: cancel, loading: true, groups: make(map[string]*shareGroup)}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		cancel()
		return errClosed
	}
	c.shards[p] = s
	c.mu.Unlock()

	loaded, err := c.replay(p, records)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		if c.shards[p] == s {
			delete(c.shards, p)
		}
		cancel()
		return fmt.Errorf("share: loading __consumer_offsets-%d: %w", p, err)
	}
	if c.shards[p] != s { // resigned while loading
		return nil
	}
	for _, g := range loaded {
		g.c, g.s = c, s
		s.groups[g.id] = g
		g.start(true)
	}
	s.loading = false
	c.log.Info("loaded share groups", "partition", p, "groups", len(loaded))
	return nil
}

// Resign is called when this broker stops leading partition p; it waits
// for the partition's goroutines to stop.
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
	groups := make([]*shareGroup, 0, len(s.groups))
	for _, g := range s.groups {
		groups = append(groups, g)
	}
	c.mu.Unlock()
	s.cancel()
	for _, g := range groups {
		g.actor.Stop()
	}
	s.wg.Wait()
}

// Close unloads every partition; later BecomeLeader calls fail.
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

// lookup finds the group of id, creating it when create is set. The code
// is NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS when this broker does
// not serve the group's partition; a nil group with code 0 is unknown.
func (c *Coordinator) lookup(id string, create bool) (*shareGroup, int16) {
	p := c.PartitionFor(id)
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.shards[p]
	switch {
	case s == nil || s.stopped:
		return nil, kerr.NotCoordinator.Code
	case s.loading:
		return nil, kerr.CoordinatorLoadInProgress.Code
	}
	g := s.groups[id]
	if g == nil && create {
		g = newShareGroup(c, s, id)
		s.groups[id] = g
		g.start(false)
	}
	return g, 0
}

// withGroup runs fn on the goroutine of group id (created when unknown if
// create is set); fn gets nil for an unknown group. The code is non-zero
// when the group's partition is not served here or ctx ended.
func (c *Coordinator) withGroup(ctx context.Context, id string, create bool, fn func(g *shareGroup)) int16 {
	for {
		g, code := c.lookup(id, create)
		if code != 0 {
			return code
		}
		if g == nil {
			fn(nil)
			return 0
		}
		// The summary is refreshed before the caller goes on, so that a
		// ListGroups right after a heartbeat sees the group as it left it.
		if g.run(ctx, func() { fn(g); g.refreshSummary() }) {
			return 0
		}
		if ctx.Err() != nil {
			return kerr.CoordinatorNotAvailable.Code
		}
		// The group stopped (deleted or unloaded) before fn ran: look again.
	}
}

func (c *Coordinator) removeGroup(g *shareGroup) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if g.s.groups[g.id] == g {
		delete(g.s.groups, g.id)
	}
}

// allGroups returns the served groups and whether a partition is loading.
func (c *Coordinator) allGroups() (groups []*shareGroup, loading bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.shards {
		if s.loading {
			loading = true
			continue
		}
		for _, g := range s.groups {
			groups = append(groups, g)
		}
	}
	return groups, loading
}

// GroupType reports whether this coordinator has a share group of id
// (for broker/group's one-type-per-id check): "share" or "".
func (c *Coordinator) GroupType(id string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s := c.shards[c.PartitionFor(id)]; s != nil && s.groups[id] != nil {
		if sum := s.groups[id].summary.Load(); sum != nil && sum.state != stateDead {
			return "share"
		}
	}
	return ""
}

package sharestate

import (
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"sync"
	"sync/atomic"
)

// Coordinator is the share coordinator of one broker (Kafka's
// ShareCoordinatorService and its shards): it keeps the state of the
// share-partitions whose keys fall on the __share_group_state partitions
// this broker leads, and serves the five state APIs for them.
//
// Concurrency: every led partition has one goroutine that owns its keys
// and runs the requests for them (see shard). The Coordinator's mutex only
// guards the registry of shards and is never held across I/O or channel
// sends. Lock order: Coordinator.mu, then nothing.
type Coordinator struct {
	opts    Options
	log     *slog.Logger
	metrics metrics

	mu     sync.Mutex // guards the following
	shards map[int32]*shard
	closed bool
}

type metrics struct {
	recordsWritten atomic.Int64
	pruned         atomic.Int64
}

// NewCoordinator returns a coordinator that leads no partition yet.
func NewCoordinator(opts Options) *Coordinator {
	opts = opts.withDefaults()
	return &Coordinator{opts: opts, log: opts.Logger.With("component", "sharestate"), shards: make(map[int32]*shard)}
}

// PartitionFor returns the __share_group_state partition of a key.
func (c *Coordinator) PartitionFor(k Key) int32 { return PartitionFor(k, c.opts.NumPartitions) }

func (c *Coordinator) nowMs() int64 { return c.opts.NowMs() }

// BecomeLeader is called when this broker becomes leader of
// __share_group_state partition p. It replays the partition's records in
// offset order (snapshots replace, updates merge, tombstones delete), then
// serves its keys; until then requests get COORDINATOR_LOAD_IN_PROGRESS.
// An error from records aborts the load and the partition is not served.
// Records that do not decode are skipped with a log line.
func (c *Coordinator) BecomeLeader(p int32, log StateLog, records iter.Seq2[LoggedRecord, error]) error {
	if p < 0 || p >= c.opts.NumPartitions {
		return fmt.Errorf("sharestate: partition %d out of range [0, %d)", p, c.opts.NumPartitions)
	}
	c.Resign(p)
	s := newShard(c, p, log)
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		s.cancel()
		return errClosed
	}
	c.shards[p] = s
	c.mu.Unlock()

	if err := c.replay(s, records); err != nil {
		c.dropShard(s)
		return fmt.Errorf("sharestate: loading %s-%d: %w", StateTopicName, p, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.shards[p] != s { // resigned while loading
		return nil
	}
	s.start()
	c.log.Info("loaded share state partition", "partition", p, "keys", len(s.states), "logEnd", s.logEnd)
	return nil
}

func (c *Coordinator) replay(s *shard, records iter.Seq2[LoggedRecord, error]) error {
	var skipped, corrupt int
	now := c.nowMs()
	for r, err := range records {
		if err != nil {
			return err
		}
		s.logEnd = max(s.logEnd, r.Offset+1)
		sr, err := decodeRecord(r.Record)
		switch {
		case errors.Is(err, errUnknownRecordType):
			skipped++
			continue
		case err != nil:
			corrupt++
			c.log.Error("sharestate: skipping corrupt record", "partition", s.p, "offset", r.Offset, "err", err)
			continue
		}
		s.applyLogged(sr, r.Offset, now)
	}
	if skipped > 0 || corrupt > 0 {
		c.log.Warn("sharestate: records not loaded", "partition", s.p, "unknown", skipped, "corrupt", corrupt)
	}
	return nil
}

func (c *Coordinator) dropShard(s *shard) {
	c.mu.Lock()
	if c.shards[s.p] == s {
		delete(c.shards, s.p)
	}
	c.mu.Unlock()
	s.cancel()
}

// Resign is called when this broker stops leading partition p: its keys
// are unloaded, a pending append is cancelled and its requests get
// NOT_COORDINATOR. It waits for the partition's goroutine to stop.
func (c *Coordinator) Resign(p int32) {
	c.mu.Lock()
	s := c.shards[p]
	delete(c.shards, p)
	c.mu.Unlock()
	if s != nil {
		s.unload()
	}
}

// Close unloads every partition; later BecomeLeader calls fail.
func (c *Coordinator) Close() {
	c.mu.Lock()
	c.closed = true
	shards := c.shards
	c.shards = make(map[int32]*shard)
	c.mu.Unlock()
	for _, s := range shards {
		s.unload()
	}
}

// shardFor finds the shard serving k; the code is NOT_COORDINATOR or
// COORDINATOR_LOAD_IN_PROGRESS when this broker does not serve it.
func (c *Coordinator) shardFor(k Key) (*shard, int16) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.shards[c.PartitionFor(k)]
	switch {
	case s == nil:
		return nil, codeNotCoordinator
	case !s.active.Load():
		return nil, codeCoordinatorLoadInProgress
	}
	return s, 0
}

// Stats are the coordinator's counters for metrics.
type Stats struct {
	Partitions     int   // led and loaded
	RecordsWritten int64 // since start
	RecordsPruned  int64 // offsets deleted by pruning, since start
}

// Stats returns the coordinator's counters.
func (c *Coordinator) Stats() Stats {
	c.mu.Lock()
	n := 0
	for _, s := range c.shards {
		if s.active.Load() {
			n++
		}
	}
	c.mu.Unlock()
	return Stats{Partitions: n, RecordsWritten: c.metrics.recordsWritten.Load(), RecordsPruned: c.metrics.pruned.Load()}
}

package replication

import (
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kbroker/kbroker/storage"
)

// Partition is this broker's replica of one partition: its log and, by role,
// the leader's view of its followers or the follower's view of its leader.
// Its role changes only through the transitions of roles.go.
//
// Lock rules. Two locks, always taken in this order: roleMu, then mu, then
// the log's own locks (storage.Log's and its EpochCache's). The watchers'
// lock is a leaf. Neither partition lock is held across network I/O or
// while calling proposeISR or onISRChange (they reach the manager), and mu
// is never held across a log call that may fsync, msync or delete files
// (appends, truncation, log start moves, epoch checkpoint writes).
//
//   - mu guards the replica state fields below it. Read them with mu held
//     for reading; change them with mu held for writing.
//   - The high watermark moves with mu held for writing: the leader's in
//     maybeAdvanceHWLocked, a follower's in AppendAsFollower. Storage also
//     lowers it when a truncation cuts below it (under roleMu, below).
//   - roleMu pins the role and leader epoch across log work that may block
//     on disk. Appends (leader and follower), TruncateTo, ResetTo and log
//     start moves (DeleteRecordsBefore, a follower following its leader)
//     hold it for reading: they check role and epoch under mu, release mu,
//     then call the log. Transitions hold it for writing, so none happens
//     in the middle of such a call; MakeLeader writes the new epoch's
//     checkpoint with roleMu held and mu released, so readers go on while
//     no batch of the new epoch can be appended before its start offset is
//     durable.
//   - The log end offset and the log start offset move only inside the log:
//     the end by appends and truncation (under roleMu), the start by log
//     start moves (under roleMu) and by retention (storage's own loop, no
//     partition lock).
//   - Reads of the log take mu for reading when the answer must match the
//     role and epoch (fetches, ListOffsets, OffsetForLeaderEpoch).
type Partition struct {
	Topic   string
	Index   int32
	localID int32
	log     ReplicaLog
	now     func() time.Time
	logger  *slog.Logger
	// proposeISR hands an ISR change to the manager's AlterPartition sender.
	proposeISR func(*Partition, AlterISR)
	// onISRChange is told of every committed ISR change this leader made
	// (metrics: ISR shrinks and expands).
	onISRChange func(p *Partition, shrink bool)
	// leaderAppends, when set, must be open for this replica to take an
	// append as leader (PartitionOptions.LeaderAppends).
	leaderAppends *LeaderAppendGate

	// roleMu pins role and leaderEpoch across slow log work (see above).
	roleMu sync.RWMutex

	mu sync.RWMutex // guards the fields below
	// topicID is the topic's id in the controller's image.
	topicID [16]byte
	// role is written only by transitionLocked.
	role Role
	// leader is the current leader's broker id, -1 when none is known.
	leader int32
	// leaderEpoch is the epoch of the current leadership; requests from a
	// client or follower carrying another epoch are fenced or refused.
	leaderEpoch int32
	// leaderEpochStartOffset is the leader's LEO when it took this epoch: a
	// follower must reach it before joining the ISR.
	leaderEpochStartOffset int64
	// partitionEpoch versions the ISR/assignment at the controller; an
	// AlterPartition carries it.
	partitionEpoch int32
	replicas       []int32
	isr            isrState
	// followers is the leader's view of every other replica (leader only).
	followers map[int32]*FollowerProgress
	// minISR is min.insync.replicas for this topic.
	minISR int32
	// isrRetryAfter holds off new ISR proposals after the controller refused
	// one, so a leader whose epoch is being fenced does not spin.
	isrRetryAfter time.Time

	watchers watchers // woken on append, HW move, role change

	// version counts the changes of role, leader epoch, ISR and follower
	// states (bumpVersionLocked, under mu): an idle mark stands while it is
	// unchanged (idle.go).
	version atomic.Uint64
}

// PartitionOptions configure a new Partition.
type PartitionOptions struct {
	LocalID     int32
	Now         func() time.Time
	Logger      *slog.Logger
	ProposeISR  func(*Partition, AlterISR)
	OnISRChange func(p *Partition, shrink bool)
	// LeaderAppends, if set, holds every append as leader (refused with
	// NOT_LEADER_OR_FOLLOWER) until it is opened: a broker's manager holds
	// them until the broker serves (ManagerOptions.HoldLeaderAppends).
	LeaderAppends *LeaderAppendGate
}

// NewPartition wraps a log (a *storage.Log in a broker). The partition
// starts with no role (RoleNone).
func NewPartition(topic string, index int32, log ReplicaLog, opts PartitionOptions) *Partition {
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	p := &Partition{
		Topic: topic, Index: index, localID: opts.LocalID, log: log, now: now,
		logger:     logger.With("topic", topic, "partition", index),
		proposeISR: opts.ProposeISR, onISRChange: opts.OnISRChange, leaderAppends: opts.LeaderAppends,
		leader: -1, minISR: 1,
	}
	p.watchers.owner = p
	log.SetFlushListener(p.logFlushed)
	log.SetLogStartListener(p.watchers.changed)
	return p
}

// logFlushed runs after a group commit flushed the log (durable mode): the
// leader's own copy counts for the HW only from then on.
func (p *Partition) logFlushed() {
	p.mu.Lock()
	moved := p.maybeAdvanceHWLocked()
	p.mu.Unlock()
	if moved {
		p.watchers.notify(HighWatermarkMoved)
	}
}

// localEnd is the leader's own contribution to the HW: its log end offset,
// or in durable mode (flush.messages=1) the end of what is on disk, so that
// acks=all is answered only once every ISR member has the batch fsynced
// (followers report flushed data only: their fetcher waits for the flush
// before the next fetch, whose offset is their LEO).
func (p *Partition) localEnd() int64 {
	if p.log.Durable() {
		return p.log.DurableEnd()
	}
	return p.log.LogEndOffset()
}

// Log returns the partition's storage log, nil when the partition runs on
// another ReplicaLog (the simulator's).
func (p *Partition) Log() *storage.Log {
	l, _ := p.log.(*storage.Log)
	return l
}

// String names the partition for logs.
func (p *Partition) String() string { return fmt.Sprintf("%s-%d", p.Topic, p.Index) }

// Snapshot is a consistent view of a partition's replica state.
type Snapshot struct {
	Role           Role
	TopicID        [16]byte
	Leader         int32
	LeaderEpoch    int32
	PartitionEpoch int32
	Replicas       []int32
	ISR            []int32 // committed
	MaximalISR     []int32
	HighWatermark  int64
	LogEndOffset   int64
	LogStartOffset int64
	// LastStableOffset is the LSO: read_committed consumers read below it.
	LastStableOffset int64
	MinISR           int32 // effective: min.insync.replicas capped at the replica count
	LogSize          int64
	Segments         int
	// FollowerLEOs is each follower's LEO as the leader last saw it (-1:
	// not fetched yet); leader only.
	FollowerLEOs map[int32]int64
}

// Snapshot returns the current state.
func (p *Partition) Snapshot() Snapshot {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return Snapshot{
		Role: p.role, TopicID: p.topicID, Leader: p.leader, LeaderEpoch: p.leaderEpoch,
		PartitionEpoch: p.partitionEpoch,
		Replicas:       slices.Clone(p.replicas), ISR: slices.Clone(p.isr.committed),
		MaximalISR:    slices.Clone(p.isr.maximal()),
		HighWatermark: p.log.HighWatermark(), LogEndOffset: p.log.LogEndOffset(),
		LogStartOffset: p.log.LogStartOffset(), LastStableOffset: p.log.LastStableOffset(), MinISR: p.effectiveMinISRLocked(),
		LogSize: p.log.Size(), Segments: p.log.NumSegments(),
		FollowerLEOs: p.followerLEOsLocked(),
	}
}

func (p *Partition) followerLEOsLocked() map[int32]int64 {
	if p.role != RoleLeader {
		return nil
	}
	out := make(map[int32]int64, len(p.followers))
	for id, f := range p.followers {
		out[id] = f.LEO
	}
	return out
}

// Watch wakes w whenever the partition's LEO, HW or role changes (those of
// them w asked for), until the returned function is called.
func (p *Partition) Watch(w *Waiter) (stop func()) {
	p.watchers.add(w)
	return func() { p.watchers.remove(w) }
}

// WatchOn is Watch for callers on a hot path, which stop with Unwatch
// rather than through a closure.
func (p *Partition) WatchOn(w *Waiter) { p.watchers.add(w) }

// Unwatch stops waking w (WatchOn).
func (p *Partition) Unwatch(w *Waiter) { p.watchers.remove(w) }

// SetMinISR applies a new min.insync.replicas (a dynamic topic config).
func (p *Partition) SetMinISR(n int32) {
	p.mu.Lock()
	p.minISR = max(n, 1)
	p.bumpVersionLocked()
	p.maybeAdvanceHWLocked()
	p.mu.Unlock()
	p.watchers.notify(HighWatermarkMoved)
}

// effectiveMinISRLocked is min.insync.replicas capped at the replica count.
// Must be called with mu held.
func (p *Partition) effectiveMinISRLocked() int32 {
	return EffectiveMinISR(p.minISR, len(p.replicas))
}

// checkEpochLocked validates a request's current leader epoch (-1: not given).
func (p *Partition) checkEpochLocked(current int32) error {
	switch {
	case current < 0 || current == p.leaderEpoch:
		return nil
	case current < p.leaderEpoch:
		return kerr.FencedLeaderEpoch
	default:
		return kerr.UnknownLeaderEpoch
	}
}

// Offsets returns the HW, LEO and log start offset.
func (p *Partition) Offsets() (hw, leo, logStart int64) {
	return p.log.HighWatermark(), p.log.LogEndOffset(), p.log.LogStartOffset()
}

// LeaderEpoch returns the current leader epoch and leader id.
func (p *Partition) LeaderEpoch() (epoch, leader int32) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.leaderEpoch, p.leader
}

// Role returns the current role.
func (p *Partition) Role() Role {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.role
}

// maybeAdvanceHWLocked recomputes the leader's HW. Must be called with mu
// held for writing. Returns whether it moved.
func (p *Partition) maybeAdvanceHWLocked() bool {
	if p.role != RoleLeader {
		return false
	}
	maximal := p.isr.maximal()
	leos := make(map[int32]int64, len(maximal))
	for _, id := range maximal {
		if id == p.localID {
			leos[id] = p.localEnd()
		} else if f, ok := p.followers[id]; ok && f.LEO >= 0 {
			leos[id] = f.LEO
		}
	}
	cur := p.log.HighWatermark()
	hw := HighWatermark(cur, p.isr.committed, maximal, leos, p.effectiveMinISRLocked())
	if hw == cur {
		return false
	}
	p.log.SetHighWatermark(hw)
	return true
}

package replication

import (
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kbroker/kbroker/storage"
)

// Partition is this broker's replica of one partition: its log and, by role,
// the leader's view of its followers or the follower's view of its leader.
//
// Concurrency: mu guards the replica state below. Appends and reads take mu
// for reading (the log serialises appends itself), so the role and epoch
// cannot change under them; role changes, follower progress and HW moves
// take it for writing. Lock order: mu, then the log's own locks. mu is never
// held across network I/O.
type Partition struct {
	Topic   string
	Index   int32
	localID int32
	log     *storage.Log
	now     func() time.Time
	logger  *slog.Logger
	// proposeISR hands an ISR change to the manager's AlterPartition sender.
	proposeISR func(*Partition, AlterISR)
	// onISRChange is told of every committed ISR change this leader made
	// (metrics: ISR shrinks and expands).
	onISRChange func(p *Partition, shrink bool)

	mu sync.RWMutex // guards the fields below
	// topicID is the topic's id in the controller's image.
	topicID [16]byte
	role    Role
	// leader is the current leader's broker id, -1 when none.
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
}

// PartitionOptions configure a new Partition.
type PartitionOptions struct {
	LocalID     int32
	Now         func() time.Time
	Logger      *slog.Logger
	ProposeISR  func(*Partition, AlterISR)
	OnISRChange func(p *Partition, shrink bool)
}

// NewPartition wraps a log. The partition starts with no role.
func NewPartition(topic string, index int32, log *storage.Log, opts PartitionOptions) *Partition {
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Partition{
		Topic: topic, Index: index, localID: opts.LocalID, log: log, now: now,
		logger:     logger.With("topic", topic, "partition", index),
		proposeISR: opts.ProposeISR, onISRChange: opts.OnISRChange,
		leader: -1, minISR: 1,
	}
}

// Log returns the partition's log.
func (p *Partition) Log() *storage.Log { return p.log }

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
	MinISR         int32
	LogSize        int64
	Segments       int
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
		LogStartOffset: p.log.LogStartOffset(), MinISR: p.minISR,
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

// Watch wakes w whenever the partition's LEO, HW or role changes, until the
// returned function is called.
func (p *Partition) Watch(w *Waiter) (stop func()) { return p.watchers.add(w) }

// SetMinISR applies a new min.insync.replicas (a dynamic topic config).
func (p *Partition) SetMinISR(n int32) {
	p.mu.Lock()
	p.minISR = max(n, 1)
	p.maybeAdvanceHWLocked()
	p.mu.Unlock()
	p.watchers.notify()
}

// MakeLeader makes this broker the leader for st.LeaderEpoch. It is a no-op
// for an epoch already applied, except that a newer partition epoch updates
// the ISR and assignment (the controller changed them, e.g. fencing a
// follower).
func (p *Partition) MakeLeader(st PartitionState, minISR int32) error {
	p.mu.Lock()
	defer p.watchers.notify()
	defer p.mu.Unlock()
	p.minISR = max(minISR, 1)
	if p.role == RoleLeader && st.LeaderEpoch == p.leaderEpoch {
		p.applyPartitionEpochLocked(st)
		return nil
	}
	if st.LeaderEpoch < p.leaderEpoch {
		return fmt.Errorf("%s: stale leader epoch %d < %d", p, st.LeaderEpoch, p.leaderEpoch)
	}
	leo := p.log.LogEndOffset()
	// Kafka's makeLeader: the new epoch starts at our LEO.
	if err := p.log.EpochCache().Assign(st.LeaderEpoch, leo); err != nil {
		return fmt.Errorf("%s: recording leader epoch %d: %w", p, st.LeaderEpoch, err)
	}
	p.role = RoleLeader
	p.topicID = st.TopicID
	p.leader = p.localID
	p.leaderEpoch = st.LeaderEpoch
	p.leaderEpochStartOffset = leo
	p.partitionEpoch = st.PartitionEpoch
	p.replicas = slices.Clone(st.Replicas)
	p.isr = isrState{committed: slices.Clone(st.ISR)}
	// Every follower's LEO is unknown until it fetches from us; until then the
	// HW holds (HighWatermark treats missing LEOs so).
	now := p.now()
	p.followers = make(map[int32]*FollowerProgress, len(st.Replicas))
	for _, id := range st.Replicas {
		if id != p.localID {
			// A member of the ISR gets a full lag period to show up.
			p.followers[id] = &FollowerProgress{ID: id, LEO: -1, LastCaughtUp: now}
		}
	}
	p.logger.Info("became leader", "leader_epoch", st.LeaderEpoch, "partition_epoch", st.PartitionEpoch,
		"isr", st.ISR, "replicas", st.Replicas, "leo", leo, "hw", p.log.HighWatermark())
	p.maybeAdvanceHWLocked()
	return nil
}

// applyPartitionEpochLocked takes a newer ISR/assignment from the controller
// for the current leadership. Must be called with mu held.
func (p *Partition) applyPartitionEpochLocked(st PartitionState) {
	if st.PartitionEpoch <= p.partitionEpoch {
		return
	}
	p.partitionEpoch = st.PartitionEpoch
	p.replicas = slices.Clone(st.Replicas)
	p.isr = isrState{committed: slices.Clone(st.ISR)}
	now := p.now()
	for _, id := range st.Replicas {
		if _, ok := p.followers[id]; !ok && id != p.localID && p.role == RoleLeader {
			p.followers[id] = &FollowerProgress{ID: id, LEO: -1, LastCaughtUp: now}
		}
	}
	p.maybeAdvanceHWLocked()
}

// MakeFollower makes this broker a follower of st.Leader (or leaderless, when
// st.Leader is -1). It returns true when the leader or epoch changed, so the
// caller (re)starts fetching and truncation.
func (p *Partition) MakeFollower(st PartitionState) (bool, error) {
	p.mu.Lock()
	defer p.watchers.notify()
	defer p.mu.Unlock()
	if st.LeaderEpoch < p.leaderEpoch {
		return false, fmt.Errorf("%s: stale leader epoch %d < %d", p, st.LeaderEpoch, p.leaderEpoch)
	}
	changed := p.role != RoleFollower || st.LeaderEpoch != p.leaderEpoch || st.Leader != p.leader
	p.topicID = st.TopicID
	p.partitionEpoch = max(p.partitionEpoch, st.PartitionEpoch)
	p.replicas = slices.Clone(st.Replicas)
	p.isr = isrState{committed: slices.Clone(st.ISR)}
	if !changed {
		return false, nil
	}
	p.role = RoleFollower
	if st.Leader < 0 {
		p.role = RoleNone
	}
	p.leader = st.Leader
	p.leaderEpoch = st.LeaderEpoch
	p.followers = nil
	p.logger.Info("became follower", "leader", st.Leader, "leader_epoch", st.LeaderEpoch,
		"leo", p.log.LogEndOffset(), "hw", p.log.HighWatermark())
	return true, nil
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
			leos[id] = p.log.LogEndOffset()
		} else if f, ok := p.followers[id]; ok && f.LEO >= 0 {
			leos[id] = f.LEO
		}
	}
	cur := p.log.HighWatermark()
	hw := HighWatermark(cur, maximal, leos, p.minISR)
	if hw == cur {
		return false
	}
	p.log.SetHighWatermark(hw)
	return true
}

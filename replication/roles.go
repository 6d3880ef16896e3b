package replication

import (
	"errors"
	"fmt"
	"slices"
)

// Replica role transitions (state.go lists the legal ones). Every change of
// role goes through transitionLocked; MakeLeader, MakeFollower and
// makeOffline decide whether one is due and apply the controller's state
// around it. An illegal transition is an error, not a panic: it comes from
// a caller racing with Manager.Remove (a state applied to a partition just
// taken offline), which the broker logs and survives.

// errIllegalTransition is wrapped by a transition out of RoleOffline.
var errIllegalTransition = errors.New("illegal replica role transition")

// transitionLocked is the one place the role is written. It returns the
// previous role. Must be called with roleMu and mu held for writing.
func (p *Partition) transitionLocked(to Role, leader, epoch int32) (Role, error) {
	from := p.role
	if !to.validPrevious(from) {
		return from, fmt.Errorf("%s: %w %s -> %s", p, errIllegalTransition, from, to)
	}
	p.role, p.leader, p.leaderEpoch = to, leader, epoch
	p.bumpVersionLocked()
	return from, nil
}

// MakeLeader makes this broker the leader for st.LeaderEpoch. It is a no-op
// for an epoch already applied, except that a newer partition epoch updates
// the ISR and assignment (the controller changed them, e.g. fencing a
// follower).
func (p *Partition) MakeLeader(st PartitionState, minISR int32) error {
	p.roleMu.Lock()
	defer p.roleMu.Unlock()
	defer p.watchers.notify(AllEvents)
	start, err := p.leaderEpochStart(st, minISR)
	if err != nil || start < 0 {
		return err
	}
	// Kafka's makeLeader: the new epoch starts at our LEO. Its checkpoint is
	// written (fsynced) with roleMu held and mu released: nothing can append
	// or truncate meanwhile, readers still run.
	if err := p.log.EpochCache().Assign(st.LeaderEpoch, start); err != nil {
		return fmt.Errorf("%s: recording leader epoch %d: %w", p, st.LeaderEpoch, err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.becomeLeaderLocked(st, start)
}

// leaderEpochStart checks a leadership and returns the offset its epoch
// starts at, or -1 when no transition is due (the epoch is applied already).
// Must be called with roleMu held for writing.
func (p *Partition) leaderEpochStart(st PartitionState, minISR int32) (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.minISR = max(minISR, 1)
	switch {
	case !RoleLeader.validPrevious(p.role):
		return -1, fmt.Errorf("%s: %w %s -> %s", p, errIllegalTransition, p.role, RoleLeader)
	case p.role == RoleLeader && st.LeaderEpoch == p.leaderEpoch:
		p.applyPartitionEpochLocked(st)
		return -1, nil
	case st.LeaderEpoch < p.leaderEpoch:
		return -1, fmt.Errorf("%s: stale leader epoch %d < %d", p, st.LeaderEpoch, p.leaderEpoch)
	}
	return p.log.LogEndOffset(), nil
}

// becomeLeaderLocked takes the leadership of st, whose epoch starts at leo.
// Must be called with roleMu and mu held for writing.
func (p *Partition) becomeLeaderLocked(st PartitionState, leo int64) error {
	from, err := p.transitionLocked(RoleLeader, p.localID, st.LeaderEpoch)
	if err != nil {
		return err
	}
	p.topicID = st.TopicID
	p.leaderEpochStartOffset = leo
	p.partitionEpoch = st.PartitionEpoch
	p.replicas = slices.Clone(st.Replicas)
	p.isr = isrState{committed: slices.Clone(st.ISR)}
	// Every follower's LEO is unknown until it fetches from us; until then the
	// HW holds (HighWatermark treats missing LEOs so).
	now := p.now()
	p.dropIdleMarksLocked()
	p.followers = make(map[int32]*FollowerProgress, len(st.Replicas))
	for _, id := range st.Replicas {
		if id != p.localID {
			// A member of the ISR gets a full lag period to show up.
			p.followers[id] = &FollowerProgress{ID: id, LEO: -1, LastCaughtUp: now, BrokerEpoch: -1}
		}
	}
	p.logger.Info("became leader", "from", from, "leader_epoch", st.LeaderEpoch, "partition_epoch", st.PartitionEpoch,
		"isr", st.ISR, "replicas", st.Replicas, "leo", leo, "hw", p.log.HighWatermark())
	p.maybeAdvanceHWLocked()
	return nil
}

// applyPartitionEpochLocked takes a newer ISR/assignment from the controller
// for the current leadership. Must be called with mu held for writing.
func (p *Partition) applyPartitionEpochLocked(st PartitionState) {
	if st.PartitionEpoch <= p.partitionEpoch {
		return
	}
	p.partitionEpoch = st.PartitionEpoch
	p.replicas = slices.Clone(st.Replicas)
	p.isr = isrState{committed: slices.Clone(st.ISR)}
	p.bumpVersionLocked()
	now := p.now()
	for _, id := range st.Replicas {
		if _, ok := p.followers[id]; !ok && id != p.localID && p.role == RoleLeader {
			p.followers[id] = &FollowerProgress{ID: id, LEO: -1, LastCaughtUp: now, BrokerEpoch: -1}
		}
	}
	p.maybeAdvanceHWLocked()
}

// MakeFollower makes this broker a follower of st.Leader (-1: no leader is
// known; the replica waits for the next election). It returns true when the
// leader or epoch changed, so the caller (re)starts fetching and truncation.
func (p *Partition) MakeFollower(st PartitionState) (bool, error) {
	p.roleMu.Lock()
	defer p.roleMu.Unlock()
	p.mu.Lock()
	defer p.watchers.notify(AllEvents)
	defer p.mu.Unlock()
	if st.LeaderEpoch < p.leaderEpoch {
		return false, fmt.Errorf("%s: stale leader epoch %d < %d", p, st.LeaderEpoch, p.leaderEpoch)
	}
	if !RoleFollower.validPrevious(p.role) {
		return false, fmt.Errorf("%s: %w %s -> %s", p, errIllegalTransition, p.role, RoleFollower)
	}
	changed := p.role != RoleFollower || st.LeaderEpoch != p.leaderEpoch || st.Leader != p.leader
	p.topicID = st.TopicID
	p.partitionEpoch = max(p.partitionEpoch, st.PartitionEpoch)
	p.replicas = slices.Clone(st.Replicas)
	p.isr = isrState{committed: slices.Clone(st.ISR)}
	p.bumpVersionLocked()
	if !changed {
		return false, nil
	}
	return true, p.becomeFollowerLocked(st)
}

// becomeFollowerLocked follows st.Leader at st.LeaderEpoch. Must be called
// with roleMu and mu held for writing.
func (p *Partition) becomeFollowerLocked(st PartitionState) error {
	from, err := p.transitionLocked(RoleFollower, st.Leader, st.LeaderEpoch)
	if err != nil {
		return err
	}
	p.dropIdleMarksLocked()
	p.followers = nil
	p.logger.Info("became follower", "from", from, "leader", st.Leader, "leader_epoch", st.LeaderEpoch,
		"leo", p.log.LogEndOffset(), "hw", p.log.HighWatermark())
	return nil
}

// makeOffline stops the replica for good (Manager.Remove): every request
// gets NOT_LEADER_OR_FOLLOWER from then on and waiters are woken.
func (p *Partition) makeOffline() error {
	p.roleMu.Lock()
	defer p.roleMu.Unlock()
	p.mu.Lock()
	defer p.watchers.notify(AllEvents)
	defer p.mu.Unlock()
	return p.becomeOfflineLocked()
}

// becomeOfflineLocked drops the leader's and follower's state. Must be
// called with roleMu and mu held for writing.
func (p *Partition) becomeOfflineLocked() error {
	from, err := p.transitionLocked(RoleOffline, -1, p.leaderEpoch)
	if err != nil {
		return err
	}
	p.dropIdleMarksLocked()
	p.followers = nil
	p.isr = isrState{committed: p.isr.committed}
	p.logger.Info("went offline", "from", from, "leader_epoch", p.leaderEpoch,
		"leo", p.log.LogEndOffset(), "hw", p.log.HighWatermark())
	return nil
}

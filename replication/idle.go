package replication

import (
	"sync"
	"sync/atomic"
	"time"
)

// Idle partitions of a follower's incremental fetch session (issue 20,
// part 3: the idle cost of 10,000 partitions).
//
// Kafka's leader handles every partition of a follower's incremental fetch
// (IncrementalFetchContext walks the whole session, and each partition goes
// through Partition.updateFollowerFetchState and a read), so an idle
// cluster spends CPU per partition per replica fetch: about 3,300
// partitions twice a second per follower at 10,000 partitions, RF 3. kbroker
// skips the partitions that have nothing to tell the follower and nothing
// to learn from it.
//
// A partition is idle for a follower's session when a fetch of the session
// found the follower's fetch offset at the leader's log end offset, the
// follower in the committed ISR with no ISR change in flight, and nothing to
// answer. The leader then hands the session an IdleMark: the log end, high
// watermark and log start offsets it saw and the partition's state version
// (role, leader epoch, ISR: bumped by every change of them). While they are
// all unchanged, another fetch with the same parameters would find the
// follower caught up, move nothing (HW, ISR) and answer nothing new, and
// the last stable offset cannot have moved either (it moves only with the HW,
// appends, truncation and the log start). So the session skips the partition
// (IdleMark.Unchanged: a few atomic loads) until the follower lists it again
// with new parameters, forgets it, or the mark changes. A fetch does not
// check every mark: the partitions tell the session which of its marks may
// have changed (FollowerSession.Changed, changes.go), and a fetch checks
// those, so that an idle fetch costs nothing per partition.
//
// The caught-up time. Kafka advances a caught-up follower's lastCaughtUpTime
// on every fetch, per partition, and the ISR shrinks on
// replica.lag.time.max.ms of it. A skipped partition is caught up at each
// fetch of the session that skips it, so the session records the time of
// its fetches once for all of them (FollowerSession.Fetched, the time the
// fetch began, before its partitions were checked), and the follower's
// state in the partition points at the session while the mark stands: its
// last caught-up time is the later of its own and the session's last fetch
// (FollowerProgress.lastCaughtUp), computed when the ISR check asks. The
// mark is dropped, the session's time folded in, whenever the partition is
// not skipped: before a fetch of the session that reads it (the session
// releases it before calling Fetched), when the follower's fetch is
// observed through another session or none, when the session forgets the
// partition or ends, and when the leader's follower states are reset (a
// role or epoch change). A session that stops fetching stops its clock, so a
// follower that goes away still leaves the ISR replica.lag.time.max.ms after
// its last fetch.
//
// Wake-ups. A long poll that skipped its idle partitions must still answer
// as soon as one of them gets records or a new HW. The session's waiter is
// registered with each partition it holds a mark on, for as long as the
// mark stands, rather than per long poll: an idle fetch registers nothing.
// The fetch path drains it when a fetch begins (FollowerSession.Begin) and,
// woken, checks the session's skipped partitions again.

// FollowerSession is the leader's side of one follower's incremental fetch
// session, as far as replication is concerned: the time of its last fetch,
// which stands as the caught-up time of every partition it skips, and the
// waiter its idle partitions wake. Begin and Fetched are called by the
// session's fetches, one at a time.
type FollowerSession struct {
	now    func() time.Time
	waiter *Waiter
	// lastFetch is the start time (UnixNano) of the session's last fetch
	// that checked its idle partitions; 0 before one.
	lastFetch atomic.Int64

	mu      sync.Mutex // guards pending
	pending time.Time  // the start of the fetch in progress

	// The marks the session holds, by partition, and those that may have
	// changed since the session last asked (Changed): told by the
	// partitions through the waiter's onChange and by releases
	// (changes.go). A leaf lock.
	marksMu sync.Mutex
	marks   map[*Partition]*IdleMark
	changed []*IdleMark
}

// NewFollowerSession returns the state of a new follower session; now is
// the clock (nil: time.Now), the same as the partitions'.
func NewFollowerSession(now func() time.Time) *FollowerSession {
	if now == nil {
		now = time.Now
	}
	s := &FollowerSession{now: now, waiter: NewWaiterFor(LogEndMoved | HighWatermarkMoved), marks: make(map[*Partition]*IdleMark)}
	s.waiter.onChange = s.partitionChanged
	return s
}

// partitionChanged notes that the session's mark on p, if any, may no
// longer be Unchanged.
func (s *FollowerSession) partitionChanged(p *Partition) {
	s.marksMu.Lock()
	if m := s.marks[p]; m != nil {
		s.changed = append(s.changed, m)
	}
	s.marksMu.Unlock()
}

// hold records m as the session's mark on its partition.
func (s *FollowerSession) hold(m *IdleMark) {
	s.marksMu.Lock()
	s.marks[m.p] = m
	s.marksMu.Unlock()
}

// recheck notes m as changed if it already is: called once m is held and
// the session's waiter registered with its partition, after which every
// change is told (partitionChanged); one between the mark's reading of the
// partition and then was not.
func (s *FollowerSession) recheck(m *IdleMark) {
	if !m.Unchanged() {
		s.marksMu.Lock()
		s.changed = append(s.changed, m)
		s.marksMu.Unlock()
	}
}

// released notes that m was released: the session reads its partition
// again (if it still holds it, see Changed).
func (s *FollowerSession) released(m *IdleMark) {
	s.marksMu.Lock()
	if s.marks[m.p] == m {
		delete(s.marks, m.p)
	}
	s.changed = append(s.changed, m)
	s.marksMu.Unlock()
}

// Changed appends to out the marks of the session that may have changed
// or been released since the last call (each to be checked with
// Unchanged): an idle fetch checks these instead of every mark.
func (s *FollowerSession) Changed(out []*IdleMark) []*IdleMark {
	s.marksMu.Lock()
	out = append(out, s.changed...)
	clear(s.changed)
	s.changed = s.changed[:0]
	s.marksMu.Unlock()
	return out
}

// Begin starts a fetch of the session, before its idle partitions are
// checked: it takes the fetch's time and drops earlier wake-ups (the check
// sees what they announced).
func (s *FollowerSession) Begin() {
	s.mu.Lock()
	s.pending = s.now()
	s.mu.Unlock()
	select {
	case <-s.waiter.C:
	default:
	}
}

// Fetched records the fetch begun last as a fetch at which every partition
// still holding a mark of the session was caught up: called once the fetch
// has checked its idle partitions and released the marks of those it reads.
func (s *FollowerSession) Fetched() {
	s.mu.Lock()
	t := s.pending.UnixNano()
	s.mu.Unlock()
	for {
		cur := s.lastFetch.Load()
		if t <= cur || s.lastFetch.CompareAndSwap(cur, t) {
			return
		}
	}
}

// Woken delivers when a partition the session holds a mark on may have
// moved (an append, an HW move, a role change).
func (s *FollowerSession) Woken() <-chan struct{} { return s.waiter.C }

// lastFetchTime is the start of the session's last fetch, zero before one.
func (s *FollowerSession) lastFetchTime() time.Time {
	if ns := s.lastFetch.Load(); ns != 0 {
		return time.Unix(0, ns)
	}
	return time.Time{}
}

// IdleMark is a partition a follower's session may skip while it is
// Unchanged (see the top of this file). Its methods are safe for
// concurrent use.
type IdleMark struct {
	p *Partition
	s *FollowerSession
	f *FollowerProgress
	// What the follower's fetch saw, which a skipped fetch would see again.
	logEnd, highWatermark, logStart int64
	version                         uint64
	released                        atomic.Bool
}

// Unchanged reports whether the partition is as the mark saw it: a fetch
// of the session may skip it, and the follower counts as caught up at that
// fetch.
func (m *IdleMark) Unchanged() bool {
	return !m.released.Load() && m.p.version.Load() == m.version && m.p.log.LogEndOffset() == m.logEnd &&
		m.p.log.HighWatermark() == m.highWatermark && m.p.log.LogStartOffset() == m.logStart
}

// Release drops the mark: the session reads the partition again (or no
// longer fetches it). The session's last fetch counts as a caught-up time
// of the follower.
func (m *IdleMark) Release() {
	if m.released.Load() {
		return
	}
	m.p.mu.Lock()
	m.p.releaseIdleLocked(m.f, m)
	m.p.mu.Unlock()
}

// bumpVersionLocked records a change of role, leader epoch, ISR or
// follower states: every idle mark of the partition stops being Unchanged.
// Must be called with mu held for writing.
func (p *Partition) bumpVersionLocked() { p.bumpVersion() }

// bumpVersion is bumpVersionLocked for the follower's truncation paths,
// which hold roleMu but not mu: the version is atomic, and the change is
// told to the partition's change listeners (changes.go).
func (p *Partition) bumpVersion() {
	p.version.Add(1)
	p.watchers.changed()
}

// idleLocked reports whether follower f, whose fetch at fetchOffset was
// just observed, is idle: at the leader's log end leo and in the committed
// ISR with no change in flight. Must be called with mu held.
func (p *Partition) idleLocked(f *FollowerProgress, fetchOffset, leo int64) bool {
	if fetchOffset != leo || p.isr.kind != isrCommitted {
		return false
	}
	for _, id := range p.isr.committed {
		if id == f.ID {
			return true
		}
	}
	return false
}

// markIdleLocked gives s a mark on follower f of this partition, seen at
// log end leo. f holds no mark (takeIdle). Must be called with mu held for
// writing; rewatchIdleLocked follows.
func (p *Partition) markIdleLocked(f *FollowerProgress, s *FollowerSession, leo int64) *IdleMark {
	m := &IdleMark{p: p, s: s, f: f, logEnd: leo, highWatermark: p.log.HighWatermark(),
		logStart: p.log.LogStartOffset(), version: p.version.Load()}
	f.idle = m
	s.hold(m)
	return m
}

// rewatchIdleLocked moves the registration of a follower's idle wake-ups
// from the session of its previous mark (prev, nil: none) to that of its
// new one (nil: none). Must be called with mu held.
func (p *Partition) rewatchIdleLocked(prev *FollowerSession, m *IdleMark) {
	switch {
	case m == nil && prev != nil:
		p.watchers.remove(prev.waiter)
	case m != nil && prev != m.s:
		if prev != nil {
			p.watchers.remove(prev.waiter)
		}
		p.watchers.add(m.s.waiter)
	}
}

// releaseIdleLocked drops m, if it is f's mark, folding the session's last
// fetch into f's caught-up time. Must be called with mu held for writing.
func (p *Partition) releaseIdleLocked(f *FollowerProgress, m *IdleMark) {
	m.released.Store(true)
	m.s.released(m)
	if f.idle != m {
		return
	}
	f.foldIdle()
	p.watchers.remove(m.s.waiter)
}

// dropIdleMarksLocked releases every follower's mark, before the follower
// states are replaced or dropped. Must be called with mu held for writing.
func (p *Partition) dropIdleMarksLocked() {
	for _, f := range p.followers {
		if f.idle != nil {
			p.releaseIdleLocked(f, f.idle)
		}
	}
	p.bumpVersionLocked()
}

package fetchsession

import (
	"cmp"
	"container/list"
	"math"
	"slices"
	"sync"
	"time"
)

// The session epochs with a meaning of their own (Kafka's FetchMetadata).
const (
	// FinalEpoch asks for a sessionless full fetch, closing the session
	// named by id if any.
	FinalEpoch int32 = -1
	// InitialEpoch asks for a full fetch that creates a session.
	InitialEpoch int32 = 0
)

// NextEpoch is the epoch after epoch: it wraps to 1, never back to the
// epochs of full fetches.
func NextEpoch(epoch int32) int32 {
	if epoch < 0 || epoch == math.MaxInt32 {
		return 1
	}
	return epoch + 1
}

// Key names a partition of a session: by topic id in a session of Fetch
// v13+ (Topic empty), by name below (TopicID zero).
type Key struct {
	TopicID   [16]byte
	Topic     string
	Partition int32
}

// Params are one partition's fetch parameters as a request lists them.
type Params struct {
	FetchOffset        int64
	CurrentLeaderEpoch int32
	LastFetchedEpoch   int32
	LogStartOffset     int64
	MaxBytes           int32
}

// Partition is a partition to read with its parameters.
type Partition struct {
	Key
	Params
}

// cachedPartition is a session's partition: the parameters of the last
// request that listed it, and what the last response that carried it said.
type cachedPartition struct {
	Partition
	// highWatermark is -1 after an error, so that the partition is answered
	// again once the error is gone.
	highWatermark    int64
	lastStableOffset int64
	logStartOffset   int64
	// idle is the mark of a follower session's partition that had nothing
	// to answer and nothing to learn at its last read: fetches skip it
	// while it is unchanged (nil: read it). Set by Session.setIdleLocked,
	// dropped by Session.dropIdleLocked.
	idle Idle
	// seq is the partition's place in the session's reading order: it
	// grows along Session.order.
	seq uint64
	// forgotten: the session no longer holds the partition (a fetch in
	// flight may still answer it).
	forgotten bool
}

// news reports whether r must be answered to a fetcher that last heard
// what c holds (Kafka's CachedPartition.maybeUpdateResponseData); with
// update, c takes r's offsets.
func (c *cachedPartition) news(r Result, update bool) bool {
	must := r.Records || r.PreferredReadReplica >= 0 || r.Diverging || r.ErrorCode != 0 ||
		c.highWatermark != r.HighWatermark || c.lastStableOffset != r.LastStableOffset ||
		c.logStartOffset != r.LogStartOffset
	if update {
		c.highWatermark, c.lastStableOffset, c.logStartOffset = r.HighWatermark, r.LastStableOffset, r.LogStartOffset
		if r.ErrorCode != 0 {
			c.highWatermark = -1
		}
	}
	return must
}

// Session is one incremental fetch session.
type Session struct {
	id           int32
	privileged   bool // created by a follower
	usesTopicIDs bool // created by Fetch v13+
	created      time.Time

	// The cache's bookkeeping, guarded by Cache.mu.
	lastUsed time.Time
	// size is the partition count at the last use: the value eviction
	// compares.
	size int
	// evictableByPrivileged and evictableByAll say, as of the last use,
	// who may evict the session while it is not stale.
	evictableByPrivileged, evictableByAll bool

	// tracker follows a follower session's idle partitions (nil for a
	// consumer's session, or without Options.NewTracker).
	tracker Tracker

	mu    sync.Mutex // guards the fields below
	epoch int32      // the epoch the next request must carry
	order *list.List // of *cachedPartition, the order partitions are read in
	byKey map[Key]*list.Element
	// nextSeq is the seq of the next partition put at the back of order.
	nextSeq uint64
	// The partitions a fetch reads are those without an idle mark (active)
	// and those whose mark changed. The tracker names the marks that may
	// have changed (Tracker.Changed); byIdle finds their partitions. A
	// fetch checks every mark only once per fullCheckInterval, and when
	// most partitions are active anyway.
	active      map[*cachedPartition]struct{}
	byIdle      map[Idle]*cachedPartition
	fullCheckAt time.Time
	changedBuf  []Idle
}

// fullCheckInterval is how often a fetch of a follower's session checks
// every idle mark, not only those its tracker names: a guard against a
// change no partition told.
const fullCheckInterval = 10 * time.Second

func newSession(id int32, privileged, usesTopicIDs bool, now time.Time) *Session {
	return &Session{
		id: id, privileged: privileged, usesTopicIDs: usesTopicIDs, created: now, lastUsed: now,
		epoch: NextEpoch(InitialEpoch), order: list.New(), byKey: make(map[Key]*list.Element),
		active: make(map[*cachedPartition]struct{}), byIdle: make(map[Idle]*cachedPartition),
	}
}

// pushBackLocked adds c, new, at the back of the reading order. Must be
// called with mu held.
func (s *Session) pushBackLocked(c *cachedPartition) {
	c.seq = s.nextSeq
	s.nextSeq++
	s.byKey[c.Key] = s.order.PushBack(c)
	if c.idle == nil {
		s.active[c] = struct{}{}
	}
}

// setIdleLocked gives c, active, the idle mark m. Must be called with mu
// held.
func (s *Session) setIdleLocked(c *cachedPartition, m Idle) {
	c.idle = m
	delete(s.active, c)
	s.byIdle[m] = c
}

// dropIdleLocked releases c's idle mark, if any, into release (the marks
// are released once the session's lock is let go): c is read again. Must
// be called with mu held.
func (s *Session) dropIdleLocked(c *cachedPartition, release []Idle) []Idle {
	if c.idle != nil {
		release = append(release, c.idle)
		delete(s.byIdle, c.idle)
		c.idle = nil
		if !c.forgotten {
			s.active[c] = struct{}{}
		}
	}
	return release
}

// ID is the session's id.
func (s *Session) ID() int32 { return s.id }

// addLocked adds or updates a partition's request parameters; a listed
// partition is read (its idle mark goes to release). Must be called with
// mu held.
func (s *Session) addLocked(p Partition, release []Idle) []Idle {
	if e, ok := s.byKey[p.Key]; ok {
		c := e.Value.(*cachedPartition)
		c.Params = p.Params
		return s.dropIdleLocked(c, release)
	}
	s.pushBackLocked(&cachedPartition{Partition: p, highWatermark: -1, lastStableOffset: -1, logStartOffset: -1})
	return release
}

// updateLocked merges an incremental request: listed partitions are added
// or take the request's parameters, forgotten ones go. The idle marks of
// both are appended to release. Must be called with mu held.
func (s *Session) updateLocked(listed []Partition, forgotten []Key, release []Idle) []Idle {
	for _, p := range listed {
		release = s.addLocked(p, release)
	}
	for _, k := range forgotten {
		if e, ok := s.byKey[k]; ok {
			c := e.Value.(*cachedPartition)
			release = s.dropIdleLocked(c, release)
			s.order.Remove(e)
			delete(s.byKey, k)
			delete(s.active, c)
			c.forgotten = true
		}
	}
	return release
}

// toReadLocked lists, in reading order, the session's partitions a fetch
// at now reads: all but those whose idle mark is unchanged. The marks of
// the others, changed, go to release. With a tracker, only the marks it
// names as changed are checked (Tracker.Changed), except once per
// fullCheckInterval. Must be called with mu held.
func (s *Session) toReadLocked(out []*cachedPartition, release []Idle, now time.Time) ([]*cachedPartition, []Idle) {
	if s.tracker == nil {
		return s.checkAllLocked(out, release)
	}
	s.changedBuf = s.tracker.Changed(s.changedBuf[:0])
	if !now.Before(s.fullCheckAt) || 2*len(s.active) >= s.order.Len() {
		if !now.Before(s.fullCheckAt) {
			s.fullCheckAt = now.Add(fullCheckInterval)
		}
		clear(s.changedBuf)
		return s.checkAllLocked(out, release)
	}
	for _, m := range s.changedBuf {
		if c, ok := s.byIdle[m]; ok && !m.Unchanged() {
			release = s.dropIdleLocked(c, release)
		}
	}
	clear(s.changedBuf)
	start := len(out)
	for c := range s.active {
		out = append(out, c)
	}
	slices.SortFunc(out[start:], func(a, b *cachedPartition) int { return cmp.Compare(a.seq, b.seq) })
	return out, release
}

// checkAllLocked is toReadLocked checking every mark. Must be called with
// mu held.
func (s *Session) checkAllLocked(out []*cachedPartition, release []Idle) ([]*cachedPartition, []Idle) {
	for e := s.order.Front(); e != nil; e = e.Next() {
		c := e.Value.(*cachedPartition)
		if c.idle != nil && c.idle.Unchanged() {
			continue
		}
		release = s.dropIdleLocked(c, release)
		out = append(out, c)
	}
	return out, release
}

// idleLocked appends the idle marks of every partition to release and
// forgets them: the session ends. Must be called with mu held.
func (s *Session) idleLocked(release []Idle) []Idle {
	for e := s.order.Front(); e != nil; e = e.Next() {
		release = s.dropIdleLocked(e.Value.(*cachedPartition), release)
	}
	return release
}

// releaseIdle releases every idle mark of an ended session.
func (s *Session) releaseIdle() {
	s.mu.Lock()
	release := s.idleLocked(nil)
	s.mu.Unlock()
	releaseAll(release)
}

func releaseAll(marks []Idle) {
	for _, m := range marks {
		m.Release()
	}
}

// toBackLocked moves a partition that returned records behind the others.
// Must be called with mu held.
func (s *Session) toBackLocked(k Key) {
	if e, ok := s.byKey[k]; ok {
		e.Value.(*cachedPartition).seq = s.nextSeq
		s.nextSeq++
		s.order.MoveToBack(e)
	}
}

// Len is the number of partitions in the session.
func (s *Session) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.order.Len()
}

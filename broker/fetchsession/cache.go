package fetchsession

import (
	"math/rand/v2"
	"sync"
	"time"
)

// EvictionAge is Kafka's MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS: a
// session unused this long is stale, and one younger than this at its
// last use is protected from consumers' new sessions.
const EvictionAge = 120 * time.Second

// Options configure a Cache.
type Options struct {
	// MaxSlots is max.incremental.fetch.session.cache.slots; 0 creates no
	// session.
	MaxSlots int
	// Now is the clock (default time.Now).
	Now func() time.Time
	// NewID returns candidate session ids (default: random positive int32);
	// the cache skips 0, negatives and ids in use.
	NewID func() int32
	// NewTracker, if set, makes the tracker of each new follower session:
	// with one, a session skips its idle partitions (Result.Idle).
	NewTracker func() Tracker
}

// Cache is a broker's fetch session cache. It is safe for concurrent use.
//
// Lock order: Cache.mu, then a Session's mu.
type Cache struct {
	maxSlots   int
	now        func() time.Time
	newID      func() int32
	newTracker func() Tracker

	mu            sync.Mutex // guards the fields below and the sessions' bookkeeping
	sessions      map[int32]*Session
	numPartitions int   // sum of the sessions' sizes at their last use
	evictions     int64 // sessions evicted to make room, ever
}

// New returns an empty cache.
func New(opts Options) *Cache {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.NewID == nil {
		opts.NewID = func() int32 { return rand.Int32() }
	}
	return &Cache{maxSlots: max(opts.MaxSlots, 0), now: opts.Now, newID: opts.NewID, newTracker: opts.NewTracker,
		sessions: make(map[int32]*Session)}
}

// Stats are the cache's gauges and counters (Kafka's
// NumIncrementalFetchSessions, NumIncrementalFetchPartitionsCached,
// IncrementalFetchSessionEvictionsPerSec).
type Stats struct {
	Sessions   int
	Partitions int
	Evictions  int64
}

// Stats returns the cache's current figures.
func (c *Cache) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return Stats{Sessions: len(c.sessions), Partitions: c.numPartitions, Evictions: c.evictions}
}

// NextEpoch returns the epoch the next request of session id must carry,
// ok=false when there is no such session.
func (c *Cache) NextEpoch(id int32) (epoch int32, ok bool) {
	c.mu.Lock()
	s, ok := c.sessions[id]
	c.mu.Unlock()
	if !ok {
		return 0, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.epoch, true
}

// removeLocked drops a session. Must be called with mu held.
func (c *Cache) removeLocked(s *Session) {
	if c.sessions[s.id] != s {
		return
	}
	delete(c.sessions, s.id)
	c.numPartitions -= s.size
}

// touchLocked records a use of s at now with its current size (Kafka's
// FetchSessionCache.touch). Must be called with mu held, not s.mu.
func (c *Cache) touchLocked(s *Session, now time.Time, size int) {
	s.lastUsed = now
	c.numPartitions += size - s.size
	s.size = size
	old := now.Sub(s.created) > EvictionAge
	s.evictableByPrivileged = !s.privileged || old
	s.evictableByAll = old
}

// create adds a session of the given partitions if there is a free slot
// or one can be evicted; it returns the session, nil when none was made.
func (c *Cache) create(privileged, usesTopicIDs bool, parts []cachedPartition) *Session {
	if len(parts) == 0 {
		return nil
	}
	s, victim := c.createLocking(privileged, usesTopicIDs, parts)
	if victim != nil {
		// Its partitions' idle marks go once the cache's lock is let go
		// (the lock order is Cache.mu, Session.mu, then the partitions').
		victim.releaseIdle()
	}
	return s
}

// createLocking is create under the cache's lock; it also returns the
// session evicted for the new one.
func (c *Cache) createLocking(privileged, usesTopicIDs bool, parts []cachedPartition) (s, victim *Session) {
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.sessions) >= c.maxSlots {
		if victim = c.tryEvictLocked(privileged, len(parts), now); victim == nil {
			return nil, nil
		}
	}
	s = newSession(c.freshIDLocked(), privileged, usesTopicIDs, now)
	if privileged && c.newTracker != nil {
		s.tracker = c.newTracker()
	}
	for i := range parts {
		cp := parts[i]
		if _, dup := s.byKey[cp.Key]; !dup {
			s.pushBackLocked(&cp)
		}
	}
	c.sessions[s.id] = s
	c.touchLocked(s, now, s.order.Len())
	return s, victim
}

// freshIDLocked returns a positive id no session has. Must be called with
// mu held.
func (c *Cache) freshIDLocked() int32 {
	for {
		id := c.newID()
		if _, taken := c.sessions[id]; id > 0 && !taken {
			return id
		}
	}
}

// tryEvictLocked makes room for a new session of size partitions (Kafka's
// FetchSessionCache.tryEvict) and returns the session evicted, nil when
// none may go. Must be called with mu held.
func (c *Cache) tryEvictLocked(privileged bool, size int, now time.Time) *Session {
	victim := evictionVictim(c.sessions, privileged, size, now)
	if victim == nil {
		return nil
	}
	c.removeLocked(victim)
	c.evictions++
	return victim
}

// evictionVictim chooses the session to evict for a new one, nil if none
// may go: the least recently used when stale, else the least valuable
// session the newcomer may evict, if the newcomer is worth more.
func evictionVictim(sessions map[int32]*Session, privileged bool, size int, now time.Time) *Session {
	var lru, cheapest *Session
	for _, s := range sessions {
		if lru == nil || s.lastUsed.Before(lru.lastUsed) || (s.lastUsed.Equal(lru.lastUsed) && s.id < lru.id) {
			lru = s
		}
		if (privileged && s.evictableByPrivileged) || s.evictableByAll {
			if cheapest == nil || lessValuable(s.privileged, s.size, s.id, cheapest.privileged, cheapest.size, cheapest.id) {
				cheapest = s
			}
		}
	}
	switch {
	case lru == nil:
		return nil
	case now.Sub(lru.lastUsed) > EvictionAge:
		return lru
	case cheapest == nil:
		return nil
	case lessValuable(privileged, size, 0, cheapest.privileged, cheapest.size, cheapest.id):
		return nil // the newcomer is worth less than anything we could drop
	}
	return cheapest
}

// lessValuable orders sessions as Kafka's EvictableKey: consumers' before
// followers', then smaller before larger, then by id.
func lessValuable(privA bool, sizeA int, idA int32, privB bool, sizeB int, idB int32) bool {
	if privA != privB {
		return !privA
	}
	if sizeA != sizeB {
		return sizeA < sizeB
	}
	return idA < idB
}

package storage

import (
	"container/list"
	"sync"
)

// mapCache bounds the inactive segments that hold a read mapping. Each
// costs three of the process's vm.max_map_count (.log, .index, .timeindex),
// so the bound is per log (perLog) and across every log sharing the cache
// (total): a Manager's logs share one, so that consumers reading old data
// of every partition cannot exhaust the map count; a log opened alone has
// its own. The least recently used segment is evicted first; an evicted
// segment unmaps at once if idle, else at its last release (segment.evict).
// Active segments are never in the cache.
//
// Locking: mu guards the list and every logMaps of the cache. It is taken
// alone: evictions run after it is released.
type mapCache struct {
	perLog, total int

	mu  sync.Mutex
	lru list.List // of *mapEntry, least recently used first
}

type mapEntry struct {
	seg   *segment
	owner *logMaps
}

func newMapCache(perLog, total int) *mapCache {
	return &mapCache{perLog: max(perLog, 1), total: max(total, 1)}
}

// logMaps is one log's part of a mapCache.
type logMaps struct {
	cache *mapCache
	// elems are this log's entries, least recently used first; guarded by
	// cache.mu. At most cache.perLog long.
	elems []*list.Element
}

func (c *mapCache) forLog() *logMaps { return &logMaps{cache: c} }

// mappedSegments is how many inactive segments of all logs hold mappings.
func (c *mapCache) mappedSegments() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}

// findLocked returns s's entry, or nil. Must be called with cache.mu held.
func (m *logMaps) findLocked(s *segment) (int, *list.Element) {
	for i, e := range m.elems {
		if e.Value.(*mapEntry).seg == s {
			return i, e
		}
	}
	return -1, nil
}

// moveToBackLocked marks entry i most recently used.
func (m *logMaps) moveToBackLocked(i int, e *list.Element) {
	m.cache.lru.MoveToBack(e)
	copy(m.elems[i:], m.elems[i+1:])
	m.elems[len(m.elems)-1] = e
}

// removeLocked drops e from the cache and returns its segment.
func (c *mapCache) removeLocked(e *list.Element) *segment {
	ent := e.Value.(*mapEntry)
	c.lru.Remove(e)
	if i, _ := ent.owner.findLocked(ent.seg); i >= 0 {
		ent.owner.elems = append(ent.owner.elems[:i:i], ent.owner.elems[i+1:]...)
	}
	return ent.seg
}

// note records that s holds a read mapping and was just used, evicting the
// least recently used segments beyond the bounds.
func (m *logMaps) note(s *segment) {
	c := m.cache
	var victims []*segment
	c.mu.Lock()
	if i, e := m.findLocked(s); e != nil {
		m.moveToBackLocked(i, e)
	} else {
		m.elems = append(m.elems, c.lru.PushBack(&mapEntry{seg: s, owner: m}))
	}
	for len(m.elems) > c.perLog {
		victims = append(victims, c.removeLocked(m.elems[0]))
	}
	for c.lru.Len() > c.total {
		victims = append(victims, c.removeLocked(c.lru.Front()))
	}
	c.mu.Unlock()
	for _, v := range victims {
		v.evict()
	}
}

// touch marks s recently used if it is in the cache.
func (m *logMaps) touch(s *segment) {
	c := m.cache
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := len(m.elems); n > 0 && m.elems[n-1].Value.(*mapEntry).seg == s {
		return
	}
	if i, e := m.findLocked(s); e != nil {
		m.moveToBackLocked(i, e)
	}
}

// forget drops segments from the cache (retired or activated) without
// evicting them: their owner frees or reuses the mapping.
func (m *logMaps) forget(segs ...*segment) {
	c := m.cache
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range segs {
		if _, e := m.findLocked(s); e != nil {
			c.removeLocked(e)
		}
	}
}

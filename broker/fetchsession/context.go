package fetchsession

import "github.com/twmb/franz-go/pkg/kerr"

// Request is what the cache needs of a Fetch request.
type Request struct {
	Version   int16
	SessionID int32
	Epoch     int32
	// Follower is set for a replica's fetch: its session is privileged.
	Follower bool
	// Partitions are the request's partitions, in its order.
	Partitions []Partition
	// Forgotten are the partitions of ForgottenTopicsData.
	Forgotten []Key
}

// Result is a partition's outcome in a response, what decides whether an
// incremental response carries it.
type Result struct {
	Records                                         bool
	HighWatermark, LastStableOffset, LogStartOffset int64
	ErrorCode                                       int16
	PreferredReadReplica                            int32 // -1: none
	Diverging                                       bool
	// Idle, for a partition of a follower's incremental fetch, marks it
	// idle: later fetches skip it while the mark is unchanged (nil: none).
	Idle Idle
}

// Idle is a partition of a follower's session that had nothing to answer
// and nothing to learn from the follower (replication.IdleMark): while it is
// Unchanged, a fetch of the session would neither answer it nor change
// anything by reading it, so the session skips it. Its methods are safe
// for concurrent use and Release may be called more than once.
type Idle interface {
	Unchanged() bool
	// Release is called when the session stops skipping the partition:
	// before a fetch that reads it, or when the session forgets it or ends.
	Release()
}

// Tracker is what a follower's session keeps for its idle partitions
// (replication.FollowerSession), made by Options.NewTracker.
type Tracker interface {
	// Begin is called when an incremental fetch of the session begins,
	// before its idle partitions are checked.
	Begin()
	// Fetched is called once the fetch has checked them and released the
	// marks of the partitions it reads: the partitions still marked were
	// skipped by the fetch begun last.
	Fetched()
	// Changed appends to out the session's marks that may have changed
	// (or been released by their partition) since the last call: a fetch
	// checks those rather than every mark. Called with the session's lock
	// held, one fetch at a time.
	Changed(out []Idle) []Idle
}

// Kind is how a fetch is served.
type Kind uint8

const (
	// Sessionless: read the request's partitions, answer all, session id 0.
	Sessionless Kind = iota
	// Full: read the request's partitions, answer all, and create a session
	// of them (session id 0 in the answer when the cache has no room).
	Full
	// Incremental: read the session's partitions, answer those with news.
	Incremental
	// Failed: answer the top-level ErrorCode and nothing else.
	Failed
)

var kindNames = [...]string{"sessionless", "full", "incremental", "failed"}

func (k Kind) String() string { return kindNames[k] }

// Context is how one fetch request is served: the partitions to read and,
// once read, which to answer (Kafka's FetchContext).
type Context struct {
	Kind      Kind
	ErrorCode int16 // Failed only

	cache        *Cache
	follower     bool
	usesTopicIDs bool
	parts        []Partition // Sessionless and Full
	session      *Session    // Incremental
	// cached are, for an incremental fetch, the session's partitions it
	// reads, in reading order: all but the idle ones it skips (Refresh).
	cached []*cachedPartition
}

// NewContext validates a request's session fields and applies an
// incremental request to its session (Kafka's FetchManager.newContext).
func (c *Cache) NewContext(r Request) *Context {
	if r.Epoch == FinalEpoch || r.Epoch == InitialEpoch {
		if r.SessionID != 0 {
			c.remove(r.SessionID) // a full fetch closes the session it names
		}
		kind := Full
		if r.Epoch == FinalEpoch {
			kind = Sessionless
		}
		return &Context{Kind: kind, cache: c, follower: r.Follower, usesTopicIDs: r.Version >= 13, parts: r.Partitions}
	}
	x, release := c.incremental(r)
	releaseAll(release)
	if x.Kind == Incremental && x.session.tracker != nil {
		x.session.tracker.Fetched()
	}
	return x
}

// incremental applies an incremental request to its session and returns
// the context with the idle marks to release, once no lock is held. The
// session's partitions are checked with the cache's lock let go.
func (c *Cache) incremental(r Request) (*Context, []Idle) {
	c.mu.Lock()
	s, ok := c.sessions[r.SessionID]
	if !ok {
		c.mu.Unlock()
		return failed(kerr.FetchSessionIDNotFound.Code), nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.epoch != r.Epoch:
		c.mu.Unlock()
		return failed(kerr.InvalidFetchSessionEpoch.Code), nil
	case s.usesTopicIDs != (r.Version >= 13):
		c.mu.Unlock()
		return failed(kerr.FetchSessionTopicIDError.Code), nil
	}
	if s.tracker != nil {
		s.tracker.Begin()
	}
	release := s.updateLocked(r.Partitions, r.Forgotten, nil)
	if s.order.Len() == 0 {
		c.removeLocked(s)
		c.mu.Unlock()
		return &Context{Kind: Sessionless, cache: c, follower: r.Follower, usesTopicIDs: r.Version >= 13}, release
	}
	c.touchLocked(s, c.now(), s.order.Len())
	c.mu.Unlock()
	s.epoch = NextEpoch(s.epoch)
	x := &Context{Kind: Incremental, cache: c, follower: r.Follower, usesTopicIDs: s.usesTopicIDs, session: s}
	x.cached, release = s.toReadLocked(make([]*cachedPartition, 0, min(s.order.Len(), len(r.Partitions)+8)), release, c.now())
	return x, release
}

// Tracker is the session's tracker of idle partitions, for an incremental
// fetch of a follower's session that has one; nil otherwise.
func (x *Context) Tracker() Tracker {
	if x.Kind != Incremental {
		return nil
	}
	return x.session.tracker
}

// Refresh, for an incremental fetch, checks the idle partitions it skipped
// again (its tracker was woken: one may have changed) and reports whether
// it now reads more of them. Len and Partition change with it: the fetch
// reads its partitions again before answering.
func (x *Context) Refresh() bool {
	if x.Kind != Incremental {
		return false
	}
	s := x.session
	s.mu.Lock()
	before := len(x.cached)
	cached, release := s.toReadLocked(make([]*cachedPartition, 0, before+len(x.cached)/4+4), nil, x.cache.now())
	grew := len(cached) > before
	if grew {
		x.cached = cached
	}
	s.mu.Unlock()
	releaseAll(release)
	return grew
}

func failed(code int16) *Context { return &Context{Kind: Failed, ErrorCode: code} }

// remove closes session id, if it exists.
func (c *Cache) remove(id int32) {
	c.mu.Lock()
	s, ok := c.sessions[id]
	if ok {
		c.removeLocked(s)
	}
	c.mu.Unlock()
	if ok {
		s.releaseIdle()
	}
}

// Len is the number of partitions to read.
func (x *Context) Len() int {
	if x.Kind == Incremental {
		return len(x.cached)
	}
	return len(x.parts)
}

// Partition is the i-th partition to read.
func (x *Context) Partition(i int) Partition {
	if x.Kind == Incremental {
		return x.cached[i].Partition
	}
	return x.parts[i]
}

// Privileged reports whether the fetch is a follower's.
func (x *Context) Privileged() bool { return x.follower }

// HasNews reports whether result r of partition i would be answered by an
// incremental fetch, without recording it: a long poll may answer early
// for it. Always false for other kinds (they answer everything anyway).
func (x *Context) HasNews(i int, r Result) bool {
	if x.Kind != Incremental {
		return false
	}
	x.session.mu.Lock()
	defer x.session.mu.Unlock()
	return x.cached[i].news(r, false)
}

// Respond records the final results, results[i] for Partition(i), and
// returns which partitions the response carries (keep, filled by Respond)
// and the session id to answer: a new session's for a full fetch that got
// one, the session's for an incremental fetch, 0 otherwise.
func (x *Context) Respond(results []Result, keep []bool) int32 {
	switch x.Kind {
	case Failed:
		return 0
	case Sessionless:
		fillTrue(keep)
		releaseResults(results)
		return 0
	case Full:
		fillTrue(keep)
		releaseResults(results)
		return x.createSession(results)
	}
	s := x.session
	s.mu.Lock()
	var release []Idle
	for i, cp := range x.cached {
		keep[i] = cp.news(results[i], true)
		if keep[i] && results[i].Records {
			s.toBackLocked(cp.Key)
		}
		release = s.dropIdleLocked(cp, release)
		if m := results[i].Idle; m != nil {
			if e, ok := s.byKey[cp.Key]; ok && e.Value == cp && !results[i].Records && results[i].ErrorCode == 0 && !results[i].Diverging {
				s.setIdleLocked(cp, m)
			} else {
				release = append(release, m)
			}
		}
	}
	s.mu.Unlock()
	releaseAll(release)
	return s.id
}

// releaseResults releases the idle marks of results no session keeps.
func releaseResults(results []Result) {
	for _, r := range results {
		if r.Idle != nil {
			r.Idle.Release()
		}
	}
}

func (x *Context) createSession(results []Result) int32 {
	parts := make([]cachedPartition, len(x.parts))
	for i, p := range x.parts {
		parts[i] = cachedPartition{Partition: p, highWatermark: -1, lastStableOffset: -1, logStartOffset: -1}
		parts[i].news(results[i], true)
	}
	s := x.cache.create(x.follower, x.usesTopicIDs, parts)
	if s == nil {
		return 0
	}
	return s.id
}

func fillTrue(b []bool) {
	for i := range b {
		b[i] = true
	}
}

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
	parts        []Partition        // Sessionless and Full
	session      *Session           // Incremental
	cached       []*cachedPartition // Incremental: the session's, in reading order
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
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.sessions[r.SessionID]
	if !ok {
		return failed(kerr.FetchSessionIDNotFound.Code)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.epoch != r.Epoch:
		return failed(kerr.InvalidFetchSessionEpoch.Code)
	case s.usesTopicIDs != (r.Version >= 13):
		return failed(kerr.FetchSessionTopicIDError.Code)
	}
	s.updateLocked(r.Partitions, r.Forgotten)
	if s.order.Len() == 0 {
		c.removeLocked(s)
		return &Context{Kind: Sessionless, cache: c, follower: r.Follower, usesTopicIDs: r.Version >= 13}
	}
	c.touchLocked(s, c.now(), s.order.Len())
	s.epoch = NextEpoch(s.epoch)
	return &Context{Kind: Incremental, cache: c, follower: r.Follower, usesTopicIDs: s.usesTopicIDs,
		session: s, cached: s.partitionsLocked()}
}

func failed(code int16) *Context { return &Context{Kind: Failed, ErrorCode: code} }

// remove closes session id, if it exists.
func (c *Cache) remove(id int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := c.sessions[id]; ok {
		c.removeLocked(s)
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
		return 0
	case Full:
		fillTrue(keep)
		return x.createSession(results)
	}
	s := x.session
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, cp := range x.cached {
		keep[i] = cp.news(results[i], true)
		if keep[i] && results[i].Records {
			s.toBackLocked(cp.Key)
		}
	}
	return s.id
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

package sharepartition

import (
	"math"
	"slices"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Share sessions (KIP-932, Kafka's ShareSessionCache and
// SharePartitionManager.newContext). A member's ShareFetch requests to one
// broker form a session: epoch 0 opens it with the request's partitions,
// each later request carries the next epoch and adds partitions (Topics) or
// removes them (ForgottenTopicsData), epoch -1 closes it. ShareAcknowledge
// shares the session and its epoch.
//
//	           ShareFetch epoch 0                 ShareFetch/ShareAcknowledge epoch n (= session's)
//	(none) ───────────────────────────> open(1) ─────────────────────────────────────────> open(n+1)
//	   ^                                   │    epoch != session's: INVALID_SHARE_SESSION_EPOCH
//	   └───────── epoch -1, connection closed, member gone ──┘  (the member's records are released)
//
// Errors as Kafka returns them: a missing session SHARE_SESSION_NOT_FOUND,
// a full cache SHARE_SESSION_LIMIT_REACHED, acknowledgements on an opening
// fetch or fetch data on a closing one INVALID_REQUEST, ShareAcknowledge
// with epoch 0 INVALID_SHARE_SESSION_EPOCH.

// Session epochs of ShareFetch and ShareAcknowledge.
const (
	InitialEpoch int32 = 0
	FinalEpoch   int32 = -1
)

// TopicIDPartition names a partition in share requests.
type TopicIDPartition struct {
	TopicID   [16]byte
	Partition int32
}

// SessionKey identifies a share session on a broker.
type SessionKey struct{ Group, Member string }

// session is one share session; guarded by SessionCache.mu.
type session struct {
	key   SessionKey
	epoch int32 // the epoch the next request must carry
	conn  string
	// parts in the order they were added; requiresUpdate: the partition
	// must appear in the next incremental response even without news (new
	// in the session, or its last answer was an error).
	parts          []TopicIDPartition
	requiresUpdate map[TopicIDPartition]bool
}

// nextEpoch is Kafka's ShareRequestMetadata.nextEpoch: MaxInt32 wraps to 1.
func nextEpoch(e int32) int32 {
	if e == math.MaxInt32 {
		return 1
	}
	return e + 1
}

// SessionCache holds a broker's share sessions
// (group.share.max.share.sessions of them at most).
type SessionCache struct {
	max int

	mu       sync.Mutex // guards the following
	sessions map[SessionKey]*session
}

// NewSessionCache returns an empty cache of at most max sessions.
func NewSessionCache(max int) *SessionCache {
	return &SessionCache{max: max, sessions: make(map[SessionKey]*session)}
}

// FetchContext is a ShareFetch's view of its session.
type FetchContext struct {
	Key SessionKey
	// Final: epoch -1, the session is closed: process the
	// acknowledgements, then release the member's records on Closed.
	Final bool
	// Full: epoch 0, the response lists every partition.
	Full bool
	// Partitions are the session's partitions to fetch (after the
	// request's changes); Closed the partitions of a closed session.
	Partitions []TopicIDPartition
	Closed     []TopicIDPartition
}

// FetchRequest is what the session part of a ShareFetch carries.
type FetchRequest struct {
	Key   SessionKey
	Epoch int32
	Conn  string // the connection, so that closing it closes its sessions
	// Add: the partitions of Topics; Forget: ForgottenTopicsData.
	Add, Forget []TopicIDPartition
	// HasAcks: some partition carries acknowledgement batches.
	// HasFetchData: some partition asks for records.
	HasAcks, HasFetchData bool
}

// NewFetchContext opens, updates or closes the session of a ShareFetch.
func (c *SessionCache) NewFetchContext(r FetchRequest) (*FetchContext, int16) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch r.Epoch {
	case FinalEpoch:
		if r.HasFetchData {
			return nil, kerr.InvalidRequest.Code
		}
		s := c.sessions[r.Key]
		if s == nil {
			return nil, kerr.ShareSessionNotFound.Code
		}
		delete(c.sessions, r.Key)
		return &FetchContext{Key: r.Key, Final: true, Closed: slices.Clone(s.parts)}, 0
	case InitialEpoch:
		if r.HasAcks {
			return nil, kerr.InvalidRequest.Code
		}
		delete(c.sessions, r.Key) // a new session replaces the member's old one
		if len(c.sessions) >= c.max {
			return nil, kerr.ShareSessionLimitReached.Code
		}
		s := &session{key: r.Key, epoch: nextEpoch(InitialEpoch), conn: r.Conn, requiresUpdate: make(map[TopicIDPartition]bool)}
		s.add(r.Add)
		c.sessions[r.Key] = s
		return &FetchContext{Key: r.Key, Full: true, Partitions: slices.Clone(s.parts)}, 0
	}
	s := c.sessions[r.Key]
	switch {
	case s == nil:
		return nil, kerr.ShareSessionNotFound.Code
	case s.epoch != r.Epoch:
		return nil, kerr.InvalidShareSessionEpoch.Code
	}
	s.add(r.Add)
	s.forget(r.Forget)
	s.epoch = nextEpoch(s.epoch)
	return &FetchContext{Key: r.Key, Partitions: slices.Clone(s.parts)}, 0
}

func (s *session) add(tps []TopicIDPartition) {
	for _, tp := range tps {
		if _, ok := s.requiresUpdate[tp]; !ok {
			s.parts = append(s.parts, tp)
			s.requiresUpdate[tp] = true
		}
	}
}

func (s *session) forget(tps []TopicIDPartition) {
	for _, tp := range tps {
		if _, ok := s.requiresUpdate[tp]; ok {
			delete(s.requiresUpdate, tp)
			s.parts = slices.DeleteFunc(s.parts, func(x TopicIDPartition) bool { return x == tp })
		}
	}
}

// Respond reports whether an incremental ShareFetch response includes tp:
// when it has records, an error or acknowledgement results (hasNews), or
// the session still owes it an answer. A partition answered with an error
// is owed one again next time.
func (c *SessionCache) Respond(key SessionKey, tp TopicIDPartition, hasNews, isError bool) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.sessions[key]
	if s == nil {
		return hasNews
	}
	owed, in := s.requiresUpdate[tp]
	if !in {
		return hasNews
	}
	s.requiresUpdate[tp] = isError
	return hasNews || owed
}

// AcknowledgeContext checks the session of a ShareAcknowledge and moves it
// to the next epoch. final (epoch -1) closes it: release the member's
// records on closed after the acknowledgements.
func (c *SessionCache) AcknowledgeContext(key SessionKey, epoch int32) (final bool, closed []TopicIDPartition, code int16) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if epoch == InitialEpoch {
		return false, nil, kerr.InvalidShareSessionEpoch.Code
	}
	s := c.sessions[key]
	switch {
	case s == nil:
		return false, nil, kerr.ShareSessionNotFound.Code
	case epoch == FinalEpoch:
		delete(c.sessions, key)
		return true, slices.Clone(s.parts), 0
	case s.epoch != epoch:
		return false, nil, kerr.InvalidShareSessionEpoch.Code
	}
	s.epoch = nextEpoch(s.epoch)
	return false, nil, 0
}

// ClosedSession is a session closed by its connection or its member going
// away: the broker releases the member's records on its partitions.
type ClosedSession struct {
	Key        SessionKey
	Partitions []TopicIDPartition
}

// ConnectionClosed removes the sessions opened on conn (Kafka's
// ConnectionDisconnectListener).
func (c *SessionCache) ConnectionClosed(conn string) []ClosedSession {
	return c.removeIf(func(s *session) bool { return s.conn == conn })
}

// RemoveMember removes the sessions of a member that left or was fenced.
func (c *SessionCache) RemoveMember(group, member string) []ClosedSession {
	return c.removeIf(func(s *session) bool { return s.key == SessionKey{group, member} })
}

func (c *SessionCache) removeIf(match func(*session) bool) []ClosedSession {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []ClosedSession
	for k, s := range c.sessions {
		if match(s) {
			delete(c.sessions, k)
			out = append(out, ClosedSession{Key: k, Partitions: slices.Clone(s.parts)})
		}
	}
	return out
}

// Len returns the number of open sessions (a metric).
func (c *SessionCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.sessions)
}

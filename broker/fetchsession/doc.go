// Package fetchsession is the broker side of incremental fetch sessions
// (KIP-227), as Kafka's FetchSession.scala: a per-broker cache of sessions,
// each the partitions a fetcher (consumer or follower) reads with their
// last request parameters and the offsets last answered for them.
//
// A Fetch request names its session by (SessionID, SessionEpoch):
//
//	epoch -1 (FINAL)    sessionless full fetch; a session named by id is closed
//	epoch 0  (INITIAL)  full fetch that asks for a new session (one named by id is closed first)
//	epoch > 0           incremental fetch of session id, which must exist
//	                    (FETCH_SESSION_ID_NOT_FOUND), be at that epoch
//	                    (INVALID_FETCH_SESSION_EPOCH) and use topic ids iff the
//	                    request version is 13+ (FETCH_SESSION_TOPIC_ID_ERROR)
//
// An incremental request lists only partitions that are new or whose fetch
// parameters changed, and ForgottenTopicsData for those to drop; the broker
// reads every partition of the session, in the session's order, and answers
// only those with news: records, a changed high watermark, last stable
// offset or log start offset, an error, a preferred read replica or a
// diverging epoch. A follower's session (with a Tracker) skips its idle
// partitions: one whose last read found the follower caught up and nothing
// to answer carries an Idle mark, and is not read while the mark is
// unchanged (replication/idle.go; Kafka reads them all), so that an idle
// session's fetch costs next to nothing per partition. A partition that returned records moves to the end of
// the session, so that a response full to MaxBytes does not starve the
// partitions after it.
//
// The cache holds at most max.incremental.fetch.session.cache.slots
// sessions. Creating one in a full cache evicts, as Kafka's
// FetchSessionCache.tryEvict: first a session unused for longer than the
// eviction age (EvictionAge, Kafka's 120 s); otherwise the least valuable
// evictable session, if the new one is worth more. Value orders followers'
// (privileged) sessions above consumers', then larger sessions above
// smaller. A session that was younger than the eviction age when last used
// is evictable only by a privileged session, and only if it is not
// privileged itself. A full cache that cannot evict answers the full fetch with
// session id 0: the client goes on with full fetches.
//
// The package knows nothing of the wire format: the broker translates
// kmsg requests into Requests and reports each partition's outcome as a
// Result (broker/fetch_session.go).
package fetchsession

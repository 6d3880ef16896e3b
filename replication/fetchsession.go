package replication

import (
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fetchSession is a replica fetcher's side of its incremental fetch
// session with one leader (KIP-227; Kafka's FetchSessionHandler). Between
// brokers as for consumers, a session saves listing every partition in
// every fetch: once the leader has created one (a full fetch at epoch 0
// answered with a session id), a fetch lists only the partitions that are
// new or whose fetch parameters changed, and ForgottenTopicsData for those
// no longer fetched; the leader answers only partitions with news.
//
// Used by the fetcher's goroutine only.
type fetchSession struct {
	id int32 // 0: none
	// epoch is the epoch of the next request: 0 asks for a new session
	// (closing id's if set), > 0 is incremental.
	epoch int32
	byID  bool // the session's partitions go by topic id (Fetch v13+)
	// sent holds each partition of the session with the parameters the
	// leader has for it, in the order they were added.
	sent map[fetchPartKey]sessionParams
	// next is build's buffer for the next sent (the two swap each round).
	next map[fetchPartKey]sessionParams
}

// sessionParams are the fetch parameters of a partition the leader keeps
// in its session; a change sends the partition again.
type sessionParams struct {
	fetchOffset, logStartOffset   int64
	leaderEpoch, lastFetchedEpoch int32
	maxBytes                      int32
	topicName                     string
}

func paramsOf(topic string, rp *kmsg.FetchRequestTopicPartition) sessionParams {
	return sessionParams{fetchOffset: rp.FetchOffset, logStartOffset: rp.LogStartOffset, leaderEpoch: rp.CurrentLeaderEpoch,
		lastFetchedEpoch: rp.LastFetchedEpoch, maxBytes: rp.PartitionMaxBytes, topicName: topic}
}

// build turns req, a full request of every partition to fetch now, into
// the session's next request: full (epoch 0) when there is no session or
// its topic naming changed, incremental otherwise. It records the request
// as the session's state, which a failure resets (onError, onResponse).
func (s *fetchSession) build(req *kmsg.FetchRequest) {
	byID := req.Version >= 13
	next := s.next
	if next == nil {
		next = make(map[fetchPartKey]sessionParams)
	}
	clear(next)
	for ti := range req.Topics {
		t := &req.Topics[ti]
		for pi := range t.Partitions {
			next[s.keyOf(byID, t, t.Partitions[pi].Partition)] = paramsOf(t.Topic, &t.Partitions[pi])
		}
	}
	if s.id == 0 || s.epoch == 0 || s.byID != byID {
		if s.id != 0 && s.byID != byID {
			s.epoch = 0 // a new session, closing the one named by names (or ids)
		}
		req.SessionID, req.SessionEpoch = s.id, 0
		s.epoch, s.byID, s.sent, s.next = 0, byID, next, s.sent
		return
	}
	req.SessionID, req.SessionEpoch = s.id, s.epoch
	topics := req.Topics
	req.Topics = nil
	for ti := range topics {
		t := topics[ti]
		parts := t.Partitions[:0]
		for _, rp := range t.Partitions {
			k := s.keyOf(byID, &t, rp.Partition)
			if prev, ok := s.sent[k]; !ok || prev != next[k] {
				parts = append(parts, rp)
			}
		}
		if len(parts) > 0 {
			t.Partitions = parts
			req.Topics = append(req.Topics, t)
		}
	}
	var forgotten map[fetchTopicKey]int
	for k, p := range s.sent {
		if _, ok := next[k]; ok {
			continue
		}
		if forgotten == nil {
			forgotten = map[fetchTopicKey]int{}
		}
		i, ok := forgotten[k.topic]
		if !ok {
			i = len(req.ForgottenTopics)
			forgotten[k.topic] = i
			ft := kmsg.NewFetchRequestForgottenTopic()
			ft.Topic, ft.TopicID = p.topicName, k.topic.id
			req.ForgottenTopics = append(req.ForgottenTopics, ft)
		}
		req.ForgottenTopics[i].Partitions = append(req.ForgottenTopics[i].Partitions, k.partition)
	}
	s.sent, s.next = next, s.sent
}

// incremental reports whether the next request is an incremental one of
// an established session.
func (s *fetchSession) incremental() bool { return s.id != 0 && s.epoch != 0 }

// unchanged makes req, without partitions, the session's next request
// when the partitions to fetch and their parameters are last request's:
// an incremental fetch listing nothing (the session must be incremental).
func (s *fetchSession) unchanged(req *kmsg.FetchRequest) {
	req.SessionID, req.SessionEpoch = s.id, s.epoch
}

func (s *fetchSession) keyOf(byID bool, t *kmsg.FetchRequestTopic, partition int32) fetchPartKey {
	if byID {
		return fetchPartKey{fetchTopicKey{id: t.TopicID}, partition}
	}
	return fetchPartKey{fetchTopicKey{name: t.Topic}, partition}
}

// onResponse moves the session on after an answer to the request built
// last: a session the leader does not know any more is started again.
func (s *fetchSession) onResponse(resp *kmsg.FetchResponse) {
	switch resp.ErrorCode {
	case 0:
	case kerr.FetchSessionIDNotFound.Code:
		s.id, s.epoch = 0, 0
		return
	default: // INVALID_FETCH_SESSION_EPOCH, FETCH_SESSION_TOPIC_ID_ERROR, others
		s.epoch = 0
		return
	}
	switch {
	case resp.SessionID == 0:
		// No session (the leader's cache is full, or it closed ours): full
		// fetches, each asking for one.
		s.id, s.epoch = 0, 0
	case s.epoch == 0:
		s.id, s.epoch = resp.SessionID, 1
	default:
		s.epoch = nextSessionEpoch(s.epoch)
	}
}

// onError is a request that got no answer: the leader may or may not have
// moved the session on, so the next request starts a new one.
func (s *fetchSession) onError() { s.epoch = 0 }

func nextSessionEpoch(e int32) int32 {
	if e == math.MaxInt32 {
		return 1
	}
	return e + 1
}

// sessionError reports whether a Fetch's top-level error is about its
// session, which a new session cures.
func sessionError(code int16) bool {
	return code == kerr.FetchSessionIDNotFound.Code || code == kerr.InvalidFetchSessionEpoch.Code ||
		code == kerr.FetchSessionTopicIDError.Code
}

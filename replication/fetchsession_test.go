package replication

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fullFetch is a v16 request of partitions 0..n-1 of one topic (by id) at
// the given offsets.
func fullFetch(offsets ...int64) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(16)
	t := kmsg.NewFetchRequestTopic()
	t.Topic, t.TopicID = "t", [16]byte{1}
	for i, o := range offsets {
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset = int32(i), o
		t.Partitions = append(t.Partitions, rp)
	}
	req.Topics = append(req.Topics, t)
	return req
}

func listed(req *kmsg.FetchRequest) (parts []int32) {
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			parts = append(parts, p.Partition)
		}
	}
	return parts
}

// The replica fetcher's session (Kafka's FetchSessionHandler): full at
// epoch 0, then only what changed, forgotten partitions named, and a new
// session after any session error or lost answer.
func TestReplicaFetchSession(t *testing.T) {
	var s fetchSession
	answer := func(id int32, code int16) {
		resp := kmsg.NewPtrFetchResponse()
		resp.SessionID, resp.ErrorCode = id, code
		s.onResponse(resp)
	}
	req := fullFetch(0, 0, 0)
	s.build(req)
	if req.SessionID != 0 || req.SessionEpoch != 0 || len(listed(req)) != 3 {
		t.Fatalf("first fetch: id %d epoch %d parts %v", req.SessionID, req.SessionEpoch, listed(req))
	}
	answer(7, 0)

	req = fullFetch(0, 0, 0)
	s.build(req)
	if req.SessionID != 7 || req.SessionEpoch != 1 || len(listed(req)) != 0 || len(req.ForgottenTopics) != 0 {
		t.Fatalf("unchanged fetch: id %d epoch %d parts %v", req.SessionID, req.SessionEpoch, listed(req))
	}
	answer(7, 0)

	req = fullFetch(0, 5) // partition 1 moved, partition 2 dropped
	s.build(req)
	if req.SessionEpoch != 2 || len(listed(req)) != 1 || listed(req)[0] != 1 {
		t.Fatalf("changed fetch: epoch %d parts %v", req.SessionEpoch, listed(req))
	}
	if len(req.ForgottenTopics) != 1 || req.ForgottenTopics[0].TopicID != ([16]byte{1}) || len(req.ForgottenTopics[0].Partitions) != 1 ||
		req.ForgottenTopics[0].Partitions[0] != 2 {
		t.Fatalf("forgotten: %+v", req.ForgottenTopics)
	}
	answer(7, 0)

	// A lost answer: close the session and start another.
	s.onError()
	req = fullFetch(0, 5)
	s.build(req)
	if req.SessionID != 7 || req.SessionEpoch != 0 || len(listed(req)) != 2 {
		t.Fatalf("after an error: id %d epoch %d parts %v", req.SessionID, req.SessionEpoch, listed(req))
	}
	answer(9, 0)

	// The leader restarted: it knows no session.
	req = fullFetch(0, 5)
	s.build(req)
	answer(0, kerr.FetchSessionIDNotFound.Code)
	req = fullFetch(0, 5)
	s.build(req)
	if req.SessionID != 0 || req.SessionEpoch != 0 || len(listed(req)) != 2 {
		t.Fatalf("after FETCH_SESSION_ID_NOT_FOUND: id %d epoch %d parts %v", req.SessionID, req.SessionEpoch, listed(req))
	}
	// A full cache on the leader: full fetches go on.
	answer(0, 0)
	req = fullFetch(0, 5)
	s.build(req)
	if req.SessionEpoch != 0 || len(listed(req)) != 2 {
		t.Fatalf("without a session: epoch %d parts %v", req.SessionEpoch, listed(req))
	}
	// A fetch by names (a topic without id) starts a session of its own.
	answer(11, 0)
	req = fullFetch(0, 5)
	req.SetVersion(12)
	s.build(req)
	if req.SessionID != 11 || req.SessionEpoch != 0 {
		t.Fatalf("names fetch in an id session: id %d epoch %d", req.SessionID, req.SessionEpoch)
	}
}

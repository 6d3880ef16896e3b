package broker

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/internal/testsupport"
	"github.com/kbroker/kbroker/protocol"
)

// sessionFetch is a consumer Fetch v12 of the session (id, epoch) listing
// the given partitions of topic at offset, without waiting.
func sessionFetch(id, epoch int32, topic string, offset int64, partitions ...int32) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(12)
	req.ReplicaID, req.MaxBytes, req.MaxWaitMillis = -1, 1<<20, 0
	req.SessionID, req.SessionEpoch = id, epoch
	if len(partitions) > 0 {
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = topic
		for _, p := range partitions {
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = p, offset, 1<<20, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	return req
}

func answered(resp *kmsg.FetchResponse) int {
	n := 0
	for _, t := range resp.Topics {
		n += len(t.Partitions)
	}
	return n
}

// A session through the handler: created by epoch 0, then incremental
// fetches that list nothing read the session's partition and answer it
// only when it has news (KIP-227).
func TestFetchSessionThroughHandler(t *testing.T) {
	br := startTestBroker(t)
	createTopic(t, br, "sess")
	fetch := func(req *kmsg.FetchRequest) *kmsg.FetchResponse {
		t.Helper()
		resp := runRequest(t, br, req).(*kmsg.FetchResponse)
		if resp.ErrorCode != 0 {
			t.Fatalf("fetch: error %v", kerr.ErrorForCode(resp.ErrorCode))
		}
		return resp
	}

	full := fetch(sessionFetch(0, 0, "sess", 0, 0))
	if full.SessionID <= 0 || answered(full) != 1 {
		t.Fatalf("full fetch: session %d, %d partitions", full.SessionID, answered(full))
	}
	id := full.SessionID
	if resp := fetch(sessionFetch(id, 1, "", 0)); answered(resp) != 0 || resp.SessionID != id {
		t.Fatalf("quiet incremental fetch: session %d, %d partitions, want none", resp.SessionID, answered(resp))
	}
	resp := runRequest(t, br, testsupport.ProduceRequest("sess", 0, 1, 30000, benchBatch(3, 10)))
	if code := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("produce: %d", code)
	}
	inc := fetch(sessionFetch(id, 2, "", 0))
	if answered(inc) != 1 || len(inc.Topics[0].Partitions[0].RecordBatches) == 0 || inc.Topics[0].Partitions[0].HighWatermark != 3 {
		t.Fatalf("incremental fetch after a produce: %+v", inc.Topics)
	}
	// The session still fetches at 0 (the client did not move its offset):
	// records again, the same HW.
	if resp := fetch(sessionFetch(id, 3, "", 0)); answered(resp) != 1 {
		t.Fatal("records at the session's offset were not answered")
	}
	// Moved to the end: nothing new.
	if resp := fetch(sessionFetch(id, 4, "sess", 3, 0)); answered(resp) != 0 {
		t.Fatalf("caught-up incremental fetch answered %d partitions", answered(resp))
	}

	for _, tc := range []struct {
		name       string
		id, epoch  int32
		wantCode   int16
		wantRecord bool
	}{
		{"stale epoch", id, 2, kerr.InvalidFetchSessionEpoch.Code, false},
		{"unknown session", id + 1, 1, kerr.FetchSessionIDNotFound.Code, false},
		// kafka-go's Client.Fetch: id -1, epoch -1, a full sessionless fetch.
		{"sessionless, id -1", -1, -1, 0, true},
	} {
		resp := runRequest(t, br, sessionFetch(tc.id, tc.epoch, "sess", 0, 0)).(*kmsg.FetchResponse)
		if resp.ErrorCode != tc.wantCode {
			t.Errorf("%s: error %d, want %d", tc.name, resp.ErrorCode, tc.wantCode)
		}
		if got := answered(resp) == 1 && len(resp.Topics[0].Partitions[0].RecordBatches) > 0; got != tc.wantRecord {
			t.Errorf("%s: records %v, want %v", tc.name, got, tc.wantRecord)
		}
		if resp.SessionID != 0 {
			t.Errorf("%s: session id %d, want 0", tc.name, resp.SessionID)
		}
	}
	// A topic-id fetch (v13) of a session created by names.
	v13 := sessionFetch(id, 5, "", 0)
	v13.SetVersion(13)
	if resp := runRequest(t, br, v13).(*kmsg.FetchResponse); resp.ErrorCode != kerr.FetchSessionTopicIDError.Code {
		t.Errorf("v13 fetch of a v12 session: error %d", resp.ErrorCode)
	}
}

// An incremental fetch long-polls like any fetch: it waits for data on the
// session's partitions (none listed in the request) and answers once a
// produce makes some, well before MaxWait.
func TestFetchSessionLongPoll(t *testing.T) {
	br := startTestBroker(t)
	createTopic(t, br, "poll")
	full := runRequest(t, br, sessionFetch(0, 0, "poll", 0, 0)).(*kmsg.FetchResponse)
	if full.SessionID <= 0 {
		t.Fatalf("no session: %d", full.SessionID)
	}
	wait := sessionFetch(full.SessionID, 1, "", 0)
	wait.MaxWaitMillis, wait.MinBytes = 20000, 1
	done := make(chan *kmsg.FetchResponse, 1)
	start := time.Now()
	go func() {
		body, err := dispatchRequest(br, &protocol.ConnInfo{ID: 2, Listener: "PLAINTEXT"}, wait)
		if err != nil {
			done <- nil
			return
		}
		done <- body.(*kmsg.FetchResponse)
	}()
	select {
	case <-done:
		t.Fatal("the incremental fetch answered before any data")
	case <-time.After(100 * time.Millisecond):
	}
	if code := runRequest(t, br, testsupport.ProduceRequest("poll", 0, 1, 30000, benchBatch(1, 10))).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("produce: %d", code)
	}
	resp := <-done
	if resp == nil || answered(resp) != 1 || resp.Topics[0].Partitions[0].HighWatermark != 1 {
		t.Fatalf("long poll answer: %+v", resp)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("the long poll took %v", took)
	}
}

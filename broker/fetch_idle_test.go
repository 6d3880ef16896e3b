package broker

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/internal/testsupport"
	"github.com/kbroker/kbroker/protocol"
	"github.com/kbroker/kbroker/record"
	"github.com/kbroker/kbroker/replication"
	"github.com/kbroker/kbroker/storage"
)

// The idle partitions of a follower's fetch session (replication/idle.go):
// the leader skips them on the session's fetches until they move.

// leadWithFollower creates topic with n partitions on the single broker br
// and makes each a partition of replicas {1, 2}, ISR {1, 2}, led by br at a
// new epoch: broker 2 exists only as the follower the test fetches as.
// Nothing else changes the topic, so the controller's image (RF 1) is not
// applied again.
func leadWithFollower(tb testing.TB, br *Broker, topic string, n int32) (topicID [16]byte, epoch int32) {
	tb.Helper()
	ct := kmsg.NewPtrCreateTopicsRequest()
	ct.SetVersion(7)
	ct.TimeoutMillis = 30000
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = topic, n, 1
	ct.Topics = append(ct.Topics, t)
	if code := runRequest(tb, br, ct).(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode; code != 0 {
		tb.Fatalf("create topic: error %d", code)
	}
	// Thousands of partitions take a while on a loaded machine.
	deadline := time.Now().Add(5 * time.Minute)
	for i := int32(0); i < n; {
		if p, ok := br.replicas.Partition(topic, i); ok && p.Role() == replication.RoleLeader {
			i++
			continue
		}
		if time.Now().After(deadline) {
			tb.Fatalf("partition %d has no local leader after 5 min", i)
		}
		time.Sleep(10 * time.Millisecond)
	}
	topicID = br.view().img.Topics[topic].ID
	for i := range n {
		p, _ := br.replicas.Partition(topic, i)
		cur, _ := p.LeaderEpoch()
		epoch = cur + 1
		st := replication.PartitionState{Topic: topic, Partition: i, TopicID: topicID, Replicas: []int32{1, 2},
			ISR: []int32{1, 2}, Leader: 1, LeaderEpoch: epoch, PartitionEpoch: epoch + 100}
		if err := p.MakeLeader(st, 1); err != nil {
			tb.Fatal(err)
		}
	}
	return topicID, epoch
}

// replicaFetch is follower 2's Fetch v16 of session (id, sessionEpoch),
// listing partitions [0, n) of topicID at offset 0 (none when n is 0).
func replicaFetch(topicID [16]byte, leaderEpoch int32, id, sessionEpoch int32, n int32, maxWait int32) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(16)
	req.ReplicaID, req.ReplicaState.ID, req.ReplicaState.Epoch = 2, 2, -1
	req.MaxBytes, req.MinBytes, req.MaxWaitMillis = 10<<20, 1, maxWait
	req.SessionID, req.SessionEpoch = id, sessionEpoch
	if n > 0 {
		rt := kmsg.NewFetchRequestTopic()
		rt.TopicID = topicID
		for p := range n {
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch, rp.LastFetchedEpoch = p, 1<<20, leaderEpoch, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	return req
}

// An idle follower session's fetch reads none of its partitions; one that
// moves is read again, answered, and skipped again once idle.
func TestIdleFollowerSessionReadsNothing(t *testing.T) {
	const n = 20
	br := startTestBroker(t)
	topicID, epoch := leadWithFollower(t, br, "idle", n)
	fetch := func(req *kmsg.FetchRequest) *kmsg.FetchResponse {
		t.Helper()
		resp := runRequest(t, br, req).(*kmsg.FetchResponse)
		if resp.ErrorCode != 0 {
			t.Fatalf("fetch: %v", kerr.ErrorForCode(resp.ErrorCode))
		}
		return resp
	}
	full := fetch(replicaFetch(topicID, epoch, 0, 0, n, 0))
	if full.SessionID <= 0 || answered(full) != n {
		t.Fatalf("full fetch: session %d, %d partitions", full.SessionID, answered(full))
	}
	id := full.SessionID
	// The first incremental fetch reads every partition (the full fetch
	// marks none) and finds them idle.
	if resp := fetch(replicaFetch(topicID, epoch, id, 1, 0, 0)); answered(resp) != 0 {
		t.Fatalf("first incremental fetch answered %d partitions", answered(resp))
	}
	// The next reads none: the counter is the context's partitions to read.
	fs := br.newFetchSession(replicaFetch(topicID, epoch, id, 2, 0, 0))
	if fs.ctx.Len() != 0 || len(fs.read.Topics) != 0 {
		t.Fatalf("idle session fetch reads %d partitions (%d topics), want 0", fs.ctx.Len(), len(fs.read.Topics))
	}
	fs.finish(br.readFetchInto(fs.read, nil, nil, fs.follower))

	// A record to partition 7: read and answered with it.
	part, _ := br.replicas.Partition("idle", 7)
	if _, err := part.AppendAsLeader(produceBatches(t, 1), 1, storage.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	fs = br.newFetchSession(replicaFetch(topicID, epoch, id, 3, 0, 0))
	if fs.ctx.Len() != 1 || fs.ctx.Partition(0).Partition != 7 {
		t.Fatalf("after an append the fetch reads %d partitions, want partition 7 alone", fs.ctx.Len())
	}
	fr := br.readFetchInto(fs.read, nil, nil, fs.follower)
	fs.finish(fr)
	if answered(fr.resp) != 1 || len(fr.resp.Topics[0].Partitions[0].RecordBatches) == 0 {
		t.Fatalf("answer %+v, want partition 7's record", fr.resp.Topics)
	}
	fr.release()
	// The follower lists partition 7 at its new offset: the HW moves and it
	// is answered; then everything is idle again.
	req := replicaFetch(topicID, epoch, id, 4, 0, 0)
	rt := kmsg.NewFetchRequestTopic()
	rt.TopicID = topicID
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch, rp.LastFetchedEpoch = 7, 1, 1<<20, epoch, epoch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	if resp := fetch(req); answered(resp) != 1 || resp.Topics[0].Partitions[0].HighWatermark != 1 {
		t.Fatalf("fetch at the new offset: %+v", resp.Topics)
	}
	if hw, _, _ := part.Offsets(); hw != 1 {
		t.Fatalf("leader HW %d, want 1", hw)
	}
	fs = br.newFetchSession(replicaFetch(topicID, epoch, id, 5, 0, 0))
	if fs.ctx.Len() != 0 {
		t.Fatalf("caught up again, the fetch reads %d partitions, want 0", fs.ctx.Len())
	}
	fs.finish(br.readFetchInto(fs.read, nil, nil, fs.follower))
}

// A follower's long poll that skipped its idle partitions is answered as
// soon as one of them gets a record, not at MaxWait.
func TestIdleFollowerSessionLongPollWakes(t *testing.T) {
	const n = 20
	br := startTestBroker(t)
	topicID, epoch := leadWithFollower(t, br, "idlepoll", n)
	full := runRequest(t, br, replicaFetch(topicID, epoch, 0, 0, n, 0)).(*kmsg.FetchResponse)
	id := full.SessionID
	runRequest(t, br, replicaFetch(topicID, epoch, id, 1, 0, 0)) // marks them idle
	done := make(chan *kmsg.FetchResponse, 1)
	go func() {
		body, err := dispatchRequest(br, &protocol.ConnInfo{ID: 2, Listener: "PLAINTEXT"}, replicaFetch(topicID, epoch, id, 2, 0, 120_000))
		if err != nil {
			done <- nil
			return
		}
		done <- body.(*kmsg.FetchResponse)
	}()
	// Wait until the long poll is parked on the idle partitions (the
	// session's waiter is what wakes it), then append.
	part, _ := br.replicas.Partition("idlepoll", 13)
	deadline := time.Now().Add(20 * time.Second)
	for !sessionWaiting(br, id) {
		if time.Now().After(deadline) {
			t.Fatal("the long poll never started")
		}
		time.Sleep(time.Millisecond)
	}
	if _, err := part.AppendAsLeader(produceBatches(t, 1), 1, storage.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	select {
	case resp := <-done:
		if resp == nil || answered(resp) != 1 || resp.Topics[0].Partitions[0].Partition != 13 ||
			len(resp.Topics[0].Partitions[0].RecordBatches) == 0 {
			t.Fatalf("long poll answer %+v, want partition 13's record", resp)
		}
	case <-ctx.Done():
		t.Fatal("an append to an idle partition did not wake the follower's long poll (MaxWait is 120 s)")
	}
}

// sessionWaiting reports whether session id's fetch of epoch 2 has begun
// (the session expects epoch 3): it then reads or waits.
func sessionWaiting(br *Broker, id int32) bool {
	epoch, ok := br.fetchSessions.NextEpoch(id)
	return ok && epoch == 3
}

// produceBatches is one parsed batch of n records, as a produce request
// hands the partition.
func produceBatches(tb testing.TB, n int) []record.Batch {
	tb.Helper()
	pb, err := record.ParseProduce(benchBatch(n, 10))
	if err != nil {
		tb.Fatal(err)
	}
	return []record.Batch{pb}
}

// BenchmarkIdleReplicaFetch is the leader's cost of one idle incremental
// fetch of a follower's session of 3,000 partitions (MaxWait 0): the
// request lists none, nothing moved, the response is empty. Before idle
// marks (replication/idle.go) the leader read every partition of the
// session on each such fetch (issue 20, part 3).
func BenchmarkIdleReplicaFetch(b *testing.B) {
	const n = 3000
	br := startTestBroker(b)
	topicID, epoch := leadWithFollower(b, br, "idlebench", n)
	info := &protocol.ConnInfo{ID: 1, Listener: "PLAINTEXT"}
	var buf []byte
	var body kmsg.Response
	buf, body = serveFrame(b, br, encodeFrame(replicaFetch(topicID, epoch, 0, 0, n, 0)), info, buf)
	id := body.(*kmsg.FetchResponse).SessionID
	if id <= 0 {
		b.Fatalf("no session: id %d", id)
	}
	sessionEpoch := int32(1)
	req := replicaFetch(topicID, epoch, id, 0, 0, 0)
	fetch := func() {
		req.SessionEpoch = sessionEpoch
		buf, body = serveFrame(b, br, encodeFrame(req), info, buf)
		if fr := body.(*kmsg.FetchResponse); fr.ErrorCode != 0 || len(fr.Topics) != 0 {
			b.Fatalf("idle incremental fetch: error %d, %d topics", fr.ErrorCode, len(fr.Topics))
		}
		sessionEpoch++
	}
	fetch() // the first incremental fetch finds the partitions idle
	b.ReportAllocs()
	for b.Loop() {
		fetch()
	}
}

// The console samples only the topic throughput counters, not every
// partition's state metrics (a whole Gather every few seconds was the
// largest idle cost left at thousands of partitions).
func TestConsoleSamplesThroughputCountersOnly(t *testing.T) {
	br := startTestBroker(t)
	createTopic(t, br, "tput")
	if code := runRequest(t, br, testsupport.ProduceRequest("tput", 0, 1, 30000, benchBatch(3, 10))).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("produce: %d", code)
	}
	families, err := br.metrics.throughput().Gather()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"kbroker_topic_bytes_in_total": true, "kbroker_topic_records_in_total": true,
		"kbroker_topic_bytes_out_total": true, "kbroker_topic_records_out_total": true}
	var recordsIn float64
	for _, f := range families {
		if !want[f.GetName()] {
			t.Errorf("the console's gatherer has %s", f.GetName())
		}
		if f.GetName() == "kbroker_topic_records_in_total" {
			for _, m := range f.GetMetric() {
				recordsIn += m.GetCounter().GetValue()
			}
		}
	}
	if recordsIn != 3 {
		t.Fatalf("records in %v, want 3", recordsIn)
	}
}

// fetchAt is follower 2's incremental fetch of session (id, sessionEpoch)
// listing partition 0 of topicID at offset, with a long poll of maxWait ms.
func fetchAt(topicID [16]byte, leaderEpoch, id, sessionEpoch int32, offset int64, maxWait int32) *kmsg.FetchRequest {
	req := replicaFetch(topicID, leaderEpoch, id, sessionEpoch, 0, maxWait)
	rt := kmsg.NewFetchRequestTopic()
	rt.TopicID = topicID
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch, rp.LastFetchedEpoch = 0, offset, 1<<20, leaderEpoch, leaderEpoch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// A follower fetch whose only news is the HW its own fetch moved is not
// answered at once (that answer and the follower's next fetch were two of
// the ten messages of every acks=all record at RF=3): the next append
// answers it with its records and the new HW together, and without an
// append the news goes out after followerNewsLinger, not at MaxWait.
func TestFollowerHWNewsRidesWithNextAppend(t *testing.T) {
	br := startTestBroker(t)
	topicID, epoch := leadWithFollower(t, br, "news", 1)
	part, _ := br.replicas.Partition("news", 0)
	appendOne := func() {
		t.Helper()
		if _, err := part.AppendAsLeader(produceBatches(t, 1), 1, storage.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	id := runRequest(t, br, replicaFetch(topicID, epoch, 0, 0, 1, 0)).(*kmsg.FetchResponse).SessionID
	appendOne()
	if resp := runRequest(t, br, fetchAt(topicID, epoch, id, 1, 0, 0)).(*kmsg.FetchResponse); answered(resp) != 1 {
		t.Fatalf("fetch at 0 answered %d partitions, want the record", answered(resp))
	}

	// The follower acknowledges offset 0 (fetch at 1): the HW moves to 1,
	// news for its session, but no record to send.
	parsed, err := protocol.ParseRequest(encodeFrame(fetchAt(topicID, epoch, id, 2, 1, 60_000)))
	if err != nil {
		t.Fatal(err)
	}
	parsed.Conn = &protocol.ConnInfo{ID: 1, Listener: "PLAINTEXT"}
	resp := br.dispatch.Handle(context.Background(), parsed)
	if hw, _, _ := part.Offsets(); hw != 1 {
		t.Fatalf("leader HW %d after the follower's fetch at 1, want 1", hw)
	}
	if resp.Later == nil {
		t.Fatal("a fetch with HW news and no records was answered at once, not held for the next append")
	}
	appendOne()
	body := resp.Later(context.Background()).(*kmsg.FetchResponse)
	if answered(body) != 1 {
		t.Fatalf("long poll answered %d partitions, want 1", answered(body))
	}
	p := body.Topics[0].Partitions[0]
	if len(p.RecordBatches) == 0 || p.HighWatermark != 1 {
		t.Fatalf("long poll answer: %d record bytes, HW %d; want the second record with HW 1", len(p.RecordBatches), p.HighWatermark)
	}
	if resp.Done != nil {
		resp.Done()
	}

	// Acknowledging offset 1 moves the HW to 2; nothing else is appended:
	// the news is answered after the linger, long before MaxWait (120 s).
	done := make(chan *kmsg.FetchResponse, 1)
	go func() {
		body, err := dispatchRequest(br, &protocol.ConnInfo{ID: 2, Listener: "PLAINTEXT"}, fetchAt(topicID, epoch, id, 3, 2, 120_000))
		if err != nil {
			done <- nil
			return
		}
		done <- body.(*kmsg.FetchResponse)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	select {
	case body := <-done:
		if body == nil || answered(body) != 1 || body.Topics[0].Partitions[0].HighWatermark != 2 ||
			len(body.Topics[0].Partitions[0].RecordBatches) != 0 {
			t.Fatalf("news-only answer %+v, want partition 0 with HW 2 and no records", body)
		}
	case <-ctx.Done():
		t.Fatal("HW news without an append waited for MaxWait (120 s)")
	}
}

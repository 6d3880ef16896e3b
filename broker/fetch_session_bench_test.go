package broker

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/protocol"
	"github.com/kbroker/kbroker/replication"
)

// BenchmarkFetchSession is an idle consumer fetch of 1,000 empty partitions
// (MaxWait 0), the broker's whole cost from frame to encoded response:
// sessionless, the request listing every partition and the response
// answering each; and incremental in a session, the request listing none
// and the response empty, the broker reading every session partition all
// the same. The session's frames are encoded in the loop (a new epoch
// each), the sessionless one once, which favours sessionless.
func BenchmarkFetchSession(b *testing.B) {
	const partitions = 1000
	br := startTestBroker(b)
	createTopicN(b, br, "sessions", partitions)
	topicID := br.view().img.Topics["sessions"].ID
	info := &protocol.ConnInfo{ID: 1, Listener: "PLAINTEXT"}
	full := func(id, epoch int32) *kmsg.FetchRequest {
		req := kmsg.NewPtrFetchRequest()
		req.SetVersion(16)
		req.ReplicaID, req.MaxBytes, req.SessionID, req.SessionEpoch = -1, 1<<20, id, epoch
		rt := kmsg.NewFetchRequestTopic()
		rt.TopicID = topicID
		for p := range int32(partitions) {
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.PartitionMaxBytes = p, 1<<20
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		return req
	}
	var buf []byte
	b.Run("sessionless", func(b *testing.B) {
		frame := encodeFrame(full(-1, -1))
		b.SetBytes(int64(len(frame)))
		b.ReportAllocs()
		for b.Loop() {
			buf, _ = serveFrame(b, br, frame, info, buf)
		}
	})
	b.Run("incremental", func(b *testing.B) {
		var body kmsg.Response
		buf, body = serveFrame(b, br, encodeFrame(full(0, 0)), info, buf)
		id := body.(*kmsg.FetchResponse).SessionID
		if id <= 0 {
			b.Fatalf("no session: id %d", id)
		}
		epoch := int32(1)
		req := kmsg.NewPtrFetchRequest()
		req.SetVersion(16)
		req.ReplicaID, req.MaxBytes, req.SessionID = -1, 1<<20, id
		b.ReportAllocs()
		for b.Loop() {
			req.SessionEpoch = epoch
			frame := encodeFrame(req)
			b.SetBytes(int64(len(frame)))
			buf, body = serveFrame(b, br, frame, info, buf)
			if fr := body.(*kmsg.FetchResponse); fr.ErrorCode != 0 || len(fr.Topics) != 0 {
				b.Fatalf("incremental idle fetch: error %d, %d topics", fr.ErrorCode, len(fr.Topics))
			}
			epoch++
		}
	})
}

// createTopicN creates a topic of n partitions and waits until br leads
// them all.
func createTopicN(tb testing.TB, br *Broker, name string, n int32) {
	tb.Helper()
	ct := kmsg.NewPtrCreateTopicsRequest()
	ct.SetVersion(7)
	ct.TimeoutMillis = 30000
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = name, n, 1
	ct.Topics = append(ct.Topics, t)
	if code := runRequest(tb, br, ct).(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode; code != 0 {
		tb.Fatalf("create topic: error %d", code)
	}
	deadline := time.Now().Add(60 * time.Second)
	for p := int32(0); p < n; {
		if part, ok := br.replicas.Partition(name, p); ok && part.Role() == replication.RoleLeader {
			p++
			continue
		}
		if time.Now().After(deadline) {
			tb.Fatalf("partition %d has no local leader after 60s", p)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

package broker

import (
	"encoding/binary"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/broker/fetchsession"
)

// FuzzFetchSessions decodes arbitrary Fetch request bodies (v7-v16, the
// version from the first byte) and runs each through the session cache and
// the session's read request and response filter, as handleFetch does, on
// one cache shared by the whole run (small, with predictable session ids,
// so that inputs name sessions that exist). A request must be served by
// reading each partition once and an incremental response must carry only
// partitions of its read request, whatever the input.
func FuzzFetchSessions(f *testing.F) {
	id := int32(0)
	cache := fetchsession.New(fetchsession.Options{MaxSlots: 4, NewID: func() int32 { id = id%8 + 1; return id }})
	for _, seed := range fetchSessionSeeds() {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 1 {
			return
		}
		version := int16(7 + int(data[0])%10)
		req := kmsg.NewPtrFetchRequest()
		req.SetVersion(version)
		if err := req.ReadFrom(data[1:]); err != nil {
			return
		}
		ctx := cache.NewContext(sessionRequest(req, req.ReplicaID >= 0))
		if ctx.Kind == fetchsession.Failed {
			return
		}
		fs := fetchSession{ctx: ctx, read: req}
		if ctx.Kind == fetchsession.Incremental {
			fs.read = sessionReadRequest(req, ctx)
		}
		fr := &fetchRead{resp: kmsg.NewPtrFetchResponse()}
		fr.resp.SetVersion(version)
		n := 0
		for i, rt := range fs.read.Topics {
			out := kmsg.NewFetchResponseTopic()
			out.Topic, out.TopicID = rt.Topic, rt.TopicID
			for j, rp := range rt.Partitions {
				op := kmsg.NewFetchResponseTopicPartition()
				op.Partition = rp.Partition
				// Offsets and records from the input, so that answers vary.
				op.HighWatermark = int64(binary.LittleEndian.Uint16(append(data[(i+j)%len(data):], 0, 0))) % 4
				op.LastStableOffset, op.LogStartOffset = op.HighWatermark, 0
				if op.HighWatermark == 3 {
					op.RecordBatches = []byte{1}
				}
				out.Partitions = append(out.Partitions, op)
				n++
			}
			fr.resp.Topics = append(fr.resp.Topics, out)
		}
		if n != ctx.Len() {
			t.Fatalf("%v fetch: read request of %d partitions for a context of %d", ctx.Kind, n, ctx.Len())
		}
		fs.hasNews(fr)
		fs.finish(fr)
		kept := 0
		for _, t := range fr.resp.Topics {
			kept += len(t.Partitions)
		}
		if kept > n || (ctx.Kind != fetchsession.Incremental && kept != n) {
			t.Fatalf("%v fetch answered %d of %d partitions", ctx.Kind, kept, n)
		}
		if st := cache.Stats(); st.Sessions > 4 || st.Partitions < 0 {
			t.Fatalf("cache stats %+v", st)
		}
	})
}

// fetchSessionSeeds are request bodies (a version byte, then the body)
// that create sessions and use them: full, incremental with forgotten
// partitions, sessionless, by names and by topic ids.
func fetchSessionSeeds() [][]byte {
	var out [][]byte
	add := func(version int16, id, epoch int32, topics int, forget bool) {
		req := kmsg.NewPtrFetchRequest()
		req.SetVersion(version)
		req.ReplicaID, req.SessionID, req.SessionEpoch = -1, id, epoch
		for ti := range topics {
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic, rt.TopicID = string(rune('a'+ti)), [16]byte{byte(ti + 1)}
			for p := range int32(3) {
				rp := kmsg.NewFetchRequestTopicPartition()
				rp.Partition, rp.FetchOffset = p, int64(p)
				rt.Partitions = append(rt.Partitions, rp)
			}
			req.Topics = append(req.Topics, rt)
		}
		if forget {
			ft := kmsg.NewFetchRequestForgottenTopic()
			ft.Topic, ft.TopicID, ft.Partitions = "a", [16]byte{1}, []int32{0, 2}
			req.ForgottenTopics = append(req.ForgottenTopics, ft)
		}
		out = append(out, append([]byte{byte(version - 7)}, req.AppendTo(nil)...))
	}
	for _, v := range []int16{12, 16} {
		add(v, 0, 0, 2, false)
		add(v, 1, 1, 0, false)
		add(v, 1, 2, 1, true)
		add(v, -1, -1, 1, false)
		add(v, 1, 0, 1, false)
	}
	return out
}

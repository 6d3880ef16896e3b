package broker

// Fetch sessions (KIP-227) on the Fetch path: the translation between
// kmsg's Fetch request and response and package fetchsession's cache.
//
// A request is turned into a fetchsession.Context. A Failed context is
// answered with its top-level error alone. For the others, the partitions
// to read become a request of their own (the request itself for full and
// sessionless fetches; the session's partitions, in the session's order,
// with their cached parameters, for an incremental one), which the fetch
// path reads and long-polls as any request. Once the last read is made,
// finish records each partition's result in the session and drops from an
// incremental response the partitions without news.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/broker/fetchsession"
	"github.com/kbroker/kbroker/replication"
)

// fetchSession is one Fetch request's session context.
type fetchSession struct {
	ctx *fetchsession.Context
	req *kmsg.FetchRequest // the request
	// read is the request the fetch path reads: the request itself, or the
	// session's partitions for an incremental fetch, but for the idle
	// partitions of a follower's session (replication/idle.go).
	read *kmsg.FetchRequest
	// follower is, for a follower's incremental fetch, its session's
	// state in replication: idle partitions get marks of it.
	follower *replication.FollowerSession
}

// newFetchSession resolves r's session fields against the broker's cache.
func (b *Broker) newFetchSession(r *kmsg.FetchRequest) fetchSession {
	replicaID, _ := replication.FetchReplica(r)
	ctx := b.fetchSessions.NewContext(sessionRequest(r, replicaID >= 0))
	fs := fetchSession{ctx: ctx, req: r, read: r}
	if ctx.Kind == fetchsession.Incremental {
		fs.read = sessionReadRequest(r, ctx)
		if t, ok := ctx.Tracker().(*followerTracker); ok && replicaID >= 0 {
			fs.follower = t.FollowerSession
		}
	}
	return fs
}

// followerTracker is a follower session's replication state as the fetch
// session cache tracks it (fetchsession.Tracker).
type followerTracker struct {
	*replication.FollowerSession
	buf []*replication.IdleMark // Changed's, reused (one fetch of a session at a time)
}

// Changed appends the session's marks that may have changed since the
// last call (replication.FollowerSession.Changed).
func (t *followerTracker) Changed(out []fetchsession.Idle) []fetchsession.Idle {
	t.buf = t.FollowerSession.Changed(t.buf[:0])
	for _, m := range t.buf {
		out = append(out, m)
	}
	clear(t.buf)
	return out
}

// refresh checks the idle partitions an incremental follower fetch skipped
// again, once one of them may have moved, and reports whether the fetch
// now reads more partitions (fs.read then lists them).
func (fs *fetchSession) refresh() bool {
	if !fs.ctx.Refresh() {
		return false
	}
	fs.read = sessionReadRequest(fs.req, fs.ctx)
	return true
}

// sessionRequest is what the cache needs of r. Fetch v7+ carries session
// fields; below, kmsg's defaults (id 0, epoch -1) make it sessionless.
func sessionRequest(r *kmsg.FetchRequest, follower bool) fetchsession.Request {
	byID := r.Version >= 13
	sr := fetchsession.Request{Version: r.Version, SessionID: r.SessionID, Epoch: r.SessionEpoch, Follower: follower}
	if r.Version < 7 {
		sr.SessionID, sr.Epoch = 0, fetchsession.FinalEpoch
	}
	n := 0
	for i := range r.Topics {
		n += len(r.Topics[i].Partitions)
	}
	sr.Partitions = make([]fetchsession.Partition, 0, n)
	for _, rt := range r.Topics {
		for _, rp := range rt.Partitions {
			sr.Partitions = append(sr.Partitions, fetchsession.Partition{
				Key: sessionKey(byID, rt.TopicID, rt.Topic, rp.Partition),
				Params: fetchsession.Params{FetchOffset: rp.FetchOffset, CurrentLeaderEpoch: rp.CurrentLeaderEpoch,
					LastFetchedEpoch: rp.LastFetchedEpoch, LogStartOffset: rp.LogStartOffset, MaxBytes: rp.PartitionMaxBytes},
			})
		}
	}
	for _, ft := range r.ForgottenTopics {
		for _, p := range ft.Partitions {
			sr.Forgotten = append(sr.Forgotten, sessionKey(byID, ft.TopicID, ft.Topic, p))
		}
	}
	return sr
}

func sessionKey(byID bool, id [16]byte, topic string, partition int32) fetchsession.Key {
	if byID {
		return fetchsession.Key{TopicID: id, Partition: partition}
	}
	return fetchsession.Key{Topic: topic, Partition: partition}
}

// sessionReadRequest is r with the session's partitions in place of its
// own: consecutive partitions of one topic share a topic entry. The
// partitions share one allocation.
func sessionReadRequest(r *kmsg.FetchRequest, ctx *fetchsession.Context) *kmsg.FetchRequest {
	read := *r
	read.Topics = nil
	read.ForgottenTopics = nil
	parts := make([]kmsg.FetchRequestTopicPartition, ctx.Len())
	start := 0
	for i := range parts {
		p := ctx.Partition(i)
		parts[i] = kmsg.FetchRequestTopicPartition{Partition: p.Key.Partition, CurrentLeaderEpoch: p.CurrentLeaderEpoch,
			FetchOffset: p.FetchOffset, LastFetchedEpoch: p.LastFetchedEpoch, LogStartOffset: p.LogStartOffset,
			PartitionMaxBytes: p.MaxBytes}
		if n := len(read.Topics); n == 0 || read.Topics[n-1].Topic != p.Topic || read.Topics[n-1].TopicID != p.TopicID {
			if n > 0 {
				read.Topics[n-1].Partitions = parts[start:i:i]
			}
			start = i
			t := kmsg.NewFetchRequestTopic()
			t.Topic, t.TopicID = p.Topic, p.TopicID
			read.Topics = append(read.Topics, t)
		}
	}
	if n := len(read.Topics); n > 0 {
		read.Topics[n-1].Partitions = parts[start:]
	}
	return &read
}

// sessionResult is what the session rule looks at in a response partition.
func sessionResult(p *kmsg.FetchResponseTopicPartition) fetchsession.Result {
	return fetchsession.Result{
		Records: len(p.RecordBatches) > 0, HighWatermark: p.HighWatermark, LastStableOffset: p.LastStableOffset,
		LogStartOffset: p.LogStartOffset, ErrorCode: p.ErrorCode, PreferredReadReplica: p.PreferredReadReplica,
		Diverging: p.DivergingEpoch.EndOffset >= 0,
	}
}

// withIdle is r with the i-th partition's idle mark of read fr, if any.
func withIdle(r fetchsession.Result, fr *fetchRead, i int) fetchsession.Result {
	if i < len(fr.idle) && fr.idle[i] != nil {
		r.Idle = fr.idle[i]
	}
	return r
}

// hasNews reports whether a read (of fs.read) holds a partition an
// incremental follower fetch must hear of soon: a follower learns the high
// watermark and log start offset within followerNewsLinger of their move,
// with the next append when one comes first, not a replica.fetch.wait.max.ms
// later (the effect of Kafka's KIP-1166 with a session's memory).
func (fs fetchSession) hasNews(fr *fetchRead) bool {
	if fs.ctx.Kind != fetchsession.Incremental || !fs.ctx.Privileged() {
		return false
	}
	i := 0
	for ti := range fr.resp.Topics {
		for pi := range fr.resp.Topics[ti].Partitions {
			if fs.ctx.HasNews(i, sessionResult(&fr.resp.Topics[ti].Partitions[pi])) {
				return true
			}
			i++
		}
	}
	return false
}

// finish records the answered read in the session, keeps in its response
// only what the session's kind answers, and sets the session id.
func (fs fetchSession) finish(fr *fetchRead) {
	n := fs.ctx.Len()
	results := make([]fetchsession.Result, 0, n)
	for ti := range fr.resp.Topics {
		for pi := range fr.resp.Topics[ti].Partitions {
			results = append(results, withIdle(sessionResult(&fr.resp.Topics[ti].Partitions[pi]), fr, len(results)))
		}
	}
	if len(results) != n {
		// Every partition read is answered once, in order: anything else
		// is a bug of the read path; answer in full rather than misfile.
		for _, m := range fr.idle {
			if m != nil {
				m.Release()
			}
		}
		fr.resp.SessionID = 0
		return
	}
	keep := make([]bool, n)
	fr.resp.SessionID = fs.ctx.Respond(results, keep)
	if fs.ctx.Kind != fetchsession.Incremental {
		return
	}
	k, topics := 0, fr.resp.Topics[:0]
	for _, t := range fr.resp.Topics {
		parts := t.Partitions[:0]
		for _, p := range t.Partitions {
			if keep[k] {
				parts = append(parts, p)
			}
			k++
		}
		if len(parts) > 0 {
			t.Partitions = parts
			topics = append(topics, t)
		}
	}
	fr.resp.Topics = topics
}

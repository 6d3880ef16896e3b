package broker

// Fetch (key 1), v4-v16.
//
// Consumers read up to the high watermark, or with isolation_level
// read_committed up to the last stable offset, with the aborted transactions
// overlapping what they read (Kafka's collectAbortedTxns; never null for
// read_committed, absent for read_uncommitted); followers (replica id >= 0, v15+
// in ReplicaState with their broker epoch, KIP-903) read up to the log end
// offset, and their fetch offset is their LEO as the leader sees it
// (replication.Partition.UpdateFollowerAndRead). From v13 topics go by id,
// for followers as for consumers.
// A fetch offset inside a batch returns the whole batch; above the HW a
// consumer gets no records and no error; below the log start or above the log
// end it gets OFFSET_OUT_OF_RANGE. The first partition with data returns at
// least one whole batch even beyond the byte limits (KIP-74).
//
// Authorization: consumers need READ on each topic, followers CLUSTER
// CLUSTER_ACTION (TOPIC_AUTHORIZATION_FAILED on every partition otherwise).
//
// Long poll: when fewer than MinBytes are ready the request waits, on the
// connection's writer, until appends or HW moves on its partitions make
// MinBytes available or MaxWaitMillis passes; it is woken by the partitions'
// watchers, never by polling. A follower's session news without records (a
// HW move) ends the wait after followerNewsLinger, unless an append comes
// first and carries it.
//
// Fetch sessions (KIP-227, v7+): fetch_session.go and package
// broker/fetchsession. An incremental fetch reads the session's partitions
// and answers those with news; a full fetch with epoch 0 creates a session.

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/broker/fetchsession"
	"github.com/kbroker/kbroker/protocol"
	"github.com/kbroker/kbroker/record"
	"github.com/kbroker/kbroker/replication"
	"github.com/kbroker/kbroker/storage"
)

// fetchRead is one pass over a fetch request's partitions.
type fetchRead struct {
	resp     *kmsg.FetchResponse
	bytes    int
	hasError bool
	// redirected is set when a partition names a preferred read replica
	// (KIP-392): answered at once, as an error is.
	redirected bool
	releases   []func()
	// files holds, for each partition with records in resp's order, the
	// open segment file its records come from (nil when none is open).
	files []fetchFile
	// follower is the follower session a read for an incremental follower
	// fetch marks idle partitions for, and idle holds, for each partition
	// in resp's order, its mark (nil: not idle); both nil otherwise.
	follower *replication.FollowerSession
	idle     []*replication.IdleMark
}

// ready reports whether the read is the answer: MinBytes reached, or a
// partition that must be answered at once (an error, a preferred replica).
func (fr *fetchRead) ready(minBytes int) bool {
	return fr.bytes >= minBytes || fr.hasError || fr.redirected
}

// body is the response to write: with writev when it carries enough
// record bytes to make skipping the copy worth a syscall.
func (fr *fetchRead) body() kmsg.Response {
	if fr.bytes >= zeroCopyMin && vectorable(fr.resp) {
		return vectorFetch{fr.resp, fr.files}
	}
	return fr.resp
}

func (fr *fetchRead) release() {
	for _, rel := range fr.releases {
		rel()
	}
	clear(fr.releases)
	clear(fr.files) // pins nothing
	fr.releases, fr.files = fr.releases[:0], fr.files[:0]
}

// reset empties fr for another read of the same request, keeping what it
// allocated: a long poll reads its partitions again on every wake-up.
// Only a read that was released and not answered may be reset.
func (fr *fetchRead) reset() {
	fr.bytes, fr.hasError, fr.redirected = 0, false, false
	clear(fr.idle)
	fr.idle = fr.idle[:0]
	for i := range fr.resp.Topics {
		clear(fr.resp.Topics[i].Partitions)
		fr.resp.Topics[i].Partitions = fr.resp.Topics[i].Partitions[:0]
	}
	fr.resp.Topics = fr.resp.Topics[:0]
	fr.resp.Brokers = fr.resp.Brokers[:0]
}

// partitionsFor returns an empty slice for the partitions of the response's
// topic ti: the one a reset read left there, or a new one with room for n.
func (fr *fetchRead) partitionsFor(ti, n int) []kmsg.FetchResponseTopicPartition {
	if ti < cap(fr.resp.Topics) {
		if parts := fr.resp.Topics[:ti+1][ti].Partitions; parts != nil {
			return parts[:0]
		}
	}
	return make([]kmsg.FetchResponseTopicPartition, 0, n)
}

func (b *Broker) handleFetch(_ context.Context, req *protocol.Request) protocol.Response {
	r := req.Body.(*kmsg.FetchRequest)
	fs := b.newFetchSession(r)
	if fs.ctx.Kind == fetchsession.Failed {
		resp := r.ResponseKind().(*kmsg.FetchResponse)
		resp.ErrorCode = fs.ctx.ErrorCode
		return protocol.Response{Body: resp}
	}
	denied := b.fetchDenied(req, fs.read)
	first := b.readFetchInto(fs.read, denied, nil, fs.follower)
	minBytes := max(int(r.MinBytes), 1)
	if first.ready(minBytes) || r.MaxWaitMillis <= 0 {
		fs.finish(first)
		return protocol.Response{Body: first.body(), Done: first.release}
	}
	first.release()
	var last *fetchRead
	return protocol.Response{
		Later: func(ctx context.Context) kmsg.Response {
			last = b.longPollFetch(ctx, req, &fs, minBytes, denied, first)
			fs.finish(last)
			return last.body()
		},
		Done: func() {
			if last != nil {
				last.release()
			}
		},
	}
}

// followerNewsLinger is how long a follower's long poll whose session has
// news without records (the HW or log start offset moved) waits for an
// append to carry the news with it. Under acks=all every HW move follows a
// follower's fetch, so answering the news at once cost each follower a
// second fetch round trip for every produce request (BenchmarkReplicatedProduce:
// 10 messages per record instead of 6); the next append, a fraction of a
// millisecond away under load, answers the fetch with records and the new
// HW together. An idle partition's followers still learn its HW within
// this linger rather than replica.fetch.wait.max.ms later (fetch_session.go,
// hasNews).
const followerNewsLinger = 5 * time.Millisecond

// longPollFetch waits until MinBytes are ready, MaxWait passes, the
// connection closes, or a follower's session has had news for
// followerNewsLinger, and returns the last read of fs.read, made into res
// (the handler's first read, released). The idle partitions a follower's
// session skipped wake it through the session (replication/idle.go): it
// then reads those that moved too.
func (b *Broker) longPollFetch(ctx context.Context, req *protocol.Request, fs *fetchSession, minBytes int, denied map[string]bool, res *fetchRead) *fetchRead {
	w := replication.NewWaiterFor(fetchWakeEvents(fs.read, *fs))
	parts := b.fetchPartitions(fs.read)
	for _, p := range parts {
		p.WatchOn(w)
	}
	defer func() {
		for _, p := range parts {
			p.Unwatch(w)
		}
	}()
	var idleWake <-chan struct{}
	if fs.follower != nil {
		idleWake = fs.follower.Woken()
	}
	maxWait := time.Duration(fs.read.MaxWaitMillis) * time.Millisecond
	timer := time.NewTimer(maxWait)
	defer timer.Stop()
	lingering := false // the session has news: the timer ends the linger
	for {
		// Read before waiting: an append or HW move between the handler's
		// first read and the watchers' registration above woke nobody.
		res = b.readFetchInto(fs.read, denied, res, fs.follower)
		if res.ready(minBytes) {
			return res
		}
		if !lingering && fs.hasNews(res) {
			lingering = true
			if followerNewsLinger < maxWait {
				timer.Reset(followerNewsLinger)
			}
		}
		res.release()
		select {
		case <-w.C:
		case <-idleWake:
			if fs.refresh() {
				denied = b.fetchDenied(req, fs.read)
				more := b.fetchPartitions(fs.read)
				for _, p := range more {
					p.WatchOn(w) // a set: the partitions watched already stay once
				}
				parts = more
			}
		case <-timer.C:
			return b.readFetchInto(fs.read, denied, res, fs.follower)
		case <-ctx.Done():
			return b.readFetchInto(fs.read, denied, res, fs.follower)
		}
	}
}

// fetchWakeEvents are the changes that can give a waiting fetch more to
// read: appends for a follower, which reads up to the log end, and HW moves
// too when its session answers them (hasNews); HW moves for a consumer,
// which reads up to it. A read_committed consumer is woken by both: its
// bound, the last stable offset, also moves with the markers that end
// transactions.
func fetchWakeEvents(r *kmsg.FetchRequest, fs fetchSession) replication.Events {
	replicaID, _ := replication.FetchReplica(r)
	switch {
	case replicaID >= 0 && fs.ctx.Kind == fetchsession.Incremental:
		return replication.LogEndMoved | replication.HighWatermarkMoved
	case replicaID >= 0:
		return replication.LogEndMoved
	case r.IsolationLevel == 1:
		return replication.LogEndMoved | replication.HighWatermarkMoved
	}
	return replication.HighWatermarkMoved
}

// fetchPartitions lists the partitions a fetch names that this broker holds.
func (b *Broker) fetchPartitions(r *kmsg.FetchRequest) []*replication.Partition {
	view := b.view()
	var out []*replication.Partition
	for _, rt := range r.Topics {
		name := b.fetchTopicName(view, r.Version, rt)
		for _, rp := range rt.Partitions {
			if p, ok := b.replicas.Partition(name, rp.Partition); ok {
				out = append(out, p)
			}
		}
	}
	return out
}

func (b *Broker) fetchTopicName(view *metadataView, version int16, rt kmsg.FetchRequestTopic) string {
	if version < 13 {
		return rt.Topic
	}
	if t, ok := view.topicByID(rt.TopicID); ok {
		return t.Name
	}
	return ""
}

// readFetch reads every partition of r once; the topics in denied are
// answered TOPIC_AUTHORIZATION_FAILED.
func (b *Broker) readFetch(r *kmsg.FetchRequest, denied map[string]bool) *fetchRead {
	return b.readFetchInto(r, denied, nil, nil)
}

// readFetchInto is readFetch into fr, a released earlier read of r (reset
// and reused), or into a new one when fr is nil. For a follower's
// incremental fetch, follower is its session: idle partitions are marked.
func (b *Broker) readFetchInto(r *kmsg.FetchRequest, denied map[string]bool, fr *fetchRead, follower *replication.FollowerSession) *fetchRead {
	view := b.view()
	replicaID, _ := replication.FetchReplica(r)
	if fr == nil {
		fr = &fetchRead{resp: r.ResponseKind().(*kmsg.FetchResponse)}
		fr.resp.Topics = make([]kmsg.FetchResponseTopic, 0, len(r.Topics))
	} else {
		fr.reset()
	}
	fr.follower = follower
	budget := int(r.MaxBytes)
	if budget <= 0 {
		budget = int(^uint32(0) >> 1)
	}
	minOne := true
	for ti, rt := range r.Topics {
		out := kmsg.NewFetchResponseTopic()
		out.Partitions = fr.partitionsFor(ti, len(rt.Partitions))
		out.Topic, out.TopicID = rt.Topic, rt.TopicID
		name := b.fetchTopicName(view, r.Version, rt)
		for _, rp := range rt.Partitions {
			op := kmsg.NewFetchResponseTopicPartition()
			op.Partition = rp.Partition
			// Never null: librdkafka refuses a null record set.
			op.RecordBatches = []byte{}
			if denied[name] {
				op.ErrorCode, fr.hasError = kerr.TopicAuthorizationFailed.Code, true
				out.Partitions = append(out.Partitions, op)
				fr.noteIdle(nil)
				continue
			}
			limit := min(int(rp.PartitionMaxBytes), budget)
			n, idle := b.readFetchPartition(view, r, name, replicaID, rp, int32(max(limit, 0)), minOne, &op, fr)
			fr.noteIdle(idle)
			if n > 0 {
				minOne = false
				budget -= n
				fr.bytes += n
			}
			if op.ErrorCode != 0 {
				fr.hasError = true
			}
			out.Partitions = append(out.Partitions, op)
		}
		fr.resp.Topics = append(fr.resp.Topics, out)
	}
	return fr
}

// noteIdle records the idle mark of the partition just read (nil: none)
// for a follower session's read.
func (fr *fetchRead) noteIdle(m *replication.IdleMark) {
	if fr.follower != nil {
		fr.idle = append(fr.idle, m)
	}
}

// readFetchPartition fills op for one partition and returns the bytes read
// and, for a follower session's fetch that found the partition idle, its
// mark.
func (b *Broker) readFetchPartition(view *metadataView, r *kmsg.FetchRequest, name string, replicaID int32,
	rp kmsg.FetchRequestTopicPartition, limit int32, minOne bool, op *kmsg.FetchResponseTopicPartition, fr *fetchRead) (int, *replication.IdleMark) {
	t, _, ok := view.topic(name)
	if !ok || rp.Partition < 0 || int(rp.Partition) >= len(t.Partitions) {
		op.ErrorCode = kerr.UnknownTopicOrPartition.Code
		if r.Version >= 13 && name == "" {
			op.ErrorCode = kerr.UnknownTopicID.Code
		}
		return 0, nil
	}
	part, ok := b.replicas.Partition(name, rp.Partition)
	if !ok {
		op.ErrorCode = kerr.NotLeaderForPartition.Code
		b.fetchCurrentLeader(view, t.Partitions[rp.Partition].Leader, t.Partitions[rp.Partition].LeaderEpoch, op, fr)
		return 0, nil
	}
	var res replication.ReadResult
	var err error
	if replicaID >= 0 && b.leaderThrottled(part, name, replicaID) {
		limit, minOne = 0, false // answered without records (replication_throttle.go)
	}
	if replicaID >= 0 {
		// The broker epoch (v15+) goes with an ISR expansion to the
		// controller, which refuses one a restarted replica did not earn (KIP-903).
		_, epoch := replication.FetchReplica(r)
		res, err = part.UpdateFollowerAndRead(replication.FollowerFetch{
			ReplicaID: replicaID, ReplicaEpoch: epoch, FetchOffset: rp.FetchOffset, LastFetchedEpoch: lastFetchedEpoch(r.Version, rp),
			CurrentLeaderEpoch: rp.CurrentLeaderEpoch, MaxBytes: limit, MinOneBatch: minOne, Session: fr.follower,
		})
	} else {
		res, err = b.readForConsumer(view, r, name, part, rp, limit, minOne, op, fr)
	}
	op.HighWatermark, op.LastStableOffset, op.LogStartOffset = res.HighWatermark, res.LastStableOffset, res.LogStartOffset
	if err != nil {
		op.ErrorCode = errorCode(err)
		op.HighWatermark, op.LastStableOffset = -1, -1
		if op.ErrorCode == kerr.NotLeaderForPartition.Code || op.ErrorCode == kerr.FencedLeaderEpoch.Code {
			tp := t.Partitions[rp.Partition]
			b.fetchCurrentLeader(view, tp.Leader, tp.LeaderEpoch, op, fr)
		}
		return 0, nil
	}
	if res.Diverging != nil {
		op.DivergingEpoch.Epoch = res.Diverging.Epoch
		op.DivergingEpoch.EndOffset = res.Diverging.EndOffset
		return 0, nil
	}
	if r.IsolationLevel == 1 {
		op.AbortedTransactions = abortedTransactions(res.Aborted)
	}
	if res.Release != nil {
		fr.releases = append(fr.releases, res.Release)
	}
	if len(res.Data) > 0 {
		op.RecordBatches = res.Data
		fr.files = append(fr.files, fetchFile{data: res.Data, file: res.File, offset: res.FileOffset})
		b.countFetched(name, res.Data)
	}
	return len(res.Data), res.Idle
}

func lastFetchedEpoch(version int16, rp kmsg.FetchRequestTopicPartition) int32 {
	if version < 12 {
		return -1
	}
	return rp.LastFetchedEpoch
}

// fetchCurrentLeader tells a v12+ client where the partition's leader is now
// (KIP-951), with the leader's endpoint in v16+.
func (b *Broker) fetchCurrentLeader(view *metadataView, leader, epoch int32, op *kmsg.FetchResponseTopicPartition, fr *fetchRead) {
	op.CurrentLeader.LeaderID = leader
	op.CurrentLeader.LeaderEpoch = epoch
	if leader < 0 || fr.resp.Version < 16 {
		return
	}
	for _, br := range fr.resp.Brokers {
		if br.NodeID == leader {
			return
		}
	}
	if info, ok := view.img.Brokers[leader]; ok {
		if ep, ok := endpointFor(info, b.cfg.InterBrokerListenerName, b.cfg.InterBrokerListenerName); ok {
			fb := kmsg.NewFetchResponseBroker()
			fb.NodeID, fb.Host, fb.Port = leader, ep.Host, ep.Port
			fr.resp.Brokers = append(fr.resp.Brokers, fb)
		}
	}
}

// countFetched adds served bytes and records (from the batch headers) to the
// topic's out counters.
func (b *Broker) countFetched(topic string, data []byte) {
	var records int64
	it := record.Batches(data)
	for it.Next() {
		records += int64(it.Header().RecordCount)
	}
	b.metrics.bytesOut.WithLabelValues(topic).Add(float64(len(data)))
	b.metrics.recordsOut.WithLabelValues(topic).Add(float64(records))
}

// abortedTransactions is a read_committed answer's aborted list (empty,
// never null, when there is none).
func abortedTransactions(aborted []storage.AbortedTxn) []kmsg.FetchResponseTopicPartitionAbortedTransaction {
	out := make([]kmsg.FetchResponseTopicPartitionAbortedTransaction, len(aborted))
	for i, a := range aborted {
		out[i] = kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
		out[i].ProducerID, out[i].FirstOffset = a.ProducerID, a.FirstOffset
	}
	return out
}

package broker

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/broker/sharepartition"
	"github.com/kbroker/kbroker/protocol"
	"github.com/kbroker/kbroker/replication"
)

// The fetch part of a ShareFetch: acquire records of the session's
// partitions this broker leads for the member, up to MaxRecords over all
// of them (rotating the first partition with the session epoch, so that
// every partition gets its turn), and wait (up to MaxWaitMillis) while
// there is nothing to acquire and fewer than MinBytes were acquired, woken
// by high watermark moves and by records becoming available again.

// shareTarget is a partition a ShareFetch acquires from (this broker leads it).
type shareTarget struct {
	topicID     [16]byte
	topic       string
	partition   int32
	part        *replication.Partition
	leaderEpoch int32
	sp          *sharepartition.Partition
}

func (t *shareTarget) key(group string) sharepartition.Key {
	return sharepartition.Key{Group: group, TopicID: t.topicID, Topic: t.topic, Partition: t.partition}
}

func (t *shareTarget) tp() sharepartition.TopicIDPartition {
	return sharepartition.TopicIDPartition{TopicID: t.topicID, Partition: t.partition}
}

// shareReadMax bounds one partition's log read of a ShareFetch (v1+ has no
// per-partition limit): enough for MaxRecords of small records, small
// enough not to walk megabytes of batches for a few hundred records.
const shareReadMax = 1 << 20

// defaultShareMaxRecords is ShareFetch v0's record budget (it has no
// MaxRecords): Kafka's share.max.fetch.records default.
const defaultShareMaxRecords = 500

// shareAcquisition is what one ShareFetch acquired, per partition.
type shareAcquisition struct {
	ranges  map[sharepartition.TopicIDPartition][]sharepartition.AcquiredRange
	records map[sharepartition.TopicIDPartition][]byte
	bytes   int
	budget  int32 // records left to acquire
	// releases are the references on the mapped log segments that
	// records borrow, released once the response is written.
	releases []func()
}

// release lets go of the log segments the acquisition's records borrow.
func (a *shareAcquisition) release() {
	for _, rel := range a.releases {
		rel()
	}
	a.releases = nil
}

// fetchLimits are a ShareFetch's bounds.
type fetchLimits struct {
	member    string
	maxBytes  int32 // per partition read
	minBytes  int
	maxWait   time.Duration
	mode      sharepartition.AcquireMode
	batchSize int32
}

func shareFetchLimits(r *kmsg.ShareFetchRequest, member string) (fetchLimits, int32) {
	l := fetchLimits{member: member, maxBytes: shareReadMax, minBytes: max(int(r.MinBytes), 1),
		maxWait: time.Duration(max(r.MaxWaitMillis, 0)) * time.Millisecond, batchSize: r.BatchSize}
	if r.MaxBytes > 0 {
		l.maxBytes = min(l.maxBytes, r.MaxBytes)
	}
	budget := r.MaxRecords
	if r.Version == 0 {
		budget = defaultShareMaxRecords
	}
	if r.Version >= 2 {
		l.mode = sharepartition.AcquireMode(r.ShareAcquireMode)
	}
	return l, budget
}

// acquireLoop acquires from targets until MinBytes are acquired, the
// record budget is spent, or MaxWait passes (ctx ends), waiting between
// rounds for the partitions to change.
func (s *shares) acquireLoop(ctx context.Context, group string, targets []*shareTarget, l fetchLimits, budget int32, epoch int32) (*shareAcquisition, map[sharepartition.TopicIDPartition]int16) {
	acq := &shareAcquisition{ranges: map[sharepartition.TopicIDPartition][]sharepartition.AcquiredRange{},
		records: map[sharepartition.TopicIDPartition][]byte{}, budget: budget}
	errs := map[sharepartition.TopicIDPartition]int16{}
	if len(targets) == 0 || budget <= 0 {
		return acq, errs
	}
	w := replication.NewWaiterFor(replication.HighWatermarkMoved)
	keys := make([]sharepartition.Key, len(targets))
	for i, t := range targets {
		keys[i] = t.key(group)
		t.part.WatchOn(w)
	}
	s.wakers.add(keys, w)
	defer func() {
		s.wakers.remove(keys, w)
		for _, t := range targets {
			t.part.Unwatch(w)
		}
	}()
	timer := time.NewTimer(l.maxWait)
	defer timer.Stop()
	shortened := false
	for {
		s.acquireRound(targets, l, acq, errs, epoch)
		if acq.bytes >= l.minBytes || len(errs) > 0 || acq.budget <= 0 || l.maxWait == 0 {
			return acq, errs
		}
		if !shortened && waitsOnItself(targets, l.member) {
			// Another member's acknowledgement may still make room
			// soon; the member's own comes with its next request.
			shortened = true
			if !timer.Stop() {
				return acq, errs // fired meanwhile
			}
			timer.Reset(min(selfWait, l.maxWait))
		}
		select {
		case <-w.C:
		case <-timer.C:
			return acq, errs
		case <-ctx.Done():
			return acq, errs
		}
	}
}

// selfWait bounds the long poll of a fetch that waits on itself
// (waitsOnItself): long enough for the acknowledgements of other members
// to make room, short enough that a member's own acknowledgements, queued
// behind this fetch in the client, do not wait out MaxWait; and a client
// that keeps fetching while it holds records is not answered in a busy
// loop.
const selfWait = 5 * time.Millisecond

// waitsOnItself: every target's window is full with records the member
// holds among them, so that mostly the member's own acknowledgements,
// which a client that fetches ahead sends with its next request, can make
// room. MaxWaitMillis is a bound, not a promise: such a fetch waits
// selfWait at most.
func waitsOnItself(targets []*shareTarget, member string) bool {
	for _, t := range targets {
		if !t.sp.WaitsOn(member) {
			return false
		}
	}
	return true
}

// acquireRound tries every target once, starting at a position rotated by
// the session epoch.
func (s *shares) acquireRound(targets []*shareTarget, l fetchLimits, acq *shareAcquisition, errs map[sharepartition.TopicIDPartition]int16, epoch int32) {
	start := 0
	if n := len(targets); n > 1 && epoch > 0 {
		start = int(epoch) % n
	}
	for i := range targets {
		if acq.budget <= 0 {
			return
		}
		t := targets[(start+i)%len(targets)]
		ranges, records, release, code := s.acquire(t, l, acq.budget)
		if release != nil {
			acq.releases = append(acq.releases, release)
		}
		if code != 0 {
			errs[t.tp()] = code
			continue
		}
		for _, r := range ranges {
			acq.budget -= int32(r.LastOffset - r.FirstOffset + 1)
		}
		if len(ranges) > 0 {
			acq.ranges[t.tp()] = append(acq.ranges[t.tp()], ranges...)
			acq.bytes += len(records)
			s.b.countFetched(t.topic, records)
			if prev := acq.records[t.tp()]; len(prev) > 0 {
				// Both may be slices of a mapped segment: join them in
				// a new array, never by appending into the mapping.
				records = append(append(make([]byte, 0, len(prev)+len(records)), prev...), records...)
			}
			acq.records[t.tp()] = records
		}
	}
}

// acquire reads one partition from its share-partition's next fetch
// offset and acquires what it may of the read for the member. The records
// may be a slice of the mapped log: release (non-nil when the read holds a
// segment) must run once they are no longer used, that is once the
// response is written.
func (s *shares) acquire(t *shareTarget, l fetchLimits, budget int32) (ranges []sharepartition.AcquiredRange, records []byte, release func(), code int16) {
	if !t.sp.CanAcquire() {
		return nil, nil, nil, 0
	}
	from := t.sp.NextFetchOffset()
	hw, _, logStart := t.part.Offsets()
	from = max(from, logStart)
	if from >= hw {
		return nil, nil, nil, 0
	}
	res, err := t.part.ReadForConsumer(from, l.maxBytes, t.leaderEpoch, true)
	if err != nil {
		return nil, nil, nil, errorCode(err)
	}
	batches := shareBatches(res.Data)
	if len(batches) > 0 {
		ranges, code = t.sp.Acquire(sharepartition.AcquireRequest{
			Member: l.member, MaxRecords: budget, BatchSize: l.batchSize, Mode: l.mode, Batches: batches,
			Aborted: shareAbortedTxns(t.part, batches[0].BaseOffset, batches[len(batches)-1].LastOffset),
		})
	}
	if code != 0 || len(ranges) == 0 {
		if res.Release != nil {
			res.Release()
		}
		return nil, nil, nil, code
	}
	return ranges, acquiredBatches(res.Data, ranges), res.Release, 0
}

// shareFetchAnswer builds a ShareFetch response: one entry per partition
// answered, in the order first answered, and the endpoints of the leaders
// it points to.
type shareFetchAnswer struct {
	resp    *kmsg.ShareFetchResponse
	index   map[sharepartition.TopicIDPartition][2]int
	leaders map[int32]bool
}

func newShareFetchAnswer(resp *kmsg.ShareFetchResponse) *shareFetchAnswer {
	return &shareFetchAnswer{resp: resp, index: map[sharepartition.TopicIDPartition][2]int{}, leaders: map[int32]bool{}}
}

// part returns tp's entry, adding it.
func (a *shareFetchAnswer) part(tp sharepartition.TopicIDPartition) *kmsg.ShareFetchResponseTopicPartition {
	if at, ok := a.index[tp]; ok {
		return &a.resp.Topics[at[0]].Partitions[at[1]]
	}
	ti := -1
	for i := range a.resp.Topics {
		if a.resp.Topics[i].TopicID == tp.TopicID {
			ti = i
			break
		}
	}
	if ti < 0 {
		t := kmsg.NewShareFetchResponseTopic()
		t.TopicID = tp.TopicID
		a.resp.Topics = append(a.resp.Topics, t)
		ti = len(a.resp.Topics) - 1
	}
	p := kmsg.NewShareFetchResponseTopicPartition()
	p.Partition = tp.Partition
	p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch = -1, -1
	a.resp.Topics[ti].Partitions = append(a.resp.Topics[ti].Partitions, p)
	a.index[tp] = [2]int{ti, len(a.resp.Topics[ti].Partitions) - 1}
	return &a.resp.Topics[ti].Partitions[len(a.resp.Topics[ti].Partitions)-1]
}

// has reports whether tp has an entry.
func (a *shareFetchAnswer) has(tp sharepartition.TopicIDPartition) bool {
	_, ok := a.index[tp]
	return ok
}

// fail answers tp with an error (and where its leader is).
func (a *shareFetchAnswer) fail(tp sharepartition.TopicIDPartition, code int16, hint leaderHint) {
	p := a.part(tp)
	p.ErrorCode = code
	if code == kerr.NotLeaderForPartition.Code && hint.id >= 0 {
		p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch = hint.id, hint.epoch
		a.leaders[hint.id] = true
	}
}

// endpoints fills NodeEndpoints for the leaders the answer points to, on
// the listener the client came in on.
func (a *shareFetchAnswer) endpoints(b *Broker, view *metadataView, listener string) {
	for _, le := range leaderEndpoints(b, view, a.leaders, listener) {
		ne := kmsg.NewShareFetchResponseNodeEndpoint()
		ne.NodeID, ne.Host, ne.Port, ne.Rack = le.id, le.host, le.port, le.rack
		a.resp.NodeEndpoints = append(a.resp.NodeEndpoints, ne)
	}
}

// nodeEndpoint is a leader a share response points a client to.
type nodeEndpoint struct {
	id   int32
	host string
	port int32
	rack *string
}

// leaderEndpoints resolves leader ids to their endpoints on listener (the
// inter-broker listener when they have none of that name), sorted by id.
func leaderEndpoints(b *Broker, view *metadataView, ids map[int32]bool, listener string) []nodeEndpoint {
	var out []nodeEndpoint
	for _, id := range slices.Sorted(maps.Keys(ids)) {
		br, ok := view.img.Brokers[id]
		if !ok {
			continue
		}
		ep, ok := endpointFor(br, listener, b.cfg.InterBrokerListenerName)
		if !ok {
			continue
		}
		ne := nodeEndpoint{id: id, host: ep.Host, port: ep.Port}
		if br.Rack != "" {
			ne.rack = &br.Rack
		}
		out = append(out, ne)
	}
	return out
}

// fetch serves a ShareFetch on the connection's writer: session,
// acknowledgements, then acquisition (api_78_share_fetch.go). The records
// of the response may borrow mapped log segments: release, never nil, lets
// them go once the response is written.
func (s *shares) fetch(ctx context.Context, req *protocol.Request, r *kmsg.ShareFetchRequest) (_ kmsg.Response, release func()) {
	release = func() {}
	resp := r.ResponseKind().(*kmsg.ShareFetchResponse)
	group, member := derefString(r.GroupID), derefString(r.MemberID)
	if r.Version >= 1 {
		resp.AcquisitionLockTimeoutMillis = int32(s.config(group).RecordLockDuration.Milliseconds())
	}
	key := sharepartition.SessionKey{Group: group, Member: member}
	fr, acks := shareFetchSession(r, key, connKey(req.Conn))
	fc, code := s.parts.Sessions().NewFetchContext(fr)
	if code != 0 {
		resp.ErrorCode = code
		return resp, release
	}
	view := s.b.view()
	ans := newShareFetchAnswer(resp)
	// The acknowledgements' transitions are made now; their state writes
	// go on while this fetch acquires, and the response waits for both
	// (Kafka's KafkaApis.handleShareFetchRequest).
	waitAcks := s.startAcknowledgeAll(ctx, req, group, member, acks, r.Version >= 2 && r.IsRenewAck)
	ackCodes := func() {
		waitAcks()
		for _, a := range acks {
			p := ans.part(a.tp)
			p.AcknowledgeErrorCode = a.code
			if a.code == kerr.NotLeaderForPartition.Code && a.leader.id >= 0 {
				p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch = a.leader.id, a.leader.epoch
				ans.leaders[a.leader.id] = true
			}
		}
	}
	if fc.Final || r.Version >= 2 && r.IsRenewAck {
		ackCodes()
	}
	if fc.Final {
		s.releaseClosed(ctx, key, fc.Closed)
		ans.endpoints(s.b, view, req.Conn.Listener)
		return resp, release
	}
	if r.Version >= 2 && r.IsRenewAck {
		ans.endpoints(s.b, view, req.Conn.Listener)
		return resp, release
	}
	targets := s.fetchTargets(ctx, req, view, group, fc.Partitions, ans)
	limits, budget := shareFetchLimits(r, member)
	acq, errs := s.acquireLoop(ctx, group, targets, limits, budget, r.ShareSessionEpoch)
	release = acq.release
	ackCodes()
	for tp, code := range errs {
		ans.fail(tp, code, noLeaderHint)
	}
	for tp, ranges := range acq.ranges {
		p := ans.part(tp)
		p.AcquiredRecords, p.Records = ranges, acq.records[tp]
	}
	s.completeSession(fc, key, ans)
	ans.endpoints(s.b, view, req.Conn.Listener)
	return shareFetchBody(resp, acq.bytes), release
}

// fetchTargets resolves the session's partitions: the ones this broker
// leads with their share-partitions (read from the share coordinator the
// first time), the others answered with their error.
func (s *shares) fetchTargets(ctx context.Context, req *protocol.Request, view *metadataView, group string,
	tps []sharepartition.TopicIDPartition, ans *shareFetchAnswer) []*shareTarget {
	var out []*shareTarget
	for _, tp := range tps {
		name, code := s.b.shareTopic(req, view, tp.TopicID)
		if code != 0 {
			ans.fail(tp, code, noLeaderHint)
			continue
		}
		t, code, hint := s.b.ledPartition(view, name, tp.Partition)
		if code != 0 {
			ans.fail(tp, code, hint)
			continue
		}
		sp, code := s.parts.Partition(ctx, t.key(group), t.leaderEpoch, shareLog{t.part})
		if code != 0 {
			ans.fail(tp, code, noLeaderHint)
			continue
		}
		t.sp = sp
		out = append(out, t)
	}
	return out
}

// completeSession lists every session partition in a full response (epoch
// 0), and in an incremental one those with news or that the session still
// owes an answer (SessionCache.Respond).
func (s *shares) completeSession(fc *sharepartition.FetchContext, key sharepartition.SessionKey, ans *shareFetchAnswer) {
	cache := s.parts.Sessions()
	for _, tp := range fc.Partitions {
		news := ans.has(tp)
		isError := false
		if news {
			p := ans.part(tp)
			isError = p.ErrorCode != 0
		}
		if cache.Respond(key, tp, news, isError) || fc.Full {
			ans.part(tp)
		}
	}
}

// shareFetchSession is the session part of a ShareFetch and its
// acknowledgements.
func shareFetchSession(r *kmsg.ShareFetchRequest, key sharepartition.SessionKey, conn string) (sharepartition.FetchRequest, []*partitionAck) {
	fr := sharepartition.FetchRequest{Key: key, Epoch: r.ShareSessionEpoch, Conn: conn}
	var acks []*partitionAck
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			tp := sharepartition.TopicIDPartition{TopicID: t.TopicID, Partition: p.Partition}
			fr.Add = append(fr.Add, tp)
			if len(p.AcknowledgementBatches) == 0 {
				fr.HasFetchData = true
				continue
			}
			fr.HasAcks = true
			acks = append(acks, &partitionAck{tp: tp, batches: ackBatchesOf(p.AcknowledgementBatches,
				func(b kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch) (int64, int64, []int8) {
					return b.FirstOffset, b.LastOffset, b.AcknowledgeTypes
				})})
		}
	}
	for _, t := range r.ForgottenTopicsData {
		for _, p := range t.Partitions {
			fr.Forget = append(fr.Forget, sharepartition.TopicIDPartition{TopicID: t.TopicID, Partition: p})
		}
	}
	return fr, acks
}

func derefString(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

package chaos

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/internal/testsupport"
)

// shareWorkload is a share group (issue 16) reading the producers' topic
// under the nemeses: its members speak the share protocol by hand, so that
// the history has exactly what each was handed and how each
// acknowledgement went (CheckShare). Each member fetches every partition
// from its leader in a share session per broker, accepts what it gets and
// releases every releaseEvery-th first delivery, starting a new session
// whenever a broker fails it. A member holds its records for a while
// before it acknowledges them, as a consumer that processes them does.
type shareWorkload struct {
	topic        string
	partitions   int32
	group        string
	members      int
	releaseEvery uint32
	// hold is how long a member holds what it was handed before it
	// acknowledges (its processing): faults strike while records are held.
	hold time.Duration
}

// shareRunning is a started share workload.
type shareRunning struct {
	w    shareWorkload
	h    *History
	stop context.CancelFunc
	wg   sync.WaitGroup

	mu       sync.Mutex // guards accepted
	accepted map[string]bool
}

// shareGroupConfigs: earliest (the members may join after the first
// records), 3 s locks (a dead member's records come back within the
// nemesis holds), the largest delivery count limit (a record redelivered
// by faults is not archived).
var shareGroupConfigs = map[string]string{
	"share.auto.offset.reset":       "earliest",
	"share.record.lock.duration.ms": "3000",
	"share.delivery.count.limit":    "10",
	"share.session.timeout.ms":      "10000",
}

// shareChaosFlags let the group use those values.
var shareChaosFlags = []string{
	"--group.share.min.record.lock.duration.ms=1000",
	"--group.share.min.session.timeout.ms=5000",
	"--group.share.min.heartbeat.interval.ms=200",
	"--group.share.heartbeat.interval.ms=500",
	"--offsets.topic.num.partitions=5",
	"--share.coordinator.state.topic.num.partitions=5",
}

func (w shareWorkload) start(seeds []string, h *History) (*shareRunning, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	if err := setGroupConfigs(cl, w.group, shareGroupConfigs); err != nil {
		return nil, fmt.Errorf("share group configs: %w", err)
	}
	ctx, stop := context.WithCancel(context.Background())
	r := &shareRunning{w: w, h: h, stop: stop, accepted: map[string]bool{}}
	for i := range w.members {
		m, err := newChaosShareMember(r, seeds, fmt.Sprintf("s%d", i))
		if err != nil {
			stop()
			return nil, err
		}
		r.wg.Add(2)
		go func() { defer r.wg.Done(); m.heartbeats(ctx) }()
		go func() { defer r.wg.Done(); m.consume(ctx) }()
	}
	return r, nil
}

func setGroupConfigs(cl *kgo.Client, group string, configs map[string]string) error {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	for k, v := range configs {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value = k, kmsg.StringPtr(v)
		res.Configs = append(res.Configs, c)
	}
	req.Resources = append(req.Resources, res)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	return kerr.ErrorForCode(resp.Resources[0].ErrorCode)
}

// drain waits until every value in want was accepted (or maybe accepted:
// its acknowledgement got no answer) and every partition's share start
// offset reached its end, then stops the members and records the start
// offsets (ShareSettled).
func (r *shareRunning) drain(seeds []string, want []string, ends map[int32]int64, d time.Duration) error {
	defer r.stopAll()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		return err
	}
	defer cl.Close()
	var starts map[int32]int64
	err = waitFor(d, "the share group to accept every record", func() error {
		r.mu.Lock()
		missing := 0
		for _, v := range want {
			if !r.accepted[v] {
				missing++
			}
		}
		r.mu.Unlock()
		if missing > 0 {
			return fmt.Errorf("%d of %d produced values not accepted yet", missing, len(want))
		}
		starts, err = shareStarts(cl, r.w.group, r.w.topic, r.w.partitions)
		if err != nil {
			return err
		}
		for p, end := range ends {
			if starts[p] != end {
				return fmt.Errorf("partition %d: share start offset %d, end %d", p, starts[p], end)
			}
		}
		return nil
	})
	for p, s := range starts {
		r.h.Add(Event{Proc: "share-final", Type: ShareSettled, Partition: p, Offset: s, Info: strconv.FormatInt(ends[p], 10)})
	}
	return err
}

func (r *shareRunning) stopAll() {
	r.stop()
	r.wg.Wait()
}

// shareStarts is DescribeShareGroupOffsets' start offset of every partition.
func shareStarts(cl *kgo.Client, group, topic string, partitions int32) (map[int32]int64, error) {
	req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	rt := kmsg.NewDescribeShareGroupOffsetsRequestGroupTopic()
	rt.Topic = topic
	for p := range partitions {
		rt.Partitions = append(rt.Partitions, p)
	}
	req.Groups = []kmsg.DescribeShareGroupOffsetsRequestGroup{{GroupID: group, Topics: []kmsg.DescribeShareGroupOffsetsRequestGroupTopic{rt}}}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, err
	}
	out := map[int32]int64{}
	for _, g := range resp.Groups {
		if g.ErrorCode != 0 {
			return nil, kerr.ErrorForCode(g.ErrorCode)
		}
		for _, t := range g.Topics {
			for _, p := range t.Partitions {
				if p.ErrorCode != 0 {
					return nil, fmt.Errorf("partition %d: %w", p.Partition, kerr.ErrorForCode(p.ErrorCode))
				}
				out[p.Partition] = p.StartOffset
			}
		}
	}
	return out, nil
}

// chaosShareMember is one member of the share group.
type chaosShareMember struct {
	r  *shareRunning
	id string
	cl *kgo.Client

	mu    sync.Mutex // guards epoch
	epoch int32      // member epoch, 0: (re)join

	leaders  map[int32]int32 // partition -> leader, nil: ask again
	sessions map[int32]*brokerSession
}

// brokerSession is a member's share session with one broker.
type brokerSession struct {
	epoch int32
	parts map[int32]bool
}

func newChaosShareMember(r *shareRunning, seeds []string, id string) (*chaosShareMember, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.DialTimeout(2*time.Second),
		kgo.RequestTimeoutOverhead(3*time.Second), kgo.MetadataMinAge(250*time.Millisecond), kgo.RequestRetries(2))
	if err != nil {
		return nil, err
	}
	return &chaosShareMember{r: r, id: id, cl: cl, sessions: map[int32]*brokerSession{}}, nil
}

// heartbeats keeps the member in the group (its subscription is what
// gets the share state initialized), rejoining when fenced.
func (m *chaosShareMember) heartbeats(ctx context.Context) {
	defer m.cl.Close()
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for ctx.Err() == nil {
		m.mu.Lock()
		epoch := m.epoch
		m.mu.Unlock()
		req := kmsg.NewPtrShareGroupHeartbeatRequest()
		req.GroupID, req.MemberID, req.MemberEpoch = m.r.w.group, m.id, epoch
		if epoch == 0 {
			req.SubscribedTopicNames = []string{m.r.w.topic}
		}
		hctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		resp, err := req.RequestWith(hctx, m.cl)
		cancel()
		m.mu.Lock()
		switch {
		case err != nil:
		case resp.ErrorCode == kerr.FencedMemberEpoch.Code || resp.ErrorCode == kerr.UnknownMemberID.Code:
			m.epoch = 0
		case resp.ErrorCode == 0:
			m.epoch = resp.MemberEpoch
		}
		m.mu.Unlock()
		select {
		case <-ctx.Done():
		case <-tick.C:
		}
	}
}

// consume fetches from every partition's leader until ctx ends.
func (m *chaosShareMember) consume(ctx context.Context) {
	for ctx.Err() == nil {
		if m.leaders == nil {
			if err := m.refreshLeaders(ctx); err != nil {
				testsupport.Sleep(ctx, 250*time.Millisecond)
				continue
			}
		}
		byLeader := map[int32][]int32{}
		for p, l := range m.leaders {
			byLeader[l] = append(byLeader[l], p)
		}
		progressed := false
		for _, broker := range slices.Sorted(mapsKeys(byLeader)) {
			if m.round(ctx, broker, byLeader[broker]) {
				progressed = true
			}
		}
		if !progressed {
			testsupport.Sleep(ctx, 100*time.Millisecond)
		}
	}
}

func (m *chaosShareMember) refreshLeaders(ctx context.Context) error {
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(m.r.w.topic)
	req.Topics = append(req.Topics, rt)
	mctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	resp, err := req.RequestWith(mctx, m.cl)
	if err != nil {
		return err
	}
	leaders := map[int32]int32{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode == 0 && p.Leader >= 0 {
				leaders[p.Partition] = p.Leader
			}
		}
	}
	if int32(len(leaders)) < m.r.w.partitions {
		return errors.New("a partition has no leader")
	}
	m.leaders = leaders
	return nil
}

// round is one ShareFetch and one ShareAcknowledge with broker; false
// when nothing was handed out.
func (m *chaosShareMember) round(ctx context.Context, broker int32, parts []int32) bool {
	s := m.sessions[broker]
	if s == nil {
		s = &brokerSession{parts: map[int32]bool{}}
		m.sessions[broker] = s
	}
	req := kmsg.NewPtrShareFetchRequest()
	req.GroupID, req.MemberID, req.ShareSessionEpoch = &m.r.w.group, &m.id, s.epoch
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.MaxRecords, req.BatchSize = 300, 1, 1<<20, 50, 50
	req.ShareAcquireMode = 1
	rt := kmsg.NewShareFetchRequestTopic()
	rt.TopicID = m.topicID()
	for _, p := range parts {
		if !s.parts[p] {
			rp := kmsg.NewShareFetchRequestTopicPartition()
			rp.Partition, rp.PartitionMaxBytes = p, 1<<20
			rt.Partitions = append(rt.Partitions, rp)
		}
	}
	if len(rt.Partitions) > 0 {
		req.Topics = append(req.Topics, rt)
	}
	fctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	resp, err := req.RequestWith(fctx, m.cl.Broker(int(broker)))
	cancel()
	if err != nil || resp.ErrorCode != 0 {
		m.lose(broker)
		return false
	}
	s.epoch++
	for _, p := range parts {
		s.parts[p] = true
	}
	var acks []shareDelivery
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 {
				m.leaders = nil // moved, or not ready: ask again
				continue
			}
			values := recordValues(p.Records)
			for _, ar := range p.AcquiredRecords {
				for o := ar.FirstOffset; o <= ar.LastOffset; o++ {
					v, ok := values[o]
					if !ok {
						continue // a record without its bytes: not the workload's
					}
					m.r.h.Add(Event{Proc: m.id, Type: ShareAcquire, Value: v, Partition: p.Partition, Offset: o, Info: strconv.Itoa(int(ar.DeliveryCount))})
					acks = append(acks, shareDelivery{p.Partition, o, v, m.ackType(v, ar.DeliveryCount)})
				}
			}
		}
	}
	if len(acks) > 0 {
		testsupport.Sleep(ctx, m.r.w.hold)
		m.acknowledge(ctx, broker, s, acks)
	}
	return len(acks) > 0
}

// lose forgets the session with a broker that failed it; its leaders are
// asked again.
func (m *chaosShareMember) lose(broker int32) {
	delete(m.sessions, broker)
	m.leaders = nil
}

func (m *chaosShareMember) topicID() [16]byte { return m.r.topicID(m.cl) }

// ackType releases every releaseEvery-th value on its first delivery.
func (m *chaosShareMember) ackType(v string, count int16) int8 {
	h := fnv.New32a()
	h.Write([]byte(v))
	if count == 1 && m.r.w.releaseEvery > 0 && h.Sum32()%m.r.w.releaseEvery == 0 {
		return 2
	}
	return 1
}

// shareDelivery is a record a member was handed and will acknowledge.
type shareDelivery struct {
	partition int32
	offset    int64
	value     string
	typ       int8 // 1 accept, 2 release
}

func typeName(t int8) string {
	if t == 2 {
		return ackRelease
	}
	return ackAccept
}

// acknowledge sends one ShareAcknowledge for the deliveries and records
// each one's outcome.
func (m *chaosShareMember) acknowledge(ctx context.Context, broker int32, s *brokerSession, ds []shareDelivery) {
	slices.SortFunc(ds, func(a, b shareDelivery) int {
		if a.partition != b.partition {
			return int(a.partition - b.partition)
		}
		return int(a.offset - b.offset)
	})
	req := kmsg.NewPtrShareAcknowledgeRequest()
	req.GroupID, req.MemberID, req.ShareSessionEpoch = &m.r.w.group, &m.id, s.epoch
	rt := kmsg.NewShareAcknowledgeRequestTopic()
	rt.TopicID = m.topicID()
	for _, d := range ds {
		if n := len(rt.Partitions); n == 0 || rt.Partitions[n-1].Partition != d.partition {
			rp := kmsg.NewShareAcknowledgeRequestTopicPartition()
			rp.Partition = d.partition
			rt.Partitions = append(rt.Partitions, rp)
		}
		rp := &rt.Partitions[len(rt.Partitions)-1]
		if n := len(rp.AcknowledgementBatches); n > 0 {
			last := &rp.AcknowledgementBatches[n-1]
			if last.LastOffset+1 == d.offset && last.AcknowledgeTypes[0] == d.typ {
				last.LastOffset = d.offset
				continue
			}
		}
		rp.AcknowledgementBatches = append(rp.AcknowledgementBatches, kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{
			FirstOffset: d.offset, LastOffset: d.offset, AcknowledgeTypes: []int8{d.typ}})
	}
	req.Topics = append(req.Topics, rt)
	actx, cancel := context.WithTimeout(ctx, 10*time.Second)
	resp, err := req.RequestWith(actx, m.cl.Broker(int(broker)))
	cancel()
	codes := map[int32]string{}
	switch {
	case err != nil:
		m.lose(broker)
		for _, d := range ds {
			codes[d.partition] = "indeterminate: " + err.Error()
		}
	case resp.ErrorCode != 0:
		m.lose(broker)
		for _, d := range ds {
			codes[d.partition] = kerr.ErrorForCode(resp.ErrorCode).Error()
		}
	default:
		s.epoch++
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if p.ErrorCode == kerr.RequestTimedOut.Code {
					codes[p.Partition] = "indeterminate: " + kerr.ErrorForCode(p.ErrorCode).Error()
				} else if p.ErrorCode != 0 {
					codes[p.Partition] = kerr.ErrorForCode(p.ErrorCode).Error()
				}
			}
		}
	}
	for _, d := range ds {
		if c, failed := codes[d.partition]; failed {
			m.r.h.Add(Event{Proc: m.id, Type: ShareAckFail, Value: d.value, Partition: d.partition, Offset: d.offset, Info: typeName(d.typ) + ": " + c})
			if d.typ == 1 && len(c) > 13 && c[:13] == "indeterminate" {
				m.r.maybeAccepted(d.value)
			}
			continue
		}
		m.r.h.Add(Event{Proc: m.id, Type: ShareAckOk, Value: d.value, Partition: d.partition, Offset: d.offset, Info: typeName(d.typ)})
		if d.typ == 1 {
			m.r.maybeAccepted(d.value)
		}
	}
}

// maybeAccepted notes a value as accepted for drain (an unanswered
// acknowledgement may have been applied: the start offset decides).
func (r *shareRunning) maybeAccepted(v string) {
	r.mu.Lock()
	r.accepted[v] = true
	r.mu.Unlock()
}

var topicIDs sync.Map // topic -> [16]byte, learned once

func (r *shareRunning) topicID(cl *kgo.Client) [16]byte {
	if id, ok := topicIDs.Load(r.w.topic); ok {
		return id.([16]byte)
	}
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(r.w.topic)
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || len(resp.Topics) == 0 {
		return [16]byte{}
	}
	topicIDs.Store(r.w.topic, resp.Topics[0].TopicID)
	return resp.Topics[0].TopicID
}

// recordValues decodes the values of uncompressed record batches by offset.
func recordValues(data []byte) map[int64]string {
	out := map[int64]string{}
	for len(data) >= 61 {
		size := int(int32(binary.BigEndian.Uint32(data[8:]))) + 12
		if size < 61 || size > len(data) {
			break
		}
		var b kmsg.RecordBatch
		if err := b.ReadFrom(data[:size]); err == nil && b.Attributes&0x07 == 0 {
			rd := kbin.Reader{Src: b.Records}
			for range b.NumRecords {
				n := int(rd.Varint())
				if !rd.Ok() || n < 0 || n > len(rd.Src) {
					break
				}
				raw := rd.Span(n)
				var rec kmsg.Record
				if rec.ReadFrom(append(kbin.AppendVarint(nil, int32(n)), raw...)) == nil {
					out[b.FirstOffset+int64(rec.OffsetDelta)] = string(rec.Value)
				}
			}
		}
		data = data[size:]
	}
	return out
}

func mapsKeys[K comparable, V any](m map[K]V) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

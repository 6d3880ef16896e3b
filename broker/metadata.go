package broker

import (
	"math"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kbroker/kbroker/config"
	"github.com/kbroker/kbroker/replication"
	"github.com/kbroker/kbroker/replication/controller"
	"github.com/kbroker/kbroker/storage"
)

// metadataView is an applied controller image plus what the APIs derive from
// it: each topic's resolved config. It is immutable once stored.
type metadataView struct {
	img      *controller.Image
	topicCfg map[string]config.TopicConfig
}

func newMetadataView(img *controller.Image, cfg *config.Config) *metadataView {
	v := &metadataView{img: img, topicCfg: make(map[string]config.TopicConfig, len(img.Topics))}
	dynamic := dynamicTopicDefaults(img, cfg.NodeID)
	for name, t := range img.Topics {
		tc, err := cfg.ResolveTopicConfig(withDefaults(t.Configs, dynamic))
		if err != nil {
			// The controller validated these; a value this build rejects
			// falls back to the broker defaults rather than failing the topic.
			tc, _ = cfg.ResolveTopicConfig(nil)
		}
		v.topicCfg[name] = tc
	}
	return v
}

// dynamicTopicDefaults maps the dynamic broker configs in force on this
// broker (its own, over the cluster-wide defaults) to the topic configs they
// are defaults of: a dynamic log.retention.ms becomes every topic's
// retention.ms unless the topic overrides it.
func dynamicTopicDefaults(img *controller.Image, nodeID int32) map[string]string {
	out := map[string]string{}
	for _, resource := range []string{"", strconv.Itoa(int(nodeID))} {
		dyn := img.BrokerConfigs[resource]
		for _, k := range config.TopicKeys() {
			if v, ok := dyn[k.BrokerSynonym]; ok && k.BrokerSynonym != "" {
				out[k.Name] = v
			}
		}
	}
	return out
}

// withDefaults returns overrides over defaults, neither modified.
func withDefaults(overrides, defaults map[string]string) map[string]string {
	if len(defaults) == 0 {
		return overrides
	}
	out := make(map[string]string, len(overrides)+len(defaults))
	for k, v := range defaults {
		out[k] = v
	}
	for k, v := range overrides {
		out[k] = v
	}
	return out
}

// topic returns a topic and its resolved config.
func (v *metadataView) topic(name string) (*controller.Topic, config.TopicConfig, bool) {
	t, ok := v.img.Topics[name]
	if !ok {
		return nil, config.TopicConfig{}, false
	}
	return t, v.topicCfg[name], true
}

// topicByID returns a topic by its id.
func (v *metadataView) topicByID(id [16]byte) (*controller.Topic, bool) {
	t, ok := v.img.TopicsByID[id]
	return t, ok
}

// view returns the latest applied metadata.
func (b *Broker) view() *metadataView { return b.image.Load() }

// announcedView returns the latest metadata as Metadata answers it: it may
// be ahead of view() by the partitions this broker is still opening, whose
// produce and fetch requests meanwhile get NOT_LEADER_OR_FOLLOWER and are
// retried, as with Kafka.
func (b *Broker) announcedView() *metadataView { return b.announced.Load() }

// applyImage turns a new controller image into partition roles: it removes
// partitions that are gone (deleting their logs), then makes this broker the
// leader or a follower of every partition it is a replica of. It runs on the
// controller node's publisher goroutine, one image at a time.
func (b *Broker) applyImage(prev, next *controller.Image) {
	view := newMetadataView(next, b.cfg)
	b.announced.Store(view)
	b.viewChanged.broadcast()
	b.countElections(prev, next)
	b.removeGonePartitions(next)
	progress := b.newOpenProgress(next)
	var changed []partitionToApply
	for _, t := range next.Topics {
		tc := view.topicCfg[t.Name]
		for _, p := range t.Partitions {
			if !slices.Contains(p.Replicas, b.cfg.NodeID) {
				continue
			}
			if opening := progress.opening(t.Name, p.Index); opening || partitionChanged(prev, t, p) {
				changed = append(changed, partitionToApply{t, p, tc, opening})
				continue
			}
			b.applyPartition(t, p, tc)
		}
	}
	b.applyChangedPartitions(changed, progress)
	progress.done()
	b.applyQuotas(next)
	b.applyReplicationThrottles(view)
	b.image.Store(view)
	if b.txns != nil {
		b.txns.applyImage(next)
	}
	if b.groups != nil {
		b.groups.applyImage(next)
	}
	if b.shares != nil {
		b.shares.applyImage(prev, next)
	}
	b.viewChanged.broadcast()
	select {
	case <-b.imageReady:
	default:
		close(b.imageReady)
	}
}

// partitionToApply is one partition of an image this broker holds a
// replica of.
type partitionToApply struct {
	t       *controller.Topic
	p       *controller.Partition
	tc      config.TopicConfig
	opening bool // not held yet: its log is opened (or created)
}

// partitionChanged reports whether p differs from its state in prev:
// images share the partitions an entry did not change.
func partitionChanged(prev *controller.Image, t *controller.Topic, p *controller.Partition) bool {
	if prev == nil {
		return true
	}
	old, ok := prev.Topics[t.Name]
	if !ok || old.ID != t.ID || int(p.Index) >= len(old.Partitions) {
		return true
	}
	return old.Partitions[p.Index] != p
}

// partitionApplyWorkers is how many partitions applyImage applies at once
// when they are new here or changed: num.recovery.threads.per.data.dir
// (default storage.DefaultLogWorkers) per log dir. Creating a log (its
// directory, partition.metadata, first segment, leader epoch checkpoint),
// loading one, or becoming its leader (the leader epoch checkpoint) is
// mostly waiting on fsyncs: one after the other, creating 1,000 partitions
// took 8-10 s per broker, loading 5,000 after a clean shutdown 21 s, nearly
// all of it in fsync, and the brokers that take over a stopping broker's
// leaderships did so one at a time, while concurrent fsyncs of one file
// system share its journal commits. Opening 1,000 new logs in one
// storage.Manager on this machine's ext4 (2 cores, loaded): 11-18 ms each
// one at a time, 2.1-4.0 ms with 8 at once, 1.4-2.6 ms with 16, no better
// with 32.
func (b *Broker) partitionApplyWorkers() int {
	n := int(b.cfg.NumRecoveryThreadsPerDataDir)
	if n <= 0 {
		n = storage.DefaultLogWorkers
	}
	return n * max(len(b.cfg.LogDirs), 1)
}

// applyChangedPartitions applies parts, partitionApplyWorkers at a time.
// Partitions are independent of each other; each is applied by one worker.
func (b *Broker) applyChangedPartitions(parts []partitionToApply, progress *openProgress) {
	workers := min(b.partitionApplyWorkers(), len(parts))
	next := make(chan partitionToApply)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for pa := range next {
				b.applyPartition(pa.t, pa.p, pa.tc)
				if pa.opening {
					progress.opened(pa.t.Name, pa.p.Index)
				}
			}
		})
	}
	for _, pa := range parts {
		next <- pa
	}
	close(next)
	wg.Wait()
}

func (b *Broker) applyPartition(t *controller.Topic, p *controller.Partition, tc config.TopicConfig) {
	st := replication.PartitionState{
		Topic: t.Name, Partition: p.Index, TopicID: t.ID,
		Replicas: p.Replicas, ISR: p.ISR, Leader: p.Leader,
		LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch,
	}
	logCfg := logConfigFor(tc)
	var err error
	var part *replication.Partition
	if p.Leader == b.cfg.NodeID {
		part, err = b.replicas.MakeLeader(st, logCfg, tc.MinInsyncReplicas)
	} else {
		part, err = b.replicas.MakeFollower(st, logCfg)
	}
	if err != nil {
		b.logger.Error("applying partition state failed", "topic", t.Name, "partition", p.Index, "err", err)
		return
	}
	part.SetMinISR(tc.MinInsyncReplicas)
	if err := part.Log().UpdateConfig(logCfg); err != nil {
		b.logger.Warn("updating log config failed", "topic", t.Name, "partition", p.Index, "err", err)
	}
}

// removeGonePartitions stops and deletes partitions whose topic was deleted
// (or deleted and created again under a new id) or that were moved off this
// broker.
func (b *Broker) removeGonePartitions(next *controller.Image) {
	for _, part := range b.replicas.Partitions() {
		t, ok := next.Topics[part.Topic]
		keep := ok && t.ID == part.Snapshot().TopicID && int(part.Index) < len(t.Partitions) &&
			slices.Contains(t.Partitions[part.Index].Replicas, b.cfg.NodeID)
		if keep {
			continue
		}
		b.logger.Info("removing partition", "topic", part.Topic, "partition", part.Index)
		if err := b.replicas.Remove(part.Topic, part.Index, true); err != nil {
			b.logger.Error("deleting partition log failed", "topic", part.Topic, "partition", part.Index, "err", err)
		}
	}
}

// removeStrayLogs deletes logs found on disk at startup for partitions the
// caught-up image no longer assigns here (deleted while this broker was down).
func (b *Broker) removeStrayLogs() {
	img := b.ctrl.Image()
	for _, tp := range b.logs.OnDisk() {
		t, ok := img.Topics[tp.Topic]
		if ok && (tp.TopicID == [16]byte{} || tp.TopicID == t.ID) && int(tp.Partition) < len(t.Partitions) &&
			slices.Contains(t.Partitions[tp.Partition].Replicas, b.cfg.NodeID) {
			continue
		}
		if _, held := b.replicas.Partition(tp.Topic, tp.Partition); held && ok && tp.TopicID == t.ID {
			continue
		}
		b.logger.Info("deleting stray log", "topic", tp.Topic, "partition", tp.Partition)
		if err := b.logs.Delete(storage.TopicPartition{Topic: tp.Topic, Partition: tp.Partition}); err != nil {
			b.logger.Error("deleting stray log failed", "topic", tp.Topic, "partition", tp.Partition, "err", err)
		}
	}
}

// logConfigFor maps a topic's config to the storage layer's. Zero means
// "default" to storage, so a configured 0 becomes the smallest real value.
func logConfigFor(tc config.TopicConfig) storage.LogConfig {
	compact := slices.Contains(tc.CleanupPolicy, "compact")
	return storage.LogConfig{
		SegmentBytes:           tc.SegmentBytes,
		SegmentMs:              msDuration(tc.SegmentMs),
		IndexIntervalBytes:     tc.IndexIntervalBytes,
		MaxIndexBytes:          tc.SegmentIndexBytes,
		RetentionMs:            tc.RetentionMs,
		RetentionBytes:         tc.RetentionBytes,
		FlushMessages:          tc.FlushMessages,
		FlushMs:                tc.FlushMs,
		Compact:                compact,
		CompactDelete:          compact && slices.Contains(tc.CleanupPolicy, "delete"),
		DeleteRetentionMs:      max(tc.DeleteRetentionMs, 1),
		MinCompactionLagMs:     tc.MinCompactionLagMs,
		MaxCompactionLagMs:     tc.MaxCompactionLagMs,
		MinCleanableDirtyRatio: max(tc.MinCleanableDirtyRatio, math.SmallestNonzeroFloat64),
		// Grow files 1 MiB at a time: 50 idle __consumer_offsets partitions
		// must not reserve hundreds of megabytes.
		PreallocateChunkBytes: 1 << 20,
	}
}

// msDuration converts Kafka milliseconds to a Duration, saturating.
func msDuration(ms int64) time.Duration {
	if ms >= math.MaxInt64/int64(time.Millisecond) {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(ms) * time.Millisecond
}

// countElections counts the leader changes between two images: clean when
// the new leader was in the previous ISR, elr when it came from the
// eligible leader replicas (KIP-966), unclean otherwise (an unclean
// election, or the last known leader with the ISR and ELR empty).
func (b *Broker) countElections(prev, next *controller.Image) {
	if prev == nil {
		return
	}
	for name, t := range next.Topics {
		old, ok := prev.Topics[name]
		if !ok || old.ID != t.ID {
			continue
		}
		for i, p := range t.Partitions {
			if i >= len(old.Partitions) {
				break
			}
			o := old.Partitions[i]
			if p.LeaderEpoch <= o.LeaderEpoch || p.Leader < 0 || p.Leader == o.Leader {
				continue
			}
			kind := "clean"
			switch {
			case slices.Contains(o.ISR, p.Leader):
			case slices.Contains(o.ELR, p.Leader):
				kind = "elr"
			default:
				kind = "unclean"
			}
			b.metrics.elections.WithLabelValues(kind).Inc()
		}
	}
}

// heldPartition looks up a partition a request names: error code
// UNKNOWN_TOPIC_OR_PARTITION when the topic or index does not exist,
// NOT_LEADER_OR_FOLLOWER when this broker holds no replica of it (the
// partition's own checks refine the latter for followers).
func (b *Broker) heldPartition(view *metadataView, topic string, idx int32) (*replication.Partition, int16) {
	t, _, ok := view.topic(topic)
	if !ok || idx < 0 || int(idx) >= len(t.Partitions) {
		return nil, kerr.UnknownTopicOrPartition.Code
	}
	part, held := b.replicas.Partition(topic, idx)
	if !held {
		return nil, kerr.NotLeaderForPartition.Code
	}
	return part, 0
}

// openProgress reports how opening (and so recovering) many partition logs
// goes, as the first image after a start makes this broker open every log it
// holds: a line every second with partitions, segments and time so far.
type openProgress struct {
	b     *Broker
	total int // partitions to open in this image
	start time.Time

	mu       sync.Mutex // guards the following: the open workers report
	count    int
	segments int
	last     time.Time
}

func (b *Broker) newOpenProgress(img *controller.Image) *openProgress {
	p := &openProgress{b: b, start: b.now(), last: b.now()}
	for _, t := range img.Topics {
		for _, part := range t.Partitions {
			if _, held := b.replicas.Partition(t.Name, part.Index); !held && slices.Contains(part.Replicas, b.cfg.NodeID) {
				p.total++
			}
		}
	}
	return p
}

func (p *openProgress) opening(topic string, idx int32) bool {
	_, held := p.b.replicas.Partition(topic, idx)
	return !held
}

func (p *openProgress) opened(topic string, idx int32) {
	segments := 0
	if part, ok := p.b.replicas.Partition(topic, idx); ok {
		segments = part.Log().NumSegments()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.count++
	p.segments += segments
	if now := p.b.now(); now.Sub(p.last) >= time.Second {
		p.last = now
		p.b.logger.Info("opening partition logs", "opened", p.count, "of", p.total,
			"segments", p.segments, "elapsed", now.Sub(p.start).Round(time.Millisecond))
	}
}

func (p *openProgress) done() {
	if p.count == 0 {
		return
	}
	p.b.logger.Info("partition logs opened", "partitions", p.count, "segments", p.segments,
		"took", p.b.now().Sub(p.start).Round(time.Millisecond))
}

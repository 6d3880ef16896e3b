package broker

import (
	"context"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kbroker/kbroker/broker/group"
	"github.com/kbroker/kbroker/record"
	"github.com/kbroker/kbroker/replication"
	"github.com/kbroker/kbroker/replication/controller"
	"github.com/kbroker/kbroker/storage"
)

// offsetsTopic holds committed offsets and group metadata (compacted). The
// coordinator of a group is the leader of the partition its id hashes to.
const offsetsTopic = "__consumer_offsets"

// groups connects the group coordinator to this broker: it feeds it the
// __consumer_offsets partitions this broker leads (load on leadership,
// unload on loss) through coordinatorPartitions.
type groups struct {
	b     *Broker
	coord *group.Coordinator
	log   *slog.Logger
	parts *coordinatorPartitions

	createMu sync.Mutex // one creation of the offsets topic at a time
}

func newGroups(b *Broker) *groups {
	cfg := b.cfg
	g := &groups{b: b, log: b.logger.With("component", "groups")}
	g.coord = group.NewCoordinator(group.Options{
		NumPartitions:                 cfg.OffsetsTopicNumPartitions,
		MinSessionTimeout:             cfg.GroupMinSessionTimeout,
		MaxSessionTimeout:             cfg.GroupMaxSessionTimeout,
		InitialRebalanceDelay:         cfg.GroupInitialRebalanceDelay,
		MaxGroupSize:                  cfg.GroupMaxSize,
		OffsetsRetention:              cfg.OffsetsRetentionMinutes,
		OffsetsRetentionCheckInterval: cfg.OffsetsRetentionCheckInterval,
		OffsetMetadataMaxBytes:        cfg.OffsetMetadataMaxBytes,
		ConsumerHeartbeatInterval:     cfg.GroupConsumerHeartbeatInterval,
		ConsumerMinHeartbeatInterval:  cfg.GroupConsumerMinHeartbeatInterval,
		ConsumerMaxHeartbeatInterval:  cfg.GroupConsumerMaxHeartbeatInterval,
		ConsumerSessionTimeout:        cfg.GroupConsumerSessionTimeout,
		ConsumerMinSessionTimeout:     cfg.GroupConsumerMinSessionTimeout,
		ConsumerMaxSessionTimeout:     cfg.GroupConsumerMaxSessionTimeout,
		ConsumerMaxGroupSize:          cfg.GroupConsumerMaxSize,
		ConsumerAssignors:             cfg.GroupConsumerAssignors,
		Logger:                        b.logger,
		TopicPartitions: func(topic string) (int32, bool) {
			t, ok := b.view().img.Topics[topic]
			if !ok {
				return 0, false
			}
			return int32(len(t.Partitions)), true
		},
		TopicID: func(topic string) ([16]byte, bool) {
			t, ok := b.view().img.Topics[topic]
			if !ok {
				return [16]byte{}, false
			}
			return t.ID, true
		},
		OtherGroupType: func(id string) string { return b.shares.groups.GroupType(id) },
		AllTopics: func() []string {
			img := b.view().img
			out := make([]string, 0, len(img.Topics))
			for name := range img.Topics {
				out = append(out, name)
			}
			return out
		},
	})
	g.parts = newCoordinatorPartitions(b, offsetsTopic, g.log, g.load, func(idx int32) {
		g.coord.Resign(idx)
		b.shares.groups.Resign(idx)
	})
	return g
}

// load makes the group coordinator, then the share group coordinator (from
// a second read of it), serve a __consumer_offsets partition.
func (g *groups) load(idx, _ int32, part *replication.Partition) error {
	store := offsetsStore{p: part, now: g.b.now}
	if err := g.coord.BecomeLeader(idx, store, logRecords(part.Log())); err != nil {
		return err
	}
	if err := g.b.shares.groups.BecomeLeader(idx, store, withoutMarkers(logRecords(part.Log()))); err != nil {
		g.log.Error("loading share group coordinator partition failed", "partition", idx, "err", err)
	}
	return nil
}

func (g *groups) close() {
	g.parts.close()
	g.coord.Close()
}

// applyImage tells the coordinator about leadership changes of
// __consumer_offsets partitions. Runs on the image goroutine after the
// partitions' roles were applied.
func (g *groups) applyImage(img *controller.Image) { g.parts.apply(img) }

// offsetsStore writes the coordinator's records to its __consumer_offsets
// partition with acks=all.
type offsetsStore struct {
	p   *replication.Partition
	now func() time.Time
}

// appendTimeout bounds a coordinator write waiting for the ISR (Kafka's
// offsets.commit.timeout.ms default).
const appendTimeout = 5 * time.Second

func (s offsetsStore) Append(ctx context.Context, records []group.Record) error {
	return s.append(ctx, encodeRecords(records, s.now().UnixMilli(), nil), storage.AppendOptions{})
}

// AppendTxn writes a TxnOffsetCommit's records in a transactional batch of
// the producer (group.TxnStore), with the verification the broker made.
func (s offsetsStore) AppendTxn(ctx context.Context, p group.TxnProducer, records []group.Record) error {
	return s.append(ctx, encodeRecords(records, s.now().UnixMilli(), &p),
		storage.AppendOptions{TxnVerification: storage.VerificationGuard(p.Verification), Coordinator: true})
}

func (s offsetsStore) append(ctx context.Context, b record.Batch, opts storage.AppendOptions) error {
	info, err := s.p.AppendAsLeader([]record.Batch{b}, -1, opts)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, appendTimeout)
	defer cancel()
	return s.p.WaitForHW(ctx, info.LastOffset)
}

// coordinatorFor finds the coordinator broker of a group, creating the
// offsets topic on first use.
func (b *Broker) coordinatorFor(ctx context.Context, key string, listener string) (int32, controller.Endpoint, error) {
	t, ok := b.view().img.Topics[offsetsTopic]
	if !ok {
		if err := b.groups.createOffsetsTopic(ctx); err != nil {
			b.logger.Warn("creating the offsets topic failed", "err", err)
		}
		return -1, controller.Endpoint{}, kerr.CoordinatorNotAvailable
	}
	return b.internalTopicLeader(t, group.PartitionFor(key, int32(len(t.Partitions))), listener)
}

// createOffsetsTopic creates __consumer_offsets as Kafka does on the first
// FindCoordinator: offsets.topic.num.partitions partitions, compacted,
// offsets.topic.replication.factor replicas (createInternalTopic).
func (g *groups) createOffsetsTopic(ctx context.Context) error {
	if !g.createMu.TryLock() {
		return nil // another request is creating it
	}
	defer g.createMu.Unlock()
	cfg := g.b.cfg
	return g.b.createInternalTopic(ctx, g.log, internalTopic{
		name: offsetsTopic, partitions: cfg.OffsetsTopicNumPartitions, rf: cfg.OffsetsTopicReplicationFactor,
		configs: map[string]string{
			"cleanup.policy":   "compact",
			"segment.bytes":    strconv.FormatInt(cfg.OffsetsTopicSegmentBytes, 10),
			"compression.type": "producer",
		},
	})
}

// clientOf describes a request's client as the coordinator records it.
func clientOf(id string, remote net.Addr) group.Client {
	host := ""
	if remote != nil {
		if h, _, err := net.SplitHostPort(remote.String()); err == nil {
			host = h
		}
	}
	return group.Client{ID: id, Host: "/" + host}
}

package broker

import (
	"context"
	"encoding/base64"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/broker/share"
	"github.com/kbroker/kbroker/broker/shareconfig"
	"github.com/kbroker/kbroker/broker/sharepartition"
	"github.com/kbroker/kbroker/broker/sharestate"
	"github.com/kbroker/kbroker/config"
	"github.com/kbroker/kbroker/protocol"
	"github.com/kbroker/kbroker/record"
	"github.com/kbroker/kbroker/replication"
	"github.com/kbroker/kbroker/replication/controller"
	"github.com/kbroker/kbroker/security/acl"
	"github.com/kbroker/kbroker/storage"
)

// shares connects share groups (KIP-932) to this broker: the share-group
// coordinator (broker/share, beside broker/group on the __consumer_offsets
// partitions this broker leads: groups.run feeds both), the share
// coordinator (broker/sharestate, on the __share_group_state partitions led
// here, loaded by run), and the share-partition leaders with their share
// sessions (broker/sharepartition, for the partitions led here). The state
// APIs between them go through statePersister, to this broker's share
// coordinator or another broker's.
type shares struct {
	b      *Broker
	log    *slog.Logger
	bounds shareconfig.Bounds

	groups  *share.Coordinator
	state   *sharestate.Coordinator
	parts   *sharepartition.Manager
	persist *statePersister
	wakers  *shareWakers

	ctx    context.Context // cancelled by close: background work stops
	cancel context.CancelFunc
	wg     sync.WaitGroup // run and the member releases

	// stateParts feeds the share coordinator the __share_group_state
	// partitions this broker leads.
	stateParts *coordinatorPartitions

	createMu sync.Mutex // one creation of the state topic at a time
}

func newShares(b *Broker) *shares {
	cfg := b.cfg
	ctx, cancel := context.WithCancel(context.Background())
	s := &shares{
		b: b, log: b.logger.With("component", "shares"), bounds: shareBounds(cfg), wakers: newShareWakers(),
		ctx: ctx, cancel: cancel,
	}
	s.persist = newStatePersister(s)
	s.state = sharestate.NewCoordinator(sharestate.Options{
		NumPartitions:        cfg.ShareCoordinatorStateTopicPartitions,
		ReplicationFactor:    cfg.ShareCoordinatorStateTopicRF,
		MinISR:               int32(cfg.ShareCoordinatorStateTopicMinISR),
		SegmentBytes:         cfg.ShareCoordinatorStateTopicSegmentSize,
		UpdatesPerSnapshot:   int(cfg.ShareCoordinatorUpdatesPerSnapshot),
		WriteTimeout:         cfg.ShareCoordinatorWriteTimeout,
		PruneInterval:        cfg.ShareCoordinatorPruneInterval,
		ColdSnapshotInterval: cfg.ShareCoordinatorColdSnapshotInterval,
		PartitionExists:      s.partitionExists,
		Logger:               b.logger,
	})
	s.parts = sharepartition.NewManager(sharepartition.Options{
		Store:       s.persist,
		Config:      s.config,
		OnAvailable: s.wakers.notify,
		MaxSessions: int(cfg.GroupShareMaxShareSessions),
		Logger:      b.logger,
	})
	s.groups = share.NewCoordinator(share.Options{
		NumPartitions:           cfg.OffsetsTopicNumPartitions,
		MaxGroupSize:            cfg.GroupShareMaxSize,
		InitializeRetryInterval: cfg.GroupShareInitializeRetryInterval,
		Config:                  s.config,
		TopicByName:             s.topicByName,
		TopicByID:               s.topicByID,
		OtherGroupType:          s.classicOrConsumerType,
		State:                   s.persist,
		LatestOffset:            s.latestOffset,
		MemberLeft:              s.memberLeft,
		Logger:                  b.logger,
	})
	s.stateParts = newCoordinatorPartitions(b, sharestate.StateTopicName, s.log, func(idx, _ int32, part *replication.Partition) error {
		return s.state.BecomeLeader(idx, stateLog{p: part, now: b.now}, loggedRecords(part.Log()))
	}, s.state.Resign)
	return s
}

// shareBounds are the broker's group.share.* configs: the defaults of a
// share group's share.* configs and the ranges its values must lie in.
func shareBounds(cfg *config.Config) shareconfig.Bounds {
	ms := func(d time.Duration) int32 { return int32(min(d.Milliseconds(), math.MaxInt32)) }
	return shareconfig.Bounds{
		SessionTimeoutMs:        ms(cfg.GroupShareSessionTimeout),
		HeartbeatIntervalMs:     ms(cfg.GroupShareHeartbeatInterval),
		RecordLockDurationMs:    ms(cfg.GroupShareRecordLockDuration),
		DeliveryCountLimit:      cfg.GroupShareDeliveryCountLimit,
		PartitionMaxRecordLocks: cfg.GroupSharePartitionMaxRecordLocks,
		SessionTimeout: shareconfig.Range{Min: ms(cfg.GroupShareMinSessionTimeout), Max: ms(cfg.GroupShareMaxSessionTimeout),
			MinName: "group.share.min.session.timeout.ms", MaxName: "group.share.max.session.timeout.ms"},
		HeartbeatInterval: shareconfig.Range{Min: ms(cfg.GroupShareMinHeartbeatInterval), Max: ms(cfg.GroupShareMaxHeartbeatInterval),
			MinName: "group.share.min.heartbeat.interval.ms", MaxName: "group.share.max.heartbeat.interval.ms"},
		RecordLockDuration: shareconfig.Range{Min: ms(cfg.GroupShareMinRecordLockDuration), Max: ms(cfg.GroupShareMaxRecordLockDuration),
			MinName: "group.share.min.record.lock.duration.ms", MaxName: "group.share.max.record.lock.duration.ms"},
		DeliveryCount: shareconfig.Range{Min: cfg.GroupShareMinDeliveryCountLimit, Max: cfg.GroupShareMaxDeliveryCountLimit,
			MinName: "group.share.min.delivery.count.limit", MaxName: "group.share.max.delivery.count.limit"},
		RecordLocks: shareconfig.Range{Min: cfg.GroupShareMinPartitionMaxRecordLocks, Max: cfg.GroupShareMaxPartitionMaxRecordLocks,
			MinName: "group.share.min.partition.max.record.locks", MaxName: "group.share.max.partition.max.record.locks"},
	}
}

// close stops everything; the share-group coordinator's partitions are
// resigned by groups.close first.
func (s *shares) close() {
	s.cancel()
	s.stateParts.close()
	s.wg.Wait()
	s.groups.Close()
	s.parts.Close()
	s.state.Close()
	s.persist.close()
}

// config is a group's effective share configuration: its GROUP configs in
// the metadata image within the broker's bounds.
func (s *shares) config(group string) shareconfig.Config {
	return shareconfig.Effective(s.b.view().img.GroupConfigs[group], s.bounds)
}

func (s *shares) topicByName(name string) ([16]byte, int32, bool) {
	t, ok := s.b.view().img.Topics[name]
	if !ok {
		return [16]byte{}, 0, false
	}
	return t.ID, int32(len(t.Partitions)), true
}

func (s *shares) topicByID(id [16]byte) (string, int32, bool) {
	t, ok := s.b.view().img.TopicsByID[id]
	if !ok {
		return "", 0, false
	}
	return t.Name, int32(len(t.Partitions)), true
}

func (s *shares) partitionExists(id [16]byte, partition int32) bool {
	_, n, ok := s.topicByID(id)
	return ok && partition >= 0 && partition < n
}

// classicOrConsumerType is broker/group's type of a group id (one type per
// id across the two coordinators).
func (s *shares) classicOrConsumerType(id string) string {
	if s.b.groups == nil {
		return ""
	}
	return s.b.groups.coord.GroupType(id)
}

// latestOffset is a partition's high watermark for the lag of
// DescribeShareGroupOffsets v1: from the replica here (a follower's is at
// most a fetch behind), else unknown.
func (s *shares) latestOffset(_ context.Context, topic string, partition int32) (int64, bool) {
	part, ok := s.b.replicas.Partition(topic, partition)
	if !ok {
		return 0, false
	}
	hw, _, _ := part.Offsets()
	return hw, true
}

// memberLeft closes the share sessions a member that left (or was fenced)
// has on this broker and releases its records, off the group's goroutine.
func (s *shares) memberLeft(group, member string) {
	closed := s.parts.Sessions().RemoveMember(group, member)
	if len(closed) == 0 {
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for _, cs := range closed {
			s.parts.ReleaseSession(s.ctx, cs)
		}
	}()
}

// connectionClosed closes the share sessions opened on a connection and
// releases their members' records (protocol.ServerOptions.OnConnClose).
func (s *shares) connectionClosed(c *protocol.ConnInfo) {
	s.parts.ConnectionClosed(s.ctx, connKey(c))
}

// connKey names a connection in the share session cache.
func connKey(c *protocol.ConnInfo) string {
	if c == nil {
		return ""
	}
	return strconv.FormatUint(c.ID, 10)
}

// applyImage follows leadership changes: the __share_group_state
// partitions led here go to the share coordinator, and the share-partitions
// of every partition this broker stopped leading are closed (their records'
// acquisitions end with the leadership; the new leader reads the state).
// Runs on the image goroutine after the partitions' roles were applied.
func (s *shares) applyImage(prev, next *controller.Image) {
	s.stateParts.apply(next)
	if prev == nil {
		return
	}
	for name, t := range prev.Topics {
		nt := next.Topics[name]
		for _, p := range t.Partitions {
			if p.Leader != s.b.cfg.NodeID {
				continue
			}
			if nt == nil || nt.ID != t.ID || int(p.Index) >= len(nt.Partitions) || nt.Partitions[p.Index].Leader != s.b.cfg.NodeID {
				s.parts.LeadershipLost(t.ID, p.Index)
			}
		}
	}
}

// createStateTopic creates __share_group_state on first use (Kafka's
// ShareCoordinatorService.shareGroupStateTopicConfigs).
func (s *shares) createStateTopic(ctx context.Context) error {
	if !s.createMu.TryLock() {
		return nil // another request is creating it
	}
	defer s.createMu.Unlock()
	cfg := s.b.cfg
	spec := sharestate.Options{
		NumPartitions: cfg.ShareCoordinatorStateTopicPartitions, ReplicationFactor: cfg.ShareCoordinatorStateTopicRF,
		MinISR: int32(cfg.ShareCoordinatorStateTopicMinISR), SegmentBytes: cfg.ShareCoordinatorStateTopicSegmentSize,
	}.StateTopic(len(s.b.view().img.Brokers))
	return s.b.createInternalTopic(ctx, s.log, internalTopic{
		name: sharestate.StateTopicName, partitions: spec.Partitions, rf: spec.ReplicationFactor, configs: spec.Configs,
	})
}

// stateLog is a __share_group_state partition as the share coordinator
// writes it: acks=all appends, DeleteRecords for pruning.
type stateLog struct {
	p   *replication.Partition
	now func() time.Time
}

func (l stateLog) Append(ctx context.Context, records []sharestate.Record) (int64, error) {
	info, err := l.p.AppendAsLeader([]record.Batch{encodeRecords(records, l.now().UnixMilli(), nil)}, -1, storage.AppendOptions{})
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, appendTimeout)
	defer cancel()
	if err := l.p.WaitForHW(ctx, info.LastOffset); err != nil {
		return 0, err
	}
	return info.FirstOffset, nil
}

func (l stateLog) DeleteRecordsBefore(_ context.Context, offset int64) error {
	_, err := l.p.DeleteRecordsBefore(offset)
	return err
}

// serveShareState serves one of the share coordinator's inter-broker APIs
// (83-87): CLUSTER_ACTION on the cluster, then the answer on the
// connection's writer once the state is written.
func (b *Broker) serveShareState(req *protocol.Request, serve func(ctx context.Context) kmsg.Response) protocol.Response {
	if !b.allowedCluster(req, acl.OpClusterAction) {
		return refuse(req, kerr.ClusterAuthorizationFailed.Code)
	}
	return protocol.Response{Later: serve}
}

// parseShareKey reads a FindCoordinator SHARE key, Kafka's
// SharePartitionKey form "group:topicId:partition" (the topic id in
// base64 URL form without padding).
func parseShareKey(key string) (sharestate.Key, bool) {
	parts := strings.Split(key, ":")
	if len(parts) != 3 || parts[0] == "" {
		return sharestate.Key{}, false
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil || len(raw) != 16 {
		return sharestate.Key{}, false
	}
	p, err := strconv.ParseInt(parts[2], 10, 32)
	if err != nil || p < 0 {
		return sharestate.Key{}, false
	}
	k := sharestate.Key{Group: parts[0], Partition: int32(p)}
	copy(k.TopicID[:], raw)
	return k, true
}

// findCoordinator answers FindCoordinator for a SHARE key (type 2): the
// leader of the key's __share_group_state partition, created on first use.
func (s *shares) findCoordinator(ctx context.Context, version int16, key, listener string) kmsg.FindCoordinatorResponseCoordinator {
	c := kmsg.NewFindCoordinatorResponseCoordinator()
	c.Key, c.NodeID = key, -1
	k, ok := parseShareKey(key)
	if !ok || version < 6 {
		c.ErrorCode = kerr.InvalidRequest.Code
		c.ErrorMessage = kmsg.StringPtr("a share coordinator key is groupId:topicId:partition (FindCoordinator v6+)")
		return c
	}
	img := s.b.view().img
	t, ok := img.Topics[sharestate.StateTopicName]
	if !ok {
		if err := s.createStateTopic(ctx); err != nil {
			s.log.Warn("creating the share state topic failed", "err", err)
		}
		c.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return c
	}
	idx := sharestate.PartitionFor(k, s.b.cfg.ShareCoordinatorStateTopicPartitions)
	c.ErrorCode = kerr.CoordinatorNotAvailable.Code
	if int(idx) >= len(t.Partitions) {
		return c
	}
	leader := t.Partitions[idx].Leader
	br, ok := img.Brokers[leader]
	if leader < 0 || !ok || br.Fenced {
		return c
	}
	ep, ok := endpointFor(br, listener, s.b.cfg.InterBrokerListenerName)
	if !ok {
		return c
	}
	c.ErrorCode, c.NodeID, c.Host, c.Port = 0, leader, ep.Host, ep.Port
	return c
}

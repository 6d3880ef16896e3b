package broker

import (
	"context"
	"log/slog"
	"strconv"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kbroker/kbroker/broker/group"
	"github.com/kbroker/kbroker/broker/txn"
	"github.com/kbroker/kbroker/protocol"
	"github.com/kbroker/kbroker/replication"
	"github.com/kbroker/kbroker/replication/controller"
)

// transactionStateTopic holds the transaction coordinator's state
// (compacted). The coordinator of a transactional id is the leader of the
// partition its id hashes to.
const transactionStateTopic = txn.StateTopicName

// txns connects the transaction coordinator (broker/txn) to this broker,
// as broker/txn/doc.go plans it: the __transaction_state partitions this
// broker leads go to BecomeLeader (their leader epoch is the coordinator
// epoch) and Resign through coordinatorPartitions; the state log is the
// same acks=all adapter the group coordinator writes with; producer ids
// come from the controller's blocks; markers go out through markerWriter.
type txns struct {
	b     *Broker
	coord *txn.Coordinator
	log   *slog.Logger
	parts *coordinatorPartitions
	// pool carries the broker's own requests to other brokers:
	// WriteTxnMarkers to partition leaders, AddPartitionsToTxn to
	// coordinators (produce verification).
	pool *protocol.Pool

	createMu sync.Mutex // one creation of the state topic at a time
}

func newTxns(b *Broker) *txns {
	cfg := b.cfg
	t := &txns{b: b, pool: protocol.NewPool("kbroker-txn-"+strconv.Itoa(int(cfg.NodeID)), 4, 16<<20,
		protocol.WithSecurity(b.sec.interBroker))}
	logger := b.logger.With("component", "txn")
	t.log = logger
	t.coord = txn.NewCoordinator(&markerWriter{b: b, pool: t.pool}, txn.ProducerIDFunc(b.producers.allocate), txn.Options{
		NumPartitions:         cfg.TransactionStateLogNumPartitions,
		ReplicationFactor:     cfg.TransactionStateLogReplicationFactor,
		MinISR:                cfg.TransactionStateLogMinISR,
		SegmentBytes:          int32(min(cfg.TransactionStateLogSegmentBytes, 1<<31-1)),
		MaxTimeout:            cfg.TransactionMaxTimeout,
		IDExpiration:          cfg.TransactionalIDExpiration,
		AbortTimedOutInterval: cfg.TransactionAbortTimedOutCleanupInterval,
		RemoveExpiredInterval: cfg.TransactionRemoveExpiredCleanupInterval,
		ConcurrentWait:        cfg.TransactionConcurrentWait,
		OffsetsPartitionFor:   func(g string) int32 { return group.PartitionFor(g, cfg.OffsetsTopicNumPartitions) },
		TopicPartitions: func(topic string) (int32, bool) {
			tp, ok := b.view().img.Topics[topic]
			if !ok {
				return 0, false
			}
			return int32(len(tp.Partitions)), true
		},
		TransactionVersion: func() int16 { return b.view().img.Features[controller.TransactionVersionFeature] },
		Logger:             logger,
	})
	t.parts = newCoordinatorPartitions(b, transactionStateTopic, logger, func(idx, epoch int32, part *replication.Partition) error {
		return t.coord.BecomeLeader(idx, epoch, offsetsStore{p: part, now: b.now}, logRecords(part.Log()))
	}, t.coord.Resign)
	return t
}

func (t *txns) close() {
	t.parts.close()
	t.coord.Close()
	t.pool.Close()
}

// applyImage tells the coordinator about leadership changes of
// __transaction_state partitions.
func (t *txns) applyImage(img *controller.Image) { t.parts.apply(img) }

// coordinatorFor finds the transaction coordinator of a transactional id,
// creating __transaction_state on first use (Kafka creates it on the first
// FindCoordinator of a transaction).
func (t *txns) coordinatorFor(ctx context.Context, id, listener string) (int32, controller.Endpoint, error) {
	st, ok := t.b.view().img.Topics[transactionStateTopic]
	if !ok {
		if err := t.createStateTopic(ctx); err != nil {
			t.b.logger.Warn("creating the transaction state topic failed", "err", err)
		}
		return -1, controller.Endpoint{}, kerr.CoordinatorNotAvailable
	}
	return t.b.internalTopicLeader(st, txn.PartitionFor(id, int32(len(st.Partitions))), listener)
}

// createStateTopic creates __transaction_state from the coordinator's
// spec: transaction.state.log.num.partitions partitions, compacted, the
// configured replication factor and min ISR, both lowered only when the
// cluster has fewer brokers (createInternalTopic).
func (t *txns) createStateTopic(ctx context.Context) error {
	cfg := t.b.cfg
	spec := txn.Options{NumPartitions: cfg.TransactionStateLogNumPartitions, ReplicationFactor: cfg.TransactionStateLogReplicationFactor,
		MinISR: cfg.TransactionStateLogMinISR, SegmentBytes: int32(min(cfg.TransactionStateLogSegmentBytes, 1<<31-1))}.StateTopic(0)
	delete(spec.Configs, "min.insync.replicas") // set by createInternalTopic, lowered with the replication factor
	if !t.createMu.TryLock() {
		return nil // another request is creating it
	}
	defer t.createMu.Unlock()
	return t.b.createInternalTopic(ctx, t.log, internalTopic{
		name: transactionStateTopic, partitions: spec.Partitions, rf: spec.ReplicationFactor,
		minISR: cfg.TransactionStateLogMinISR, configs: spec.Configs,
	})
}

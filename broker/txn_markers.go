package broker

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/broker/txn"
	"github.com/kbroker/kbroker/protocol"
	"github.com/kbroker/kbroker/record"
	"github.com/kbroker/kbroker/replication"
	"github.com/kbroker/kbroker/storage"
)

// markerTimeout bounds a marker's wait for its HW (Kafka's
// request.timeout.ms for WriteTxnMarkers).
const markerTimeout = 30 * time.Second

// markerWriter is the coordinator's txn.MarkerWriter: it groups a
// transaction's partitions by leader, appends locally to those this broker
// leads and sends WriteTxnMarkers v1 to the others, one request per
// leader, at once (Kafka's TransactionMarkerChannelManager).
type markerWriter struct {
	b    *Broker
	pool *protocol.Pool
}

// WriteMarkers implements txn.MarkerWriter. A partition whose topic (or
// partition) no longer exists is answered 0: there is nothing to mark. A
// partition without a leader, or whose leader could not be reached, is
// left out: the coordinator retries it.
func (w *markerWriter) WriteMarkers(ctx context.Context, m txn.Marker) map[txn.TopicPartition]int16 {
	view := w.b.view()
	out := make(map[txn.TopicPartition]int16, len(m.Partitions))
	byLeader := map[int32][]txn.TopicPartition{}
	for _, tp := range m.Partitions {
		t, ok := view.img.Topics[tp.Topic]
		switch {
		case !ok || tp.Partition < 0 || int(tp.Partition) >= len(t.Partitions):
			out[tp] = 0
		case t.Partitions[tp.Partition].Leader >= 0:
			leader := t.Partitions[tp.Partition].Leader
			byLeader[leader] = append(byLeader[leader], tp)
		}
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for leader, tps := range byLeader {
		wg.Go(func() {
			codes := w.writeTo(ctx, leader, markerEntry(m, tps))
			mu.Lock()
			defer mu.Unlock()
			for tp, code := range codes {
				out[tp] = code
			}
		})
	}
	wg.Wait()
	return out
}

// markerEntry is m for the partitions tps as WriteTxnMarkers carries it.
func markerEntry(m txn.Marker, tps []txn.TopicPartition) kmsg.WriteTxnMarkersRequestMarker {
	e := kmsg.NewWriteTxnMarkersRequestMarker()
	e.ProducerID, e.ProducerEpoch, e.Committed, e.CoordinatorEpoch = m.ProducerID, m.ProducerEpoch, m.Commit, m.CoordinatorEpoch
	e.TransactionVersion = int8(m.TransactionVersion)
	for _, t := range groupTopics(tps) {
		mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
		mt.Topic, mt.Partitions = t.topic, t.partitions
		e.Topics = append(e.Topics, mt)
	}
	return e
}

// topicPartitions is one topic's partitions of a list.
type topicPartitions struct {
	topic      string
	partitions []int32
}

// groupTopics groups tps by topic, topics in the order they first appear.
func groupTopics(tps []txn.TopicPartition) []topicPartitions {
	var out []topicPartitions
	index := map[string]int{}
	for _, tp := range tps {
		i, ok := index[tp.Topic]
		if !ok {
			i = len(out)
			index[tp.Topic] = i
			out = append(out, topicPartitions{topic: tp.Topic})
		}
		out[i].partitions = append(out[i].partitions, tp.Partition)
	}
	return out
}

// writeTo writes one marker entry through leader: locally when that is
// this broker, else with WriteTxnMarkers. A failed request answers
// nothing (retried).
func (w *markerWriter) writeTo(ctx context.Context, leader int32, e kmsg.WriteTxnMarkersRequestMarker) map[txn.TopicPartition]int16 {
	if leader == w.b.cfg.NodeID {
		return w.b.writeTxnMarker(ctx, &e)
	}
	addr, ok := w.b.interBrokerAddr(leader)
	if !ok {
		return nil
	}
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	req.SetVersion(1)
	req.Markers = []kmsg.WriteTxnMarkersRequestMarker{e}
	ctx, cancel := context.WithTimeout(ctx, markerTimeout+5*time.Second)
	defer cancel()
	resp, err := w.pool.RoundTrip(ctx, addr, req)
	if err != nil {
		if ctx.Err() == nil {
			w.b.logger.Warn("sending transaction markers failed; retrying", "broker", leader, "producer_id", e.ProducerID, "err", err)
		}
		return nil
	}
	out := map[txn.TopicPartition]int16{}
	for _, rm := range resp.(*kmsg.WriteTxnMarkersResponse).Markers {
		for _, rt := range rm.Topics {
			for _, rp := range rt.Partitions {
				out[txn.TopicPartition{Topic: rt.Topic, Partition: rp.Partition}] = rp.ErrorCode
			}
		}
	}
	return out
}

// markerAppend is one partition's marker waiting for its HW.
type markerAppend struct {
	tp   txn.TopicPartition
	part *replication.Partition
	last int64
}

// writeTxnMarker appends a transaction marker to each partition of e this
// broker leads, through the normal replication path, and answers once each
// is committed (acks=all) with a code per partition (WriteTxnMarkers'):
// UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER, the producer state's
// INVALID_PRODUCER_EPOCH and TRANSACTION_COORDINATOR_FENCED (nothing
// written), NOT_ENOUGH_REPLICAS*, REQUEST_TIMED_OUT. The group coordinator
// learns of the markers committed on __consumer_offsets: that makes its
// transactional offset commits visible (or drops them).
func (b *Broker) writeTxnMarker(ctx context.Context, e *kmsg.WriteTxnMarkersRequestMarker) map[txn.TopicPartition]int16 {
	view := b.view()
	out := map[txn.TopicPartition]int16{}
	typ := record.ControlAbort
	if e.Committed {
		typ = record.ControlCommit
	}
	var waits []markerAppend
	for _, rt := range e.Topics {
		for _, p := range rt.Partitions {
			tp := txn.TopicPartition{Topic: rt.Topic, Partition: p}
			part, code := b.heldPartition(view, rt.Topic, p)
			if code != 0 {
				out[tp] = code
				continue
			}
			batch := record.NewEndTxnMarkerBatch(e.ProducerID, e.ProducerEpoch, b.now().UnixMilli(),
				record.EndTxnMarker{Type: typ, CoordinatorEpoch: e.CoordinatorEpoch})
			info, err := part.AppendAsLeader([]record.Batch{batch}, -1, storage.AppendOptions{})
			if err != nil {
				out[tp] = errorCode(err)
				b.logMarkerRefused(tp, e, err)
				continue
			}
			waits = append(waits, markerAppend{tp: tp, part: part, last: info.LastOffset})
		}
	}
	ctx, cancel := context.WithTimeout(ctx, markerTimeout)
	defer cancel()
	var committedOffsets []int32
	for _, w := range waits {
		out[w.tp] = errorCode(w.part.WaitForHW(ctx, w.last))
		if out[w.tp] == 0 && w.tp.Topic == offsetsTopic {
			committedOffsets = append(committedOffsets, w.tp.Partition)
		}
	}
	if len(committedOffsets) > 0 {
		b.groups.coord.CompleteTransaction(ctx, committedOffsets, e.ProducerID, e.Committed)
	}
	return out
}

// logMarkerRefused logs a marker the partition's producer state refused:
// a fenced coordinator or producer epoch.
func (b *Broker) logMarkerRefused(tp txn.TopicPartition, e *kmsg.WriteTxnMarkersRequestMarker, err error) {
	if errors.Is(err, storage.ErrTransactionCoordinatorFenced) || errors.Is(err, storage.ErrInvalidProducerEpoch) {
		b.logger.Warn("transaction marker refused: fenced", "topic", tp.Topic, "partition", tp.Partition,
			"producer_id", e.ProducerID, "producer_epoch", e.ProducerEpoch, "coordinator_epoch", e.CoordinatorEpoch, "err", err)
	}
}

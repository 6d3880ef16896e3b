package admin

// Open and hanging transactions (KIP-664, kafka-transactions.sh
// find-hanging and abort): a partition's leader knows the transactions
// open on it (DescribeProducers: producer id, epoch, coordinator epoch and
// the transaction's first offset); the transaction coordinators know the
// transactions they run (ListTransactions, DescribeTransactions). A
// transaction open on a partition that no coordinator runs with that
// partition is hanging: no marker will ever be written, and read_committed
// consumers stop at its first offset for good. Aborting it writes the
// ABORT marker from here, with WriteTxnMarkers to the partition's leader,
// as Kafka's Admin.abortTransaction does (CLUSTER_ACTION on the cluster
// when an authorizer is configured).

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// OpenTransaction is a transaction open on one partition, as its leader
// and the transaction coordinators see it.
type OpenTransaction struct {
	Topic            string
	Partition        int32
	Leader           int32
	ProducerID       int64
	ProducerEpoch    int16
	CoordinatorEpoch int32
	StartOffset      int64 // the transaction's first offset on the partition
	LastTimestamp    int64 // the producer's last write, ms since the epoch
	// TransactionalID and CoordinatorState are what the coordinators say
	// of the producer id ("" when none runs a transaction for it).
	TransactionalID  string `json:",omitempty"`
	CoordinatorState string `json:",omitempty"`
	// Hanging: no coordinator runs a transaction of this producer that
	// includes the partition.
	Hanging bool
}

// OpenTransactions lists the transactions open on the partitions of
// topics (every topic when none), with the coordinators' view of each.
func (c *Client) OpenTransactions(ctx context.Context, topics []string) ([]OpenTransaction, error) {
	set := kadm.TopicsSet{}
	for _, t := range topics {
		set[t] = nil
	}
	described, err := c.adm.DescribeProducers(ctx, set)
	if err != nil {
		return nil, err
	}
	var open []OpenTransaction
	var pids []int64
	for _, p := range described.SortedPartitions() {
		if err := p.Err; err != nil {
			return nil, c.partitionErr(p.Topic, p.Partition, err)
		}
		for _, pr := range p.ActiveProducers.Sorted() {
			if pr.CurrentTxnStartOffset < 0 {
				continue
			}
			open = append(open, OpenTransaction{Topic: p.Topic, Partition: p.Partition, Leader: p.Leader,
				ProducerID: pr.ProducerID, ProducerEpoch: pr.ProducerEpoch, CoordinatorEpoch: pr.CoordinatorEpoch,
				StartOffset: pr.CurrentTxnStartOffset, LastTimestamp: pr.LastTimestamp, Hanging: true})
			if !slices.Contains(pids, pr.ProducerID) {
				pids = append(pids, pr.ProducerID)
			}
		}
	}
	if len(open) == 0 {
		return nil, nil
	}
	listed, err := c.adm.ListTransactions(ctx, pids, nil)
	if err != nil {
		return nil, err
	}
	byPID := map[int64]string{}
	for _, l := range listed.Sorted() {
		byPID[l.ProducerID] = l.TxnID
	}
	var ids []string
	for _, id := range byPID {
		ids = append(ids, id)
	}
	txns := kadm.DescribedTransactions{}
	if len(ids) > 0 {
		if txns, err = c.adm.DescribeTransactions(ctx, ids...); err != nil {
			return nil, err
		}
	}
	for i := range open {
		o := &open[i]
		id, ok := byPID[o.ProducerID]
		if !ok {
			continue
		}
		d, ok := txns[id]
		if !ok || d.Err != nil || d.ProducerID != o.ProducerID {
			continue
		}
		o.TransactionalID, o.CoordinatorState = id, d.State
		switch d.State {
		case "Ongoing", "PrepareCommit", "PrepareAbort":
			_, in := d.Topics[o.Topic][o.Partition]
			o.Hanging = !in
		}
	}
	return open, nil
}

// HangingTransactions is OpenTransactions' hanging ones whose producer
// last wrote at least minAge ago (Kafka's find-hanging takes those older
// than the longest transaction timeout, 15 minutes by default: a younger
// one may be a transaction in flight that the coordinator has just
// completed).
func (c *Client) HangingTransactions(ctx context.Context, topics []string, minAge time.Duration) ([]OpenTransaction, error) {
	open, err := c.OpenTransactions(ctx, topics)
	if err != nil {
		return nil, err
	}
	cutoff := time.Now().Add(-minAge).UnixMilli()
	var hanging []OpenTransaction
	for _, o := range open {
		if o.Hanging && o.LastTimestamp <= cutoff {
			hanging = append(hanging, o)
		}
	}
	return hanging, nil
}

// ErrNoOpenTransaction is an abort of a transaction the partition does
// not have open.
var ErrNoOpenTransaction = errors.New("no transaction open at that offset")

// AbortTransaction writes an ABORT marker for the transaction open on
// topic/partition at startOffset (its first offset, as OpenTransactions
// lists it), with the producer id, epoch and coordinator epoch its leader
// reports. It is the operator's tool for a hanging transaction: aborting a
// transaction its coordinator still runs makes the coordinator's own
// marker a no-op and its producer fails its next write.
func (c *Client) AbortTransaction(ctx context.Context, topic string, partition int32, startOffset int64) (OpenTransaction, error) {
	open, err := c.OpenTransactions(ctx, []string{topic})
	if err != nil {
		return OpenTransaction{}, err
	}
	i := slices.IndexFunc(open, func(o OpenTransaction) bool {
		return o.Topic == topic && o.Partition == partition && o.StartOffset == startOffset
	})
	if i < 0 {
		return OpenTransaction{}, fmt.Errorf("%s-%d at offset %d: %w", topic, partition, startOffset, ErrNoOpenTransaction)
	}
	o := open[i]
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	req.SetVersion(1)
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.ProducerEpoch, m.Committed = o.ProducerID, o.ProducerEpoch, false
	m.CoordinatorEpoch = max(o.CoordinatorEpoch, 0)
	mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
	mt.Topic, mt.Partitions = topic, []int32{partition}
	m.Topics = append(m.Topics, mt)
	req.Markers = append(req.Markers, m)
	resp, err := req.RequestWith(ctx, c.kgo.Broker(int(o.Leader)))
	if err != nil {
		return o, err
	}
	for _, rm := range resp.Markers {
		for _, rt := range rm.Topics {
			for _, rp := range rt.Partitions {
				if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
					return o, c.partitionErr(topic, partition, err)
				}
			}
		}
	}
	return o, nil
}

func (c *Client) partitionErr(topic string, partition int32, err error) error {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return &KafkaError{Subject: fmt.Sprintf("partition %s-%d", topic, partition), Err: ke}
	}
	return err
}

package txn

import (
	"cmp"
	"fmt"
	"iter"
	"maps"
	"math"
	"slices"
)

// TopicPartition names one partition of a transaction.
type TopicPartition struct {
	Topic     string
	Partition int32
}

func compareTopicPartitions(a, b TopicPartition) int {
	return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
}

// TransactionVersion is the transaction protocol a client speaks (Kafka's
// transaction.version feature level): TV0 before KIP-890; TV2 with its part
// 2, where every EndTxn bumps the producer epoch. Kafka derives it from the
// request versions: AddPartitionsToTxn v4+ and EndTxn v5+ mean TV2.
type TransactionVersion int16

const (
	TV0 TransactionVersion = 0
	TV1 TransactionVersion = 1 // the feature level that makes log values flexible (v1)
	TV2 TransactionVersion = 2
)

func (v TransactionVersion) supportsEpochBump() bool { return v >= TV2 }

const (
	noProducerID    int64 = -1
	noProducerEpoch int16 = -1
)

// epochExhausted: no more epochs may be handed to a client for this
// producer id. Kafka keeps MaxInt16 back so that the coordinator can always
// fence the last client epoch.
func epochExhausted(epoch int16) bool { return epoch >= math.MaxInt16-1 }

// txnState is the persisted part of a transactional id's metadata, and
// what a transition moves it to (Kafka's TxnTransitMetadata).
type txnState struct {
	producerID        int64
	prevProducerID    int64 // the producer id before the last transition
	nextProducerID    int64 // TV2: allocated when EndTxn exhausts the epoch
	producerEpoch     int16
	lastProducerEpoch int16 // not persisted: -1 after a load
	timeoutMs         int32
	state             State
	partitions        map[TopicPartition]struct{}
	startMs           int64 // -1 when no transaction was started
	lastUpdateMs      int64
	clientVersion     TransactionVersion
}

func (t txnState) clone() *txnState {
	t.partitions = maps.Clone(t.partitions)
	if t.partitions == nil {
		t.partitions = map[TopicPartition]struct{}{}
	}
	return &t
}

// sortedPartitions lists the partitions in a stable order.
func (t *txnState) sortedPartitions() []TopicPartition {
	return slices.SortedFunc(maps.Keys(t.partitions), compareTopicPartitions)
}

// byTopic yields the partitions of each topic of sorted, a list sorted by
// topic.
func byTopic(sorted []TopicPartition) iter.Seq2[string, []int32] {
	return func(yield func(string, []int32) bool) {
		for i := 0; i < len(sorted); {
			j := i
			var partitions []int32
			for ; j < len(sorted) && sorted[j].Topic == sorted[i].Topic; j++ {
				partitions = append(partitions, sorted[j].Partition)
			}
			if !yield(sorted[i].Topic, partitions) {
				return
			}
			i = j
		}
	}
}

func (t *txnState) String() string {
	return fmt.Sprintf("{producerId=%d prev=%d next=%d epoch=%d lastEpoch=%d timeoutMs=%d state=%v partitions=%d start=%d lastUpdate=%d tv=%d}",
		t.producerID, t.prevProducerID, t.nextProducerID, t.producerEpoch, t.lastProducerEpoch, t.timeoutMs,
		t.state, len(t.partitions), t.startMs, t.lastUpdateMs, t.clientVersion)
}

// txnMetadata is what the coordinator knows of one transactional id (Kafka's
// TransactionMetadata). It does no I/O and is not safe for concurrent use:
// its entry's mutex guards it. A transition is prepared (it becomes
// pending), written to the state log, then completed; while one is pending
// no other may be prepared.
type txnMetadata struct {
	id string
	txnState
	pending *txnState
	// hasFailedEpochFence: a fencing abort could not be written; the epoch
	// in memory is bumped already and is not bumped again (Kafka's flag).
	hasFailedEpochFence bool
}

func newTxnMetadata(id string, producerID int64, timeoutMs int32, nowMs int64) *txnMetadata {
	return &txnMetadata{id: id, txnState: txnState{
		producerID: producerID, prevProducerID: noProducerID, nextProducerID: noProducerID,
		producerEpoch: noProducerEpoch, lastProducerEpoch: noProducerEpoch,
		timeoutMs: timeoutMs, state: Empty, partitions: map[TopicPartition]struct{}{},
		startMs: -1, lastUpdateMs: nowMs, clientVersion: TV0,
	}}
}

func (m *txnMetadata) pendingInProgress() bool { return m.pending != nil }

func (m *txnMetadata) epochExhausted() bool { return epochExhausted(m.producerEpoch) }

// prepare makes t the pending transition after Kafka's checks
// (prepareTransitionTo).
func (m *txnMetadata) prepare(t *txnState) (*txnState, error) {
	switch {
	case m.pending != nil:
		return nil, fmt.Errorf("txn %q: preparing %v while %v is pending", m.id, t.state, m.pending.state)
	case t.producerID < 0:
		return nil, fmt.Errorf("txn %q: illegal producer id %d", m.id, t.producerID)
	case t.state != Dead && t.producerEpoch < 0:
		return nil, fmt.Errorf("txn %q: illegal producer epoch %d", m.id, t.producerEpoch)
	}
	if err := checkTransition(m.state, t.state); err != nil {
		return nil, fmt.Errorf("txn %q: %w", m.id, err)
	}
	t.prevProducerID = m.producerID
	m.pending = t
	return t, nil
}

// prepareFenceProducerEpoch bumps the epoch to fence the current producer
// before its open transaction is aborted (InitProducerId, timeout).
func (m *txnMetadata) prepareFenceProducerEpoch() (*txnState, error) {
	if m.producerEpoch == math.MaxInt16 {
		return nil, fmt.Errorf("txn %q: cannot fence producer epoch %d: it would overflow", m.id, m.producerEpoch)
	}
	t := m.clone()
	t.state = PrepareEpochFence
	if !m.hasFailedEpochFence {
		t.producerEpoch++
	}
	t.lastProducerEpoch = noProducerEpoch
	return m.prepare(t)
}

// prepareIncrementProducerEpoch is InitProducerId's epoch bump. expected is
// the epoch the client sent (KIP-360 recovery) or nil for a new producer.
// A code instead of a transition: the client is fenced.
func (m *txnMetadata) prepareIncrementProducerEpoch(timeoutMs int32, expected *int16, nowMs int64) (*txnState, int16, error) {
	epoch, last := m.producerEpoch+1, noProducerEpoch
	switch {
	case expected == nil: // a new producer: always bump
	case m.producerEpoch == noProducerEpoch || *expected == m.producerEpoch:
		// The producer continues after an error and nobody else
		// initialized meanwhile (or the id is new).
		last = m.producerEpoch
	case *expected == m.lastProducerEpoch:
		// A retry of a call that succeeded: answer the same epoch again. A
		// new producer would have reset lastProducerEpoch to -1.
		epoch, last = m.producerEpoch, m.lastProducerEpoch
	default:
		return nil, codeProducerFenced, nil
	}
	if epoch != m.producerEpoch && m.epochExhausted() {
		// The caller rotates the producer id instead.
		return nil, 0, fmt.Errorf("txn %q: producer epochs of %d exhausted", m.id, m.producerID)
	}
	t := m.clone()
	t.state, t.producerEpoch, t.lastProducerEpoch = Empty, epoch, last
	t.timeoutMs, t.partitions, t.startMs, t.lastUpdateMs = timeoutMs, map[TopicPartition]struct{}{}, -1, nowMs
	t, err := m.prepare(t)
	return t, 0, err
}

// prepareProducerIDRotation moves the id to a new producer id with epoch 0
// when the epochs of the current one are exhausted.
func (m *txnMetadata) prepareProducerIDRotation(newProducerID int64, timeoutMs int32, nowMs int64, recordLastEpoch bool) (*txnState, error) {
	if m.state.inTransaction() {
		return nil, fmt.Errorf("txn %q: cannot rotate producer ids in state %v", m.id, m.state)
	}
	t := m.clone()
	t.state, t.producerID, t.producerEpoch, t.lastProducerEpoch = Empty, newProducerID, 0, noProducerEpoch
	if recordLastEpoch {
		t.lastProducerEpoch = m.producerEpoch
	}
	t.timeoutMs, t.partitions, t.startMs, t.lastUpdateMs = timeoutMs, map[TopicPartition]struct{}{}, -1, nowMs
	return m.prepare(t)
}

// prepareAddPartitions adds partitions to the transaction, starting one if
// none is open.
func (m *txnMetadata) prepareAddPartitions(add []TopicPartition, nowMs int64, tv TransactionVersion) (*txnState, error) {
	t := m.clone()
	if m.state == Empty || m.state == CompleteAbort || m.state == CompleteCommit {
		t.startMs = nowMs
	}
	for _, tp := range add {
		t.partitions[tp] = struct{}{}
	}
	t.state, t.lastUpdateMs, t.clientVersion = Ongoing, nowMs, tv
	return m.prepare(t)
}

// prepareAbortOrCommit is EndTxn's PrepareCommit / PrepareAbort. Under TV2
// the epoch is bumped (KIP-890 part 2); nextProducerID is set when that
// exhausts it. noPartitionAdded: a TV2 abort with no transaction open,
// whose start time is now.
func (m *txnMetadata) prepareAbortOrCommit(to State, tv TransactionVersion, nextProducerID, nowMs int64, noPartitionAdded bool) (*txnState, error) {
	t := m.clone()
	if tv.supportsEpochBump() {
		t.producerEpoch, t.lastProducerEpoch = m.producerEpoch+1, m.producerEpoch
	}
	if noPartitionAdded {
		t.startMs = nowMs
	}
	t.state, t.nextProducerID, t.lastUpdateMs, t.clientVersion = to, nextProducerID, nowMs, tv
	return m.prepare(t)
}

// prepareComplete is CompleteCommit / CompleteAbort once every marker is
// written. After a TV2 epoch overflow the client already got the next
// producer id with epoch 0; lastProducerEpoch stays at the last epoch it
// saw.
func (m *txnMetadata) prepareComplete(nowMs int64) (*txnState, error) {
	t := m.clone()
	t.state = CompleteAbort
	if m.state == PrepareCommit {
		t.state = CompleteCommit
	}
	m.hasFailedEpochFence = false // the state change reached the log
	if m.nextProducerID != noProducerID {
		t.producerID, t.producerEpoch = m.nextProducerID, 0
	}
	t.nextProducerID, t.partitions, t.lastUpdateMs = noProducerID, map[TopicPartition]struct{}{}, nowMs
	return m.prepare(t)
}

// prepareDead is the expiry of the id (a tombstone is written).
func (m *txnMetadata) prepareDead() (*txnState, error) {
	t := m.clone()
	t.state, t.partitions = Dead, map[TopicPartition]struct{}{}
	return m.prepare(t)
}

// abandon drops the pending transition (its write failed).
func (m *txnMetadata) abandon() { m.pending = nil }

// complete applies the pending transition t once its record is committed,
// after Kafka's checks (completeTransitionTo): the epoch moves only as the
// transition allows, time does not go back, partitions are only added
// while Ongoing.
func (m *txnMetadata) complete(t *txnState) error {
	if m.pending == nil || m.pending != t {
		return fmt.Errorf("txn %q: completing %v which is not the pending transition", m.id, t)
	}
	if err := m.checkComplete(t); err != nil {
		return err
	}
	partitions := t.partitions
	m.txnState = *t
	m.partitions = maps.Clone(partitions)
	m.pending = nil
	return nil
}

func (m *txnMetadata) checkComplete(t *txnState) error {
	ok := true
	switch t.state {
	case Empty: // InitProducerId
		ok = (m.producerEpoch == t.producerEpoch || m.validEpochBump(t)) && len(t.partitions) == 0 && t.startMs == -1
	case Ongoing: // AddPartitions
		ok = m.validProducerEpoch(t) && subset(m.partitions, t.partitions) && m.timeoutMs == t.timeoutMs
	case PrepareAbort, PrepareCommit: // EndTxn
		emptyAbort := t.state == PrepareAbort && t.clientVersion.supportsEpochBump() && m.state.expirationAllowed()
		ok = m.validProducerEpoch(t) && maps.Equal(m.partitions, t.partitions) && m.timeoutMs == t.timeoutMs &&
			(m.startMs == t.startMs || emptyAbort)
	case CompleteAbort, CompleteCommit: // markers written
		ok = m.validProducerEpoch(t) && m.timeoutMs == t.timeoutMs && t.startMs != -1
	case PrepareEpochFence, Dead:
		// Never completed: the fence becomes PrepareAbort before it is
		// written, an expired id is removed instead.
		ok = false
	}
	if !ok {
		return fmt.Errorf("txn %q: illegal completion of %v from %v", m.id, t, &m.txnState)
	}
	return nil
}

// validProducerEpoch checks the producer id and epoch of a completed
// transition: under TV2 PrepareX carries the bumped epoch, and CompleteX
// after an overflow the next producer id with epoch 0.
func (m *txnMetadata) validProducerEpoch(t *txnState) bool {
	tv2 := t.clientVersion.supportsEpochBump()
	switch {
	case tv2 && (t.state == CompleteCommit || t.state == CompleteAbort) && t.producerEpoch == 0:
		return t.lastProducerEpoch == m.lastProducerEpoch && t.prevProducerID == m.producerID
	case tv2 && (t.state == PrepareCommit || t.state == PrepareAbort):
		return t.lastProducerEpoch == m.producerEpoch && t.producerID == m.producerID
	}
	return t.producerEpoch == m.producerEpoch && t.producerID == m.producerID
}

func (m *txnMetadata) validEpochBump(t *txnState) bool {
	return t.producerEpoch == m.producerEpoch+1 || (t.producerEpoch == 0 && t.producerID != m.producerID)
}

func subset(a, b map[TopicPartition]struct{}) bool {
	for tp := range a {
		if _, ok := b[tp]; !ok {
			return false
		}
	}
	return true
}

package txn

import (
	"math"
	"testing"
)

// These follow Kafka's TransactionMetadataTest.

func metadataAt(state State, pid int64, epoch, lastEpoch int16) *txnMetadata {
	m := newTxnMetadata("t", pid, 30000, 1000)
	m.state, m.producerEpoch, m.lastProducerEpoch = state, epoch, lastEpoch
	if state.inTransaction() {
		m.startMs = 900
		m.partitions[TopicPartition{"topic", 0}] = struct{}{}
	}
	return m
}

func mustComplete(t *testing.T, m *txnMetadata, tr *txnState, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	if err := m.complete(tr); err != nil {
		t.Fatal(err)
	}
}

func epochPtr(e int16) *int16 { return &e }

func TestEpochBumps(t *testing.T) {
	for _, tc := range []struct {
		name              string
		epoch, lastEpoch  int16
		expected          *int16
		wantEpoch, wantLE int16
		wantCode          int16
	}{
		{"initialize", -1, -1, nil, 0, -1, 0},
		{"normal bump", 735, -1, nil, 736, -1, 0},
		{"newly created with expected epoch", -1, -1, epochPtr(12), 0, -1, 0},
		{"current epoch provided", 735, -1, epochPtr(735), 736, 735, 0},
		{"retry with last epoch", 735, 734, epochPtr(734), 735, 734, 0},
		{"fenced epoch", 735, 734, epochPtr(733), 0, 0, codeProducerFenced},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := metadataAt(Empty, 1, tc.epoch, tc.lastEpoch)
			tr, code, err := m.prepareIncrementProducerEpoch(30000, tc.expected, 2000)
			if code != tc.wantCode || err != nil {
				t.Fatalf("code %d err %v, want %d", code, err, tc.wantCode)
			}
			if code != 0 {
				if m.pendingInProgress() {
					t.Fatal("a fenced bump left a pending transition")
				}
				return
			}
			mustComplete(t, m, tr, nil)
			if m.producerEpoch != tc.wantEpoch || m.lastProducerEpoch != tc.wantLE || m.state != Empty || m.lastUpdateMs != 2000 {
				t.Fatalf("epoch %d last %d state %v", m.producerEpoch, m.lastProducerEpoch, m.state)
			}
		})
	}
}

func TestEpochExhaustion(t *testing.T) {
	m := metadataAt(Empty, 1, math.MaxInt16-1, math.MaxInt16-2)
	if _, _, err := m.prepareIncrementProducerEpoch(30000, nil, 2000); err == nil {
		t.Fatal("bump of an exhausted epoch allowed")
	}
	// Fencing and retries are answered before exhaustion matters.
	if _, code, err := m.prepareIncrementProducerEpoch(30000, epochPtr(3), 2000); code != codeProducerFenced || err != nil {
		t.Fatalf("stale epoch at exhaustion: %d %v", code, err)
	}
	if tr, code, err := m.prepareIncrementProducerEpoch(30000, epochPtr(math.MaxInt16-2), 2000); code != 0 || err != nil || tr.producerEpoch != math.MaxInt16-1 {
		t.Fatalf("retry at exhaustion: %v %d %v", tr, code, err)
	}
	m.abandon()
	tr, err := m.prepareProducerIDRotation(2, 30000, 2000, true)
	mustComplete(t, m, tr, err)
	if m.producerID != 2 || m.producerEpoch != 0 || m.lastProducerEpoch != math.MaxInt16-1 || m.prevProducerID != 1 {
		t.Fatalf("after rotation: %v", &m.txnState)
	}

	// The last epoch still fences a client at MaxInt16-1.
	m = metadataAt(Ongoing, 1, math.MaxInt16-1, -1)
	tr, err = m.prepareFenceProducerEpoch()
	if err != nil || tr.producerEpoch != math.MaxInt16 || tr.lastProducerEpoch != -1 {
		t.Fatalf("fence: %v %v", tr, err)
	}
	m = metadataAt(Ongoing, 1, math.MaxInt16, -1)
	if _, err := m.prepareFenceProducerEpoch(); err == nil {
		t.Fatal("fence past MaxInt16 allowed")
	}
	m = metadataAt(Ongoing, 1, 5, -1)
	if _, err := m.prepareProducerIDRotation(2, 30000, 2000, false); err == nil {
		t.Fatal("rotation with an open transaction allowed")
	}
}

func TestPendingBlocksPrepare(t *testing.T) {
	m := metadataAt(Empty, 1, 0, -1)
	if _, err := m.prepareAddPartitions([]TopicPartition{{"a", 0}}, 2000, TV0); err != nil {
		t.Fatal(err)
	}
	if _, err := m.prepareAddPartitions([]TopicPartition{{"a", 1}}, 2000, TV0); err == nil {
		t.Fatal("second prepare while one is pending")
	}
	m.abandon()
	if _, err := m.prepareAbortOrCommit(PrepareCommit, TV0, -1, 2000, false); err == nil {
		t.Fatal("Empty -> PrepareCommit allowed")
	}
}

// TestTransactionLifecycle walks a TV0 and a TV2 transaction through
// every state, as the coordinator does.
func TestTransactionLifecycle(t *testing.T) {
	for _, tv := range []TransactionVersion{TV0, TV2} {
		m := metadataAt(Empty, 1, 3, -1)
		tr, err := m.prepareAddPartitions([]TopicPartition{{"a", 0}, {"b", 1}}, 2000, tv)
		mustComplete(t, m, tr, err)
		if m.state != Ongoing || m.startMs != 2000 || len(m.partitions) != 2 {
			t.Fatalf("tv%d ongoing: %v", tv, &m.txnState)
		}
		tr, err = m.prepareAddPartitions([]TopicPartition{{"a", 2}}, 2500, tv)
		mustComplete(t, m, tr, err)
		if m.startMs != 2000 {
			t.Fatal("adding partitions moved the start")
		}
		tr, err = m.prepareAbortOrCommit(PrepareCommit, tv, -1, 3000, false)
		mustComplete(t, m, tr, err)
		wantEpoch := int16(3)
		if tv == TV2 {
			wantEpoch = 4
		}
		if m.state != PrepareCommit || m.producerEpoch != wantEpoch {
			t.Fatalf("tv%d prepare: %v", tv, &m.txnState)
		}
		tr, err = m.prepareComplete(4000)
		mustComplete(t, m, tr, err)
		if m.state != CompleteCommit || len(m.partitions) != 0 || m.producerEpoch != wantEpoch || m.startMs != 2000 {
			t.Fatalf("tv%d complete: %v", tv, &m.txnState)
		}
		tr, err = m.prepareDead()
		if err != nil || tr.state != Dead {
			t.Fatal(err)
		}
		if err := m.complete(tr); err == nil {
			t.Fatal("Dead completed")
		}
	}
}

// TestTV2Overflow: the EndTxn that exhausts the epoch moves the id to the
// next producer id with epoch 0 on completion.
func TestTV2Overflow(t *testing.T) {
	m := metadataAt(Ongoing, 1, math.MaxInt16-1, math.MaxInt16-2)
	m.clientVersion = TV2
	tr, err := m.prepareAbortOrCommit(PrepareAbort, TV2, 77, 3000, false)
	mustComplete(t, m, tr, err)
	if m.producerEpoch != math.MaxInt16 || m.nextProducerID != 77 || m.producerID != 1 {
		t.Fatalf("prepare: %v", &m.txnState)
	}
	tr, err = m.prepareComplete(4000)
	mustComplete(t, m, tr, err)
	if m.producerID != 77 || m.producerEpoch != 0 || m.prevProducerID != 1 || m.nextProducerID != -1 ||
		m.lastProducerEpoch != math.MaxInt16-1 || m.state != CompleteAbort {
		t.Fatalf("complete: %v", &m.txnState)
	}
}

// TestCompleteChecks: a completion that does not match the prepared
// transition, or moves the epoch where it may not, is refused.
func TestCompleteChecks(t *testing.T) {
	m := metadataAt(Ongoing, 1, 5, -1)
	tr, _ := m.prepareAbortOrCommit(PrepareCommit, TV0, -1, 3000, false)
	other := tr.clone()
	if err := m.complete(other); err == nil {
		t.Fatal("completed a transition that is not the pending one")
	}
	tr.producerEpoch = 9
	if err := m.complete(tr); err == nil {
		t.Fatal("PrepareCommit with another epoch completed")
	}
	m.abandon()
	tr, _ = m.prepareAbortOrCommit(PrepareCommit, TV0, -1, 3000, false)
	delete(tr.partitions, TopicPartition{"topic", 0})
	if err := m.complete(tr); err == nil {
		t.Fatal("PrepareCommit with other partitions completed")
	}
	m = metadataAt(Empty, 1, 5, -1)
	tr, _, _ = m.prepareIncrementProducerEpoch(30000, nil, 2000)
	tr.producerEpoch = 7
	if err := m.complete(tr); err == nil {
		t.Fatal("epoch jump by two completed")
	}
}

package replication

import (
	"testing"
	"time"

	"github.com/kbroker/kbroker/internal/testsupport"
	"github.com/kbroker/kbroker/record"
	"github.com/kbroker/kbroker/storage"
)

// txnBatch is a transactional batch of n records of producer pid at epoch
// 0 and sequence seq.
func txnBatch(pid int64, seq int32, n int) []record.Batch {
	b := batch(n)
	h := b[0].Header()
	h.Attributes |= record.AttrTransactional
	h.ProducerID, h.ProducerEpoch, h.BaseSequence = pid, 0, seq
	raw := b[0].Bytes()
	nb := record.NewBatch(h, raw[record.BatchHeaderSize:])
	return []record.Batch{nb}
}

func marker(pid int64, commit bool) []record.Batch {
	typ := record.ControlAbort
	if commit {
		typ = record.ControlCommit
	}
	return []record.Batch{record.NewEndTxnMarkerBatch(pid, 0, 0, record.EndTxnMarker{Type: typ, CoordinatorEpoch: 1})}
}

// read_committed reads stop at the LSO and carry the aborted transactions
// of what they return; followers replicate markers like any batch, so the
// new leader after a failover has the same LSO and aborted list (issue 14).
func TestReadCommittedAcrossLeaderChange(t *testing.T) {
	clock := testsupport.NewClock(time.Unix(1000, 0))
	l, f2 := newTestReplica(t, 1, clock), newTestReplica(t, 2, clock)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(l.p.MakeLeader(leaderState(0, 0, 1, 2), 1))
	_, err := f2.p.MakeFollower(PartitionState{Topic: "t", Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2}, Leader: 1})
	must(err)

	appendTxn := func(pid int64, seq int32, n int) {
		t.Helper()
		guard := l.p.BeginTxnVerification(pid, 0, false)
		_, err := l.p.AppendAsLeader(txnBatch(pid, seq, n), 1, storage.AppendOptions{TxnVerification: guard})
		must(err)
	}
	_, err = l.p.AppendAsLeader(batch(2), 1, storage.AppendOptions{}) // 0-1
	must(err)
	appendTxn(7, 0, 2)                                                        // 2-3: aborted below
	appendTxn(8, 0, 1)                                                        // 4: still open at the end
	_, err = l.p.AppendAsLeader(marker(7, false), 1, storage.AppendOptions{}) // 5
	must(err)
	for range 3 { // the follower copies everything and reports its LEO
		replicate(t, l, f2, 2)
	}
	st := l.p.Snapshot()
	if st.HighWatermark != 6 || st.LastStableOffset != 4 {
		t.Fatalf("leader HW %d LSO %d, want 6 and 4", st.HighWatermark, st.LastStableOffset)
	}
	check := func(p *Partition, who string) {
		t.Helper()
		res, err := p.ReadForConsumerAt(ReadCommitted, 0, 1<<20, -1, true)
		must(err)
		defer res.Release()
		it := record.Batches(res.Data)
		var last int64 = -1
		for it.Next() {
			last = it.Header().LastOffset()
		}
		if last != 3 || res.LastStableOffset != 4 {
			t.Fatalf("%s: read_committed read up to %d with LSO %d, want 3 and 4", who, last, res.LastStableOffset)
		}
		if len(res.Aborted) != 1 || res.Aborted[0].ProducerID != 7 || res.Aborted[0].FirstOffset != 2 {
			t.Fatalf("%s: aborted %+v", who, res.Aborted)
		}
		uncommitted, err := p.ReadForConsumerAt(ReadUncommitted, 0, 1<<20, -1, true)
		must(err)
		defer uncommitted.Release()
		if uncommitted.Aborted != nil || uncommitted.LastStableOffset != 4 || uncommitted.NextOffset != 6 {
			t.Fatalf("%s: read_uncommitted %+v", who, uncommitted)
		}
		latest, err := p.ListOffsetAt(ReadCommitted, LatestTimestamp, -1, false)
		must(err)
		if latest.Offset != 4 {
			t.Fatalf("%s: ListOffsets latest read_committed %d, want the LSO 4", who, latest.Offset)
		}
	}
	check(l.p, "leader")
	if fs := f2.p.Snapshot(); fs.LastStableOffset != 4 {
		t.Fatalf("follower LSO %d, want 4", fs.LastStableOffset)
	}

	// Failover: the follower leads epoch 1 and answers the same.
	must(f2.p.MakeLeader(PartitionState{Topic: "t", Replicas: []int32{1, 2, 3}, ISR: []int32{2}, Leader: 2, LeaderEpoch: 1, PartitionEpoch: 1}, 1))
	check(f2.p, "new leader")
	// The open transaction commits on the new leader; the LSO moves on.
	_, err = f2.p.AppendAsLeader(marker(8, true), 1, storage.AppendOptions{})
	must(err)
	if st := f2.p.Snapshot(); st.LastStableOffset != 7 || st.HighWatermark != 7 {
		t.Fatalf("after the commit: HW %d LSO %d, want 7", st.HighWatermark, st.LastStableOffset)
	}
}

package replication

import (
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kbroker/kbroker/internal/testsupport"
	"github.com/kbroker/kbroker/record"
	"github.com/kbroker/kbroker/storage"
)

// fakeClock is a clock tests move by hand.
// fakeClock is the shared test clock.
type fakeClock = testsupport.Clock

// testReplica is one replica of a partition with its own log, as one broker
// would hold it.
type testReplica struct {
	p        *Partition
	proposed []AlterISR
	mu       sync.Mutex
}

func newTestReplica(t *testing.T, id int32, clock *fakeClock) *testReplica {
	t.Helper()
	log, err := storage.OpenLog(filepath.Join(t.TempDir(), "t-0"), storage.DefaultLogConfig(), storage.LogState{},
		storage.LogOptions{Now: clock.Now, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { log.Close() })
	r := &testReplica{}
	r.p = NewPartition("t", 0, log, PartitionOptions{LocalID: id, Now: clock.Now, ProposeISR: func(_ *Partition, c AlterISR) {
		r.mu.Lock()
		r.proposed = append(r.proposed, c)
		r.mu.Unlock()
	}})
	return r
}

func (r *testReplica) lastProposal() (AlterISR, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.proposed) == 0 {
		return AlterISR{}, false
	}
	return r.proposed[len(r.proposed)-1], true
}

// batch builds a v2 record batch of n records (no producer id).
func batch(n int) []record.Batch {
	pb, err := record.ParseProduce(rawBatch(n))
	if err != nil {
		panic(err)
	}
	return []record.Batch{pb}
}

// rawBatch is batch's bytes, as a fetch carries them.
func rawBatch(n int) []byte {
	var records []byte
	for i := range n {
		// length, attributes, timestamp delta, offset delta, key -1, value "v", 0 headers
		rec := []byte{0, 0, byte(i << 1), 0xFF ^ 0xFE, 2, 'v', 0}
		rec[3] = 1 // key length -1 as zigzag varint
		records = append(records, byte(len(rec)<<1))
		records = append(records, rec...)
	}
	b := make([]byte, 61, 61+len(records))
	binary.BigEndian.PutUint32(b[8:], uint32(49+len(records)))
	binary.BigEndian.PutUint32(b[12:], 0xFFFFFFFF)
	b[16] = 2
	binary.BigEndian.PutUint32(b[23:], uint32(n-1))
	binary.BigEndian.PutUint64(b[43:], ^uint64(0)) // producer id -1
	binary.BigEndian.PutUint16(b[51:], 0xFFFF)
	binary.BigEndian.PutUint32(b[53:], 0xFFFFFFFF)
	binary.BigEndian.PutUint32(b[57:], uint32(n))
	b = append(b, records...)
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// stamp sets a raw batch's base offset and leader epoch, as a leader's
// append does (neither is under the CRC).
func stamp(b []byte, base int64, epoch int32) []byte {
	pb, err := record.ParseProduce(b)
	if err != nil {
		panic(err)
	}
	pb.SetBaseOffset(base)
	pb.SetPartitionLeaderEpoch(epoch)
	return b
}

func leaderState(epoch, partitionEpoch int32, isr ...int32) PartitionState {
	return PartitionState{Topic: "t", Partition: 0, Replicas: []int32{1, 2, 3}, ISR: isr, Leader: 1,
		LeaderEpoch: epoch, PartitionEpoch: partitionEpoch}
}

// replicate copies what the leader serves a follower into the follower's
// log, as a replica fetcher would, and returns the leader's answer.
func replicate(t *testing.T, leader, follower *testReplica, followerID int32) ReadResult {
	t.Helper()
	st, ok := follower.p.FetchState()
	if !ok {
		t.Fatal("not a follower")
	}
	res, err := leader.p.UpdateFollowerAndRead(FollowerFetch{ReplicaID: followerID, FetchOffset: st.FetchOffset,
		LastFetchedEpoch: st.LastFetchedEpoch, CurrentLeaderEpoch: st.LeaderEpoch, MaxBytes: 1 << 20, MinOneBatch: true})
	if err != nil {
		t.Fatalf("follower %d fetch: %v", followerID, err)
	}
	if res.Diverging != nil {
		off, _ := follower.p.TruncationPoint(*res.Diverging)
		if err := follower.p.TruncateTo(st.LeaderEpoch, off); err != nil {
			t.Fatal(err)
		}
	} else if err := follower.p.AppendAsFollower(st.LeaderEpoch, res.Data, res.HighWatermark, res.LogStartOffset); err != nil {
		t.Fatal(err)
	}
	if res.Release != nil {
		res.Release()
	}
	return res
}

// The HW is the minimum LEO of the ISR, learned from follower fetches, and
// acks=all completes when it passes the batch.
func TestLeaderHighWatermarkFollowsISR(t *testing.T) {
	clock := testsupport.NewClock(time.Unix(1000, 0))
	l, f2, f3 := newTestReplica(t, 1, clock), newTestReplica(t, 2, clock), newTestReplica(t, 3, clock)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(l.p.MakeLeader(leaderState(0, 0, 1, 2, 3), 2))
	for _, f := range []*testReplica{f2, f3} {
		_, err := f.p.MakeFollower(PartitionState{Topic: "t", Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, Leader: 1})
		must(err)
	}
	info, err := l.p.AppendAsLeader(batch(3), -1, storage.AppendOptions{})
	must(err)
	if hw := l.p.Snapshot().HighWatermark; hw != 0 {
		t.Fatalf("HW moved to %d before any follower fetched", hw)
	}
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		done <- l.p.WaitForHW(ctx, info.LastOffset)
	}()
	replicate(t, l, f2, 2) // f2 has 0..2
	replicate(t, l, f2, 2) // ... and tells the leader its LEO is 3
	if hw := l.p.Snapshot().HighWatermark; hw != 0 {
		t.Fatalf("HW %d moved with f3 still at 0", hw)
	}
	select {
	case err := <-done:
		t.Fatalf("acks=all completed early: %v", err)
	default:
	}
	replicate(t, l, f3, 3)
	replicate(t, l, f3, 3)
	if hw := l.p.Snapshot().HighWatermark; hw != 3 {
		t.Fatalf("HW = %d, want 3", hw)
	}
	if err := <-done; err != nil {
		t.Fatalf("acks=all: %v", err)
	}
	// Followers learn the HW from the next fetch.
	replicate(t, l, f2, 2)
	if hw := f2.p.Snapshot().HighWatermark; hw != 3 {
		t.Fatalf("follower HW = %d, want 3", hw)
	}
}

// A lagging follower is proposed for removal after replica.lag.time.max.ms;
// acks=all refuses before appending while the ISR is below
// min.insync.replicas, and a waiting produce gets
// NOT_ENOUGH_REPLICAS_AFTER_APPEND when the ISR shrinks under it.
func TestISRShrinkAndMinISR(t *testing.T) {
	clock := testsupport.NewClock(time.Unix(1000, 0))
	l, f2 := newTestReplica(t, 1, clock), newTestReplica(t, 2, clock)
	if err := l.p.MakeLeader(leaderState(0, 0, 1, 2), 2); err != nil {
		t.Fatal(err)
	}
	f2.p.MakeFollower(PartitionState{Topic: "t", Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2}, Leader: 1})
	info, err := l.p.AppendAsLeader(batch(1), -1, storage.AppendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waiting := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		waiting <- l.p.WaitForHW(ctx, info.LastOffset)
	}()
	clock.Advance(31 * time.Second)
	l.p.MaybeShrinkISR(30 * time.Second)
	change, ok := l.lastProposal()
	if !ok || !slices.Equal(change.NewISR, []int32{1}) {
		t.Fatalf("proposed %+v, want ISR [1]", change)
	}
	// Until the controller commits it, the old ISR stands.
	if isr := l.p.Snapshot().ISR; !slices.Equal(isr, []int32{1, 2}) {
		t.Fatalf("ISR %v changed before the controller answered", isr)
	}
	l.p.ISRResult(change, []int32{1}, 0, 1, nil)
	if err := <-waiting; !errors.Is(err, kerr.NotEnoughReplicasAfterAppend) {
		t.Fatalf("waiting acks=all: %v, want NOT_ENOUGH_REPLICAS_AFTER_APPEND", err)
	}
	if _, err := l.p.AppendAsLeader(batch(1), -1, storage.AppendOptions{}); !errors.Is(err, kerr.NotEnoughReplicas) {
		t.Fatalf("acks=all with ISR [1] < 2: %v, want NOT_ENOUGH_REPLICAS", err)
	}
	if _, err := l.p.AppendAsLeader(batch(1), 1, storage.AppendOptions{}); err != nil {
		t.Fatalf("acks=1 must still work: %v", err)
	}
	if hw := l.p.Snapshot().HighWatermark; hw != 0 {
		t.Fatalf("HW moved to %d with the ISR below min.insync.replicas", hw)
	}
	// The follower catches up and is proposed back. An expansion in flight
	// counts for the HW (KIP-497), but not for min.insync.replicas: the
	// committed ISR is still [1] (Kafka's isUnderMinIsr), so the HW holds.
	replicate(t, l, f2, 2)
	replicate(t, l, f2, 2)
	change, _ = l.lastProposal()
	if !slices.Equal(change.NewISR, []int32{1, 2}) {
		t.Fatalf("proposed %v, want [1 2]", change.NewISR)
	}
	if hw := l.p.Snapshot().HighWatermark; hw != 0 {
		t.Fatalf("HW = %d with the expansion not committed yet, want 0", hw)
	}
	l.p.ISRResult(change, []int32{1, 2}, 0, 2, nil)
	// Offsets 0 and 1 (the acks=1 batch) are on both replicas now.
	if hw := l.p.Snapshot().HighWatermark; hw != 2 {
		t.Fatalf("HW = %d after the expansion committed, want 2", hw)
	}
}

// Requests with an older leader epoch are fenced, newer ones unknown; a
// non-leader refuses appends and consumer reads.
func TestEpochFencing(t *testing.T) {
	clock := testsupport.NewClock(time.Unix(1000, 0))
	l := newTestReplica(t, 1, clock)
	if err := l.p.MakeLeader(leaderState(5, 0, 1), 1); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		epoch int32
		want  error
	}{{4, kerr.FencedLeaderEpoch}, {6, kerr.UnknownLeaderEpoch}, {5, nil}, {-1, nil}} {
		_, err := l.p.ReadForConsumer(0, 1024, tc.epoch, true)
		if !errors.Is(err, tc.want) && !(tc.want == nil && err == nil) {
			t.Errorf("epoch %d: %v, want %v", tc.epoch, err, tc.want)
		}
	}
	if err := l.p.MakeLeader(leaderState(4, 0, 1), 1); err == nil {
		t.Fatal("an older leader epoch was applied")
	}
	l.p.MakeFollower(PartitionState{Topic: "t", Replicas: []int32{1, 2, 3}, ISR: []int32{2}, Leader: 2, LeaderEpoch: 6})
	if _, err := l.p.AppendAsLeader(batch(1), 1, storage.AppendOptions{}); !errors.Is(err, kerr.NotLeaderForPartition) {
		t.Fatalf("append on a follower: %v", err)
	}
}

// After a leader change, a follower holding records the new leader never had
// truncates to where their epochs diverge (KIP-101/KIP-279), and both logs
// end identical.
func TestFollowerTruncatesAtDivergence(t *testing.T) {
	clock := testsupport.NewClock(time.Unix(1000, 0))
	a, b := newTestReplica(t, 1, clock), newTestReplica(t, 2, clock)
	// Epoch 0: a leads, b copies 3 records.
	if err := a.p.MakeLeader(PartitionState{Topic: "t", Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: 1}, 1); err != nil {
		t.Fatal(err)
	}
	b.p.MakeFollower(PartitionState{Topic: "t", Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: 1})
	a.p.AppendAsLeader(batch(3), 1, storage.AppendOptions{})
	replicate(t, a, b, 2)
	// a appends 2 more that b never gets (acks=1), then dies.
	a.p.AppendAsLeader(batch(2), 1, storage.AppendOptions{})
	// Epoch 1: b leads and writes 1 record.
	if err := b.p.MakeLeader(PartitionState{Topic: "t", Replicas: []int32{1, 2}, ISR: []int32{2}, Leader: 2, LeaderEpoch: 1, PartitionEpoch: 1}, 1); err != nil {
		t.Fatal(err)
	}
	b.p.AppendAsLeader(batch(1), 1, storage.AppendOptions{})
	// a comes back as follower of b: diverging epoch, truncate to 3, fetch.
	if _, err := a.p.MakeFollower(PartitionState{Topic: "t", Replicas: []int32{1, 2}, ISR: []int32{2}, Leader: 2, LeaderEpoch: 1, PartitionEpoch: 1}); err != nil {
		t.Fatal(err)
	}
	res := replicate(t, b, a, 1)
	if res.Diverging == nil || res.Diverging.Epoch != 0 || res.Diverging.EndOffset != 3 {
		t.Fatalf("diverging = %+v, want epoch 0 ending at 3", res.Diverging)
	}
	if leo := a.p.Snapshot().LogEndOffset; leo != 3 {
		t.Fatalf("after truncation LEO = %d, want 3", leo)
	}
	replicate(t, b, a, 1)
	if leo := a.p.Snapshot().LogEndOffset; leo != 4 {
		t.Fatalf("after catching up LEO = %d, want 4", leo)
	}
	ra, _ := a.p.Log().Read(0, 1<<20, 4, true)
	rb, _ := b.p.Log().Read(0, 1<<20, 4, true)
	defer ra.Release()
	defer rb.Release()
	if !slices.Equal(ra.Data, rb.Data) {
		t.Fatal("the replicas' logs differ after truncation and catch-up")
	}
}

// A replica that led an epoch without appending anything ends its epoch
// history with an entry at its log end. Following a leader that never had
// that epoch, it is told to truncate at its log end: the log stays, the
// stale epoch entry goes, and the next fetch does not diverge again (the
// livelock the chaos suite's all-restart scenario found).
func TestTruncateAtLogEndDropsEmptyEpoch(t *testing.T) {
	clock := testsupport.NewClock(time.Unix(1000, 0))
	a, b := newTestReplica(t, 1, clock), newTestReplica(t, 2, clock)
	st := func(leader, epoch int32) PartitionState {
		return PartitionState{Topic: "t", Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: leader, LeaderEpoch: epoch, PartitionEpoch: epoch}
	}
	if err := a.p.MakeLeader(st(1, 0), 1); err != nil {
		t.Fatal(err)
	}
	b.p.MakeFollower(st(1, 0))
	a.p.AppendAsLeader(batch(3), 1, storage.AppendOptions{})
	replicate(t, a, b, 2)
	// b leads epoch 1 and appends nothing.
	if err := b.p.MakeLeader(st(2, 1), 1); err != nil {
		t.Fatal(err)
	}
	// a leads epoch 2 (it never saw epoch 1); b follows.
	if err := a.p.MakeLeader(st(1, 2), 1); err != nil {
		t.Fatal(err)
	}
	if _, err := b.p.MakeFollower(st(1, 2)); err != nil {
		t.Fatal(err)
	}
	a.p.AppendAsLeader(batch(1), 1, storage.AppendOptions{})
	first := replicate(t, a, b, 2)
	if first.Diverging == nil {
		t.Fatal("the follower's empty epoch 1 should diverge once")
	}
	second := replicate(t, a, b, 2)
	if second.Diverging != nil {
		t.Fatalf("diverging again after truncating: %+v (livelock)", second.Diverging)
	}
	if leo := b.p.Snapshot().LogEndOffset; leo != 4 {
		t.Fatalf("follower LEO %d, want 4", leo)
	}
}

// A new leader whose HW is below the offset its epoch starts at (the HW
// it took over lags its predecessor's) refuses consumers with
// OFFSET_NOT_AVAILABLE until the ISR has fetched up to that offset, so
// that no consumer sees the high watermark move back; followers are served.
func TestNewLeaderRefusesConsumersUntilHWCatchesUp(t *testing.T) {
	clock := testsupport.NewClock(time.Unix(1000, 0))
	r1, r2, r3 := newTestReplica(t, 1, clock), newTestReplica(t, 2, clock), newTestReplica(t, 3, clock)
	st := func(leader, epoch int32, isr ...int32) PartitionState {
		return PartitionState{Topic: "t", Replicas: []int32{1, 2, 3}, ISR: isr, Leader: leader, LeaderEpoch: epoch}
	}
	if err := r1.p.MakeLeader(st(1, 0, 1, 2, 3), 1); err != nil {
		t.Fatal(err)
	}
	for _, r := range []*testReplica{r2, r3} {
		if _, err := r.p.MakeFollower(st(1, 0, 1, 2, 3)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r1.p.AppendAsLeader(batch(5), -1, storage.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	replicate(t, r1, r2, 2)
	replicate(t, r1, r3, 3)
	replicate(t, r1, r2, 2) // r2 at 5, learns HW 0
	replicate(t, r1, r3, 3) // r3 at 5: the leader's HW is 5
	if hw := r1.p.Snapshot().HighWatermark; hw != 5 {
		t.Fatalf("leader HW %d, want 5", hw)
	}
	// r1 dies; r2 takes over with HW 0 and its epoch starting at 5.
	if err := r2.p.MakeLeader(st(2, 1, 2, 3), 1); err != nil {
		t.Fatal(err)
	}
	if _, err := r3.p.MakeFollower(st(2, 1, 2, 3)); err != nil {
		t.Fatal(err)
	}
	if _, err := r2.p.ReadForConsumer(0, 1<<20, -1, true); !errors.Is(err, kerr.OffsetNotAvailable) {
		t.Fatalf("consumer fetch before the HW caught up: %v, want OFFSET_NOT_AVAILABLE", err)
	}
	if _, err := r2.p.ListOffsetAt(ReadCommitted, LatestTimestamp, -1, false); !errors.Is(err, kerr.OffsetNotAvailable) {
		t.Fatalf("ListOffsets before the HW caught up: %v, want OFFSET_NOT_AVAILABLE", err)
	}
	if _, err := r2.p.ListOffsetAt(ReadUncommitted, LatestTimestamp, -1, true); err != nil {
		t.Fatalf("ListOffsets from a replica: %v", err)
	}
	replicate(t, r2, r3, 3) // the follower tells the new leader its LEO
	res, err := r2.p.ReadForConsumer(0, 1<<20, -1, true)
	if err != nil || res.HighWatermark != 5 {
		t.Fatalf("consumer fetch after the follower fetched: HW %d, %v; want 5", res.HighWatermark, err)
	}
	if res.Release != nil {
		res.Release()
	}
}

// KIP-966's strict min ISR, on a real leader: while the committed ISR is
// smaller than min.insync.replicas the HW does not move, however far the
// replicas outside it have copied the log; it moves once the controller
// commits an ISR of min.insync.replicas members. A topic whose
// min.insync.replicas exceeds its replication factor is capped at it.
func TestHighWatermarkHeldWhileISRBelowMinISR(t *testing.T) {
	clock := testsupport.NewClock(time.Unix(1000, 0))
	l, f2 := newTestReplica(t, 1, clock), newTestReplica(t, 2, clock)
	if err := l.p.MakeLeader(leaderState(0, 0, 1), 2); err != nil {
		t.Fatal(err)
	}
	if _, err := f2.p.MakeFollower(PartitionState{Topic: "t", Replicas: []int32{1, 2, 3}, ISR: []int32{1}, Leader: 1}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := l.p.AppendAsLeader(batch(2), 1, storage.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
		replicate(t, l, f2, 2)
		replicate(t, l, f2, 2)
		if hw := l.p.Snapshot().HighWatermark; hw != 0 {
			t.Fatalf("HW moved to %d with the committed ISR [1] below min.insync.replicas 2", hw)
		}
	}
	change, ok := l.lastProposal()
	if !ok || !slices.Equal(change.NewISR, []int32{1, 2}) {
		t.Fatalf("proposed %+v, want ISR [1 2]", change)
	}
	l.p.ISRResult(change, []int32{1, 2}, 0, 1, nil)
	if hw := l.p.Snapshot().HighWatermark; hw != 6 {
		t.Fatalf("HW = %d once the ISR [1 2] is committed, want 6", hw)
	}

	// RF 1 with min.insync.replicas 2: the effective minimum is 1.
	single := newTestReplica(t, 1, clock)
	st := PartitionState{Topic: "t", Replicas: []int32{1}, ISR: []int32{1}, Leader: 1}
	if err := single.p.MakeLeader(st, 2); err != nil {
		t.Fatal(err)
	}
	if _, err := single.p.AppendAsLeader(batch(1), -1, storage.AppendOptions{}); err != nil {
		t.Fatalf("acks=all on RF 1 with min.insync.replicas 2: %v", err)
	}
	if hw := single.p.Snapshot().HighWatermark; hw != 1 {
		t.Fatalf("RF 1 HW = %d, want 1", hw)
	}
}

package replication

import (
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kbroker/kbroker/internal/testsupport"
	"github.com/kbroker/kbroker/storage"
)

// KIP-392: a follower serves consumers up to its own HW; the leader lists
// the in-sync replicas whose log reaches the fetch offset.
func TestFollowerServesConsumersUpToItsHW(t *testing.T) {
	clock := testsupport.NewClock(time.Unix(1000, 0))
	l, f2, f3 := newTestReplica(t, 1, clock), newTestReplica(t, 2, clock), newTestReplica(t, 3, clock)
	if err := l.p.MakeLeader(leaderState(0, 0, 1, 2, 3), 1); err != nil {
		t.Fatal(err)
	}
	for _, f := range []*testReplica{f2, f3} {
		if _, err := f.p.MakeFollower(PartitionState{Topic: "t", Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, Leader: 1}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.p.AppendAsLeader(batch(3), -1, storage.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.p.ReadForConsumerOnFollower(0, 1<<20, -1, true); !errors.Is(err, kerr.NotLeaderForPartition) {
		t.Fatalf("the leader served as a follower: %v", err)
	}
	replicate(t, l, f2, 2) // f2 holds 0..2, its HW still 0
	res, err := f2.p.ReadForConsumerOnFollower(0, 1<<20, -1, true)
	if err != nil || len(res.Data) != 0 || res.HighWatermark != 0 {
		t.Fatalf("above its HW a follower must serve nothing: %d bytes, hw %d, %v", len(res.Data), res.HighWatermark, err)
	}
	replicate(t, l, f2, 2) // the leader learns f2's LEO
	views, _, err := l.p.ReadReplicas(3, -1)
	if err != nil || len(views) != 2 || views[0].ID != 1 || views[1].ID != 2 {
		t.Fatalf("candidates at offset 3: %+v %v, want the leader and f2 (f3 lags)", views, err)
	}
	replicate(t, l, f3, 3)
	replicate(t, l, f3, 3)
	replicate(t, l, f2, 2) // f2 learns HW 3
	res, err = f2.p.ReadForConsumerOnFollower(0, 1<<20, -1, true)
	if err != nil || len(res.Data) == 0 || res.HighWatermark != 3 {
		t.Fatalf("follower read below its HW: %d bytes, hw %d, %v", len(res.Data), res.HighWatermark, err)
	}
	if res.Release != nil {
		res.Release()
	}
	// Past its log end: empty without a leader epoch, out of range with one.
	if res, err := f2.p.ReadForConsumerOnFollower(10, 1<<20, -1, true); err != nil || len(res.Data) != 0 {
		t.Fatalf("past the log end without an epoch: %v", err)
	}
	if _, err := f2.p.ReadForConsumerOnFollower(10, 1<<20, 0, true); !errors.Is(err, kerr.OffsetOutOfRange) {
		t.Fatalf("past the log end with an epoch: %v, want OFFSET_OUT_OF_RANGE", err)
	}
	if _, err := f2.p.ReadForConsumerOnFollower(0, 1<<20, 5, true); !errors.Is(err, kerr.UnknownLeaderEpoch) {
		t.Fatalf("newer epoch: %v", err)
	}
	if _, _, err := f2.p.ReadReplicas(0, -1); !errors.Is(err, kerr.NotLeaderForPartition) {
		t.Fatalf("a follower listed read replicas: %v", err)
	}
}

// A new leader whose HW lags its epoch's start answers a consumer's latest
// offset OFFSET_NOT_AVAILABLE until the HW catches up (Kafka's
// Partition.fetchOffsetForTimestamp); a replica's lookup is not refused.
func TestListOffsetLaggingNewLeader(t *testing.T) {
	clock := testsupport.NewClock(time.Unix(1000, 0))
	old, next := newTestReplica(t, 1, clock), newTestReplica(t, 2, clock)
	if err := old.p.MakeLeader(leaderState(0, 0, 1, 2), 1); err != nil {
		t.Fatal(err)
	}
	if _, err := next.p.MakeFollower(PartitionState{Topic: "t", Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2}, Leader: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := old.p.AppendAsLeader(batch(3), -1, storage.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	replicate(t, old, next, 2) // next holds 0..2 with HW 0
	st := PartitionState{Topic: "t", Replicas: []int32{1, 2, 3}, ISR: []int32{2, 1}, Leader: 2, LeaderEpoch: 1, PartitionEpoch: 1}
	if err := next.p.MakeLeader(st, 2); err != nil {
		t.Fatal(err)
	}
	if _, err := next.p.ListOffset(LatestTimestamp, -1, false); !errors.Is(err, kerr.OffsetNotAvailable) {
		t.Fatalf("latest offset on a lagging new leader: %v, want OFFSET_NOT_AVAILABLE", err)
	}
	if got, err := next.p.ListOffset(LatestTimestamp, -1, true); err != nil || got.Offset != 3 {
		t.Fatalf("a replica's latest offset: %+v %v", got, err)
	}
	if got, err := next.p.ListOffset(EarliestTimestamp, -1, false); err != nil || got.Offset != 0 {
		t.Fatalf("earliest offset: %+v %v", got, err)
	}
}

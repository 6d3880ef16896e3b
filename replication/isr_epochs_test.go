package replication

import (
	"slices"
	"testing"
	"time"

	"github.com/kbroker/kbroker/internal/testsupport"
)

// pendingExpansion is a leader (broker 1, ISR {1}) whose follower 2 caught
// up: the expansion to {1, 2} is in flight.
func pendingExpansion(t *testing.T) (*Partition, AlterISR) {
	clock := testsupport.NewClock(time.Unix(1000, 0))
	var sent []AlterISR
	p := NewPartition("t", 0, newMemLog(memLogConfig{}), PartitionOptions{LocalID: 1, Now: clock.Now,
		ProposeISR: func(_ *Partition, c AlterISR) { sent = append(sent, c) }})
	must(t, p.MakeLeader(PartitionState{Topic: "t", Replicas: []int32{1, 2}, ISR: []int32{1}, Leader: 1}, 1))
	if _, err := p.UpdateFollowerAndRead(FollowerFetch{ReplicaID: 2, ReplicaEpoch: 7, FetchOffset: 0,
		LastFetchedEpoch: -1, CurrentLeaderEpoch: 0, MaxBytes: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	if len(sent) != 1 || !slices.Equal(sent[0].NewISR, []int32{1, 2}) {
		t.Fatalf("proposals %+v, want the expansion to [1 2]", sent)
	}
	return p, sent[0]
}

// KIP-903: the expansion carries the broker epoch the follower fetched
// with, so that the controller can refuse it for a later incarnation.
func TestExpansionCarriesTheFollowersBrokerEpoch(t *testing.T) {
	_, change := pendingExpansion(t)
	if !slices.Equal(change.NewISREpochs, []int64{-1, 7}) {
		t.Fatalf("NewISREpochs %v, want [-1 7] (the leader's own unknown)", change.NewISREpochs)
	}
}

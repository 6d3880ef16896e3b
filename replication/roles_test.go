package replication

import (
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kbroker/kbroker/internal/testsupport"
	"github.com/kbroker/kbroker/storage"
)

func TestRoleTransitionsTable(t *testing.T) {
	legal := map[Role][]Role{
		RoleLeader:   {RoleNone, RoleLeader, RoleFollower},
		RoleFollower: {RoleNone, RoleLeader, RoleFollower},
		RoleOffline:  {RoleNone, RoleLeader, RoleFollower},
		RoleNone:     nil,
	}
	all := []Role{RoleNone, RoleLeader, RoleFollower, RoleOffline}
	for to, from := range legal {
		for _, prev := range all {
			want := false
			for _, f := range from {
				want = want || f == prev
			}
			if got := to.validPrevious(prev); got != want {
				t.Errorf("%s -> %s: valid = %v, want %v", prev, to, got, want)
			}
		}
	}
}

// "No leader known" keeps the replica a follower (of -1): it holds its
// epoch, fetches nothing, and takes the next leadership normally.
func TestLeaderlessReplicaIsAFollowerOfNobody(t *testing.T) {
	clock := testsupport.NewClock(time.Unix(1000, 0))
	r := newTestReplica(t, 2, clock)
	st := leaderState(3, 3, 1, 2, 3)
	st.Leader = -1
	changed, err := r.p.MakeFollower(st)
	if err != nil || !changed {
		t.Fatalf("MakeFollower(no leader) = %v, %v", changed, err)
	}
	if role := r.p.Role(); role != RoleFollower {
		t.Fatalf("role %s, want follower", role)
	}
	fs, ok := r.p.FetchState()
	if !ok || fs.Leader != -1 || fs.LeaderEpoch != 3 {
		t.Fatalf("fetch state %+v, %v: want a follower of -1 at epoch 3", fs, ok)
	}
	if err := r.p.AppendAsFollower(2, nil, 0, 0); !errors.Is(err, kerr.FencedLeaderEpoch) {
		t.Fatalf("a response for an older epoch: %v, want FENCED_LEADER_EPOCH", err)
	}
	if _, err := r.p.MakeFollower(leaderState(2, 4, 1, 2, 3)); err == nil {
		t.Fatal("an older leader epoch was applied")
	}
	if err := r.p.MakeLeader(PartitionState{Topic: "t", Replicas: []int32{1, 2, 3}, ISR: []int32{2}, Leader: 2,
		LeaderEpoch: 4, PartitionEpoch: 4}, 1); err != nil {
		t.Fatal(err)
	}
	if role := r.p.Role(); role != RoleLeader {
		t.Fatalf("role %s after the election, want leader", role)
	}
}

// Offline is terminal: a state applied after Manager.Remove is refused, and
// every request gets NOT_LEADER_OR_FOLLOWER.
func TestOfflineIsTerminal(t *testing.T) {
	clock := testsupport.NewClock(time.Unix(1000, 0))
	r := newTestReplica(t, 1, clock)
	if err := r.p.MakeLeader(leaderState(1, 1, 1), 1); err != nil {
		t.Fatal(err)
	}
	if err := r.p.makeOffline(); err != nil {
		t.Fatal(err)
	}
	if role := r.p.Role(); role != RoleOffline {
		t.Fatalf("role %s, want offline", role)
	}
	if err := r.p.MakeLeader(leaderState(2, 2, 1), 1); !errors.Is(err, errIllegalTransition) {
		t.Fatalf("MakeLeader on an offline replica: %v, want an illegal transition", err)
	}
	if _, err := r.p.MakeFollower(leaderState(2, 2, 1)); !errors.Is(err, errIllegalTransition) {
		t.Fatalf("MakeFollower on an offline replica: %v, want an illegal transition", err)
	}
	if err := r.p.makeOffline(); !errors.Is(err, errIllegalTransition) {
		t.Fatalf("offline twice: %v, want an illegal transition", err)
	}
	if _, err := r.p.AppendAsLeader(batch(1), 1, storage.AppendOptions{}); !errors.Is(err, kerr.NotLeaderForPartition) {
		t.Fatalf("append to an offline replica: %v", err)
	}
	if _, err := r.p.UpdateFollowerAndRead(FollowerFetch{ReplicaID: 2, FetchOffset: 0, LastFetchedEpoch: -1,
		CurrentLeaderEpoch: -1, MaxBytes: 1 << 20}); !errors.Is(err, kerr.NotLeaderForPartition) {
		t.Fatalf("fetch from an offline replica: %v", err)
	}
}

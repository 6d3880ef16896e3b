package broker

import (
	"testing"
	"time"

	"github.com/kbroker/kbroker/replication"
)

// Kafka's RackAwareReplicaSelector, as rackAwareReplica decides it.
func TestRackAwareReplica(t *testing.T) {
	racks := map[int32]string{1: "a", 2: "b", 3: "c", 4: "b", 5: "b"}
	fenced := map[int32]bool{5: true}
	rackOf := func(id int32) (string, bool) {
		r, ok := racks[id]
		return r, ok && !fenced[id]
	}
	leader := replication.ReplicaView{ID: 1, LogEndOffset: 100}
	b2 := replication.ReplicaView{ID: 2, LogEndOffset: 90, SinceCaughtUp: time.Second}
	b4 := replication.ReplicaView{ID: 4, LogEndOffset: 90, SinceCaughtUp: 10 * time.Millisecond}
	b5 := replication.ReplicaView{ID: 5, LogEndOffset: 100}
	c3 := replication.ReplicaView{ID: 3, LogEndOffset: 100}
	cases := []struct {
		name  string
		rack  string
		views []replication.ReplicaView
		want  int32
	}{
		{"no client rack: the leader", "", []replication.ReplicaView{leader, b2, c3}, -1},
		{"the leader's rack: the leader", "a", []replication.ReplicaView{leader, b2, c3}, -1},
		{"a follower in the rack", "c", []replication.ReplicaView{leader, b2, c3}, 3},
		{"no replica in the rack: the leader", "z", []replication.ReplicaView{leader, b2, c3}, -1},
		{"equal log ends: the most recently caught up", "b", []replication.ReplicaView{leader, b2, b4}, 4},
		{"a fenced broker is never chosen", "b", []replication.ReplicaView{leader, b5, b2}, 2},
		{"only the leader can serve (others lag): the leader", "b", []replication.ReplicaView{leader}, -1},
	}
	for _, tc := range cases {
		if got := rackAwareReplica(tc.rack, tc.views, rackOf); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}

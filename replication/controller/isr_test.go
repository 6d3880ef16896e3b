package controller

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// KIP-497 / KIP-841 AlterPartition validation, one case per error, in the
// order Kafka's ReplicationControlManager checks them.
func TestCheckAlterPartition(t *testing.T) {
	tf := newTestFSM(t)
	tf.registerLive(1, 2, 3, 4)
	tf.createTopic("t", 1, []int32{1, 2, 3})
	// Broker 3 goes into controlled shutdown, broker 4 is fenced, broker 5 is unknown.
	img := tf.img()
	tf.apply(&controlledShutdownRecord{ID: 3, Epoch: img.Brokers[3].Epoch})
	tf.fence(4)
	img = tf.img()
	p := img.Partition("t", 0)
	// t-0 is still led by 1 at epochs 0/0: the shutdown record was applied
	// alone, without its partition changes.
	ep2 := img.Brokers[2].Epoch
	m := func(ids ...int32) []isrMember {
		out := make([]isrMember, len(ids))
		for i, id := range ids {
			out[i] = isrMember{id, -1}
		}
		return out
	}
	cases := []alterCase{
		{"valid shrink", 1, 3, p, 0, 0, m(1, 2), false, nil},
		{"unknown partition", 1, 3, nil, 0, 0, m(1), false, kerr.UnknownTopicOrPartition},
		{"newer leader epoch", 1, 3, p, 1, 0, m(1), false, kerr.NotController},
		{"newer partition epoch", 1, 3, p, 0, 1, m(1), false, kerr.NotController},
		{"stale leader epoch", 1, 3, withEpochs(p, 2, 5), 1, 5, m(1), false, kerr.FencedLeaderEpoch},
		{"not the leader", 2, 3, p, 0, 0, m(1, 2), false, kerr.InvalidRequest},
		{"stale partition epoch", 1, 3, withEpochs(p, 0, 3), 0, 2, m(1), false, kerr.InvalidUpdateVersion},
		{"ISR without the leader", 1, 3, p, 0, 0, m(2), false, kerr.InvalidRequest},
		{"ISR member not a replica", 1, 3, p, 0, 0, m(1, 4), false, kerr.InvalidRequest},
		{"duplicate ISR member", 1, 3, p, 0, 0, m(1, 2, 2), false, kerr.InvalidRequest},
		{"empty ISR", 1, 3, p, 0, 0, nil, false, kerr.InvalidRequest},
		{"recovering leader", 1, 3, p, 0, 0, m(1), true, kerr.InvalidRequest},
		{"shutting-down member", 1, 3, p, 0, 0, m(1, 3), false, kerr.IneligibleReplica},
		{"shutting-down member v1", 1, 1, p, 0, 0, m(1, 3), false, kerr.OperationNotAttempted},
		{"stale member epoch v3", 1, 3, p, 0, 0, []isrMember{{1, -1}, {2, ep2 + 1}}, false, kerr.IneligibleReplica},
		{"current member epoch v3", 1, 3, p, 0, 0, []isrMember{{1, -1}, {2, ep2}}, false, nil},
	}
	fencedRep := &Partition{Topic: "t", Replicas: []int32{1, 4, 5}, ISR: []int32{1}, Leader: 1}
	cases = append(cases,
		alterCase{"fenced member", 1, 2, fencedRep, 0, 0, m(1, 4), false, kerr.IneligibleReplica},
		alterCase{"unregistered member", 1, 2, fencedRep, 0, 0, m(1, 5), false, kerr.IneligibleReplica},
	)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var rs int8
			if c.recovering {
				rs = leaderRecovering
			}
			got := checkAlterPartition(img, c.broker, c.version, c.p, c.le, c.pe, c.isr, rs)
			if err := kerr.ErrorForCode(got); err != c.want {
				t.Fatalf("got %v, want %v", err, c.want)
			}
		})
	}
}

type alterCase struct {
	name       string
	broker     int32
	version    int16
	p          *Partition
	le, pe     int32
	isr        []isrMember
	recovering bool
	want       error
}

func withEpochs(p *Partition, leaderEpoch, partitionEpoch int32) *Partition {
	c := p.clone()
	c.LeaderEpoch, c.PartitionEpoch = leaderEpoch, partitionEpoch
	return c
}

package replication

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// The replica fetcher on the wire (its requests and answers pass through
// Kafka's encoding at their version, see fetchOverWire): Fetch v16, topics
// by id, and the follower's broker epoch in ReplicaState (KIP-903).

// followerEpoch is the broker epoch the leader holds for follower id.
func followerEpoch(p *Partition, id int32) int64 {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if f, ok := p.followers[id]; ok {
		return f.BrokerEpoch
	}
	return -2
}

func TestFetcherSendsV16ByTopicIDWithItsBrokerEpoch(t *testing.T) {
	r := newFetcherRig(t)
	r.produce(3)
	rd, ok := r.f.nextRound()
	if !ok {
		t.Fatal("no round")
	}
	req := rd.req
	if req.GetVersion() != replicaFetchVersion || len(req.Topics) != 1 || req.Topics[0].TopicID != rigTopicID {
		t.Fatalf("v%d, topics %+v: want v16 by topic id", req.GetVersion(), req.Topics)
	}
	if req.ReplicaState.ID != 2 || req.ReplicaState.Epoch != rigBrokerEpoch {
		t.Fatalf("ReplicaState %+v, want {2 %d}", req.ReplicaState, rigBrokerEpoch)
	}
	resp, err := r.client.Fetch(bgContext, req)
	if err != nil || resp.Topics[0].Topic != "" {
		t.Fatalf("%v; a v16 answer names topics by id only, got %+v", err, resp.Topics)
	}
	r.f.complete(rd, resp, nil) // mapped back by id
	if _, leo, _ := r.follower.Offsets(); leo != 3 {
		t.Fatalf("follower LEO %d, want 3", leo)
	}
	if got := followerEpoch(r.leader, 2); got != rigBrokerEpoch {
		t.Fatalf("the leader holds broker epoch %d for the follower, want %d", got, rigBrokerEpoch)
	}
}

// KIP-903 end to end in one process: the epoch the follower fetched with
// reaches the AlterPartition v3 request its catching up makes the leader
// send, through both wires.
func TestFollowerBrokerEpochReachesAlterPartition(t *testing.T) {
	r := newFetcherRig(t)
	var proposed []AlterISR
	r.leader.proposeISR = func(_ *Partition, c AlterISR) { proposed = append(proposed, c) }
	st := PartitionState{Topic: "t", TopicID: rigTopicID, Replicas: []int32{1, 2}, ISR: []int32{1}, Leader: 1, LeaderEpoch: 1, PartitionEpoch: 2}
	must(t, r.leader.MakeLeader(st, 1))
	r.produce(2)
	r.round() // fetches the records
	r.round() // says it has them: caught up
	if len(proposed) != 1 || !slices.Equal(proposed[0].NewISR, []int32{1, 2}) {
		t.Fatalf("proposals %+v, want the expansion to [1 2]", proposed)
	}
	req := requestOverWire(AlterPartitionRequest(1, 9, proposed))
	if got := epochISR(req.Topics[0].Partitions[0].NewEpochISR); !slices.Equal(got, []int64{1, 9, 2, rigBrokerEpoch}) {
		t.Fatalf("AlterPartition v%d ISR (id, epoch) %v, want [1 9 2 %d]", req.GetVersion(), got, rigBrokerEpoch)
	}
}

// A partition whose topic id the metadata did not give is fetched at v12
// by name, as Kafka's fetcher does; that version carries no broker epoch.
func TestFetcherWithoutATopicIDFallsBackToV12(t *testing.T) {
	r := newFetcherRig(t)
	st := PartitionState{Topic: "t", Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: 1, LeaderEpoch: 2, PartitionEpoch: 2}
	must(t, r.leader.MakeLeader(st, 1))
	if _, err := r.follower.MakeFollower(st); err != nil {
		t.Fatal(err)
	}
	r.produce(2)
	rd, _ := r.f.nextRound()
	if rd.req.GetVersion() != namesFetchVersion || rd.req.Topics[0].Topic != "t" || rd.req.ReplicaID != 2 {
		t.Fatalf("v%d topics %+v replica %d: want v12 by name", rd.req.GetVersion(), rd.req.Topics, rd.req.ReplicaID)
	}
	resp, _ := r.client.Fetch(bgContext, rd.req)
	r.f.complete(rd, resp, nil)
	if _, leo, _ := r.follower.Offsets(); leo != 2 {
		t.Fatalf("follower LEO %d, want 2", leo)
	}
	if got := followerEpoch(r.leader, 2); got != -1 {
		t.Fatalf("broker epoch %d from a v12 fetch, want -1 (not on the wire)", got)
	}
}

// UNKNOWN_TOPIC_ID (the leader has not applied the topic's creation yet)
// backs the partition off for metadataLagBackoff, and the fetch goes on
// once the leader knows the topic.
func TestFetcherBacksOffOnUnknownTopicID(t *testing.T) {
	r := newFetcherRig(t)
	r.produce(1)
	lead := r.leader
	r.leader = nil // broker 1 holds no partition of the topic yet
	rd, _ := r.f.nextRound()
	resp, _ := r.client.Fetch(bgContext, rd.req)
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != kerr.UnknownTopicID.Code {
		t.Fatalf("error %v, want UNKNOWN_TOPIC_ID", kerr.ErrorForCode(code))
	}
	r.f.complete(rd, resp, nil)
	if d := r.f.nextDelay(); d != metadataLagBackoff {
		t.Fatalf("next delay %v, want %v", d, metadataLagBackoff)
	}
	r.leader = lead
	r.clock.Advance(metadataLagBackoff)
	r.round()
	if _, leo, _ := r.follower.Offsets(); leo != 1 {
		t.Fatalf("follower LEO %d once the leader knows the topic, want 1", leo)
	}
}

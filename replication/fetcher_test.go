package replication

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/internal/testsupport"
	"github.com/kbroker/kbroker/storage"
)

// fetcherRig is a leader (broker 1) and a follower (broker 2) on in-memory
// logs, and the follower's fetcher driven round by round.
type fetcherRig struct {
	t        *testing.T
	clock    *fakeClock
	leader   *Partition
	follower *Partition
	client   *directClient
	f        *fetcher
}

// rigTopicID is the rig's topic id: its fetches go by id (Fetch v16).
var rigTopicID = [16]byte{7, 7}

// rigBrokerEpoch is the follower's broker epoch in the rig.
const rigBrokerEpoch = 41

func memPartition(id int32, clock *fakeClock, log ReplicaLog) *Partition {
	return NewPartition("t", 0, log, PartitionOptions{LocalID: id, Now: clock.Now})
}

func newFetcherRig(t *testing.T) *fetcherRig {
	clock := testsupport.NewClock(time.Unix(1000, 0))
	r := &fetcherRig{t: t, clock: clock,
		leader:   memPartition(1, clock, newMemLog(memLogConfig{})),
		follower: memPartition(2, clock, newMemLog(memLogConfig{}))}
	r.client = &directClient{leader: func() *Partition { return r.leader }}
	timers := &fakeTimers{clock: clock}
	r.f = newFetcher(fetcherConfig{parent: context.Background(), leader: 1, localID: 2,
		opts: FetcherOptions{Backoff: time.Second, BrokerEpoch: func() int64 { return rigBrokerEpoch }}, client: r.client, now: clock.Now, after: timers.After,
		logger: slog.New(slog.DiscardHandler), retire: func(*fetcher) bool { return true }})
	r.elect(1, 1)
	return r
}

// elect applies leadership of leader at epoch to both replicas, ISR {1, 2}.
func (r *fetcherRig) elect(leader, epoch int32) {
	r.t.Helper()
	st := PartitionState{Topic: "t", TopicID: rigTopicID, Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: leader,
		LeaderEpoch: epoch, PartitionEpoch: epoch}
	lead, follow := r.leader, r.follower
	if leader == 2 {
		lead, follow = r.follower, r.leader
	}
	must(r.t, lead.MakeLeader(st, 1))
	if _, err := follow.MakeFollower(st); err != nil {
		r.t.Fatal(err)
	}
	if follow == r.follower {
		r.f.add(r.follower)
	}
}

func (r *fetcherRig) produce(n int) {
	r.t.Helper()
	if _, err := r.leader.AppendAsLeader(batch(n), 1, storage.AppendOptions{}); err != nil {
		r.t.Fatal(err)
	}
}

// round runs one fetch round and returns the wait the loop would take.
func (r *fetcherRig) round() time.Duration {
	r.t.Helper()
	rd, ok := r.f.nextRound()
	if !ok {
		r.t.Fatal("no round to run")
	}
	resp, err := r.client.Fetch(context.Background(), rd.req)
	return r.f.complete(rd, resp, err)
}

func TestFetcherRoundReplicatesAndFollowsTheHW(t *testing.T) {
	r := newFetcherRig(t)
	r.produce(3)
	rd, ok := r.f.nextRound()
	if !ok {
		t.Fatal("no round")
	}
	rp := rd.req.Topics[0].Partitions[0]
	if rd.req.ReplicaID != 2 || rp.FetchOffset != 0 || rp.LastFetchedEpoch != -1 || rp.CurrentLeaderEpoch != 1 {
		t.Fatalf("request %+v / partition %+v", rd.req, rp)
	}
	resp, _ := r.client.Fetch(context.Background(), rd.req)
	if wait := r.f.complete(rd, resp, nil); wait != 0 {
		t.Fatalf("wait %v after a good round", wait)
	}
	if _, leo, _ := r.follower.Offsets(); leo != 3 {
		t.Fatalf("follower LEO %d, want 3", leo)
	}
	// The leader's HW moves on the follower's next fetch, which brings it back.
	r.round()
	if hw, _, _ := r.follower.Offsets(); hw != 3 {
		t.Fatalf("follower HW %d, want 3", hw)
	}
}

// KIP-320: a follower whose last fetched epoch ends earlier on the leader
// truncates to the divergence point before fetching on.
func TestFetcherTruncatesOnDivergingEpoch(t *testing.T) {
	r := newFetcherRig(t)
	r.produce(2)
	r.round()
	// The follower leads epoch 2 for a moment and writes 2 records nobody
	// else gets; then broker 1 leads epoch 3.
	st := PartitionState{Topic: "t", TopicID: rigTopicID, Replicas: []int32{1, 2}, ISR: []int32{2}, Leader: 2, LeaderEpoch: 2, PartitionEpoch: 2}
	must(t, r.follower.MakeLeader(st, 1))
	if _, err := r.follower.AppendAsLeader(batch(2), 1, storage.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	r.elect(1, 3)
	r.produce(1)
	r.round() // diverging: truncate to 2
	if _, leo, _ := r.follower.Offsets(); leo != 2 {
		t.Fatalf("follower LEO %d after the diverging answer, want 2", leo)
	}
	r.round()
	if _, leo, _ := r.follower.Offsets(); leo != 3 {
		t.Fatalf("follower LEO %d after catching up, want 3", leo)
	}
}

// A leader whose log ends below ours, where no epoch tells where we
// diverge (our batches predate leader epochs), answers OFFSET_OUT_OF_RANGE;
// the follower asks ListOffsets and truncates to the leader's end.
func TestFetcherOutOfRangeTruncatesToTheLeadersEnd(t *testing.T) {
	r := newFetcherRig(t)
	r.produce(1)
	for base := int64(0); base < 3; base++ {
		b := stamp(rawBatch(1), base, -1)
		if _, err := r.follower.log.AppendAsFollower(b); err != nil {
			t.Fatal(err)
		}
	}
	r.round()
	if r.client.lists != 2 {
		t.Fatalf("%d ListOffsets, want earliest and latest", r.client.lists)
	}
	if _, leo, _ := r.follower.Offsets(); leo != 1 {
		t.Fatalf("follower LEO %d, want the leader's 1", leo)
	}
	if snap := r.leader.Snapshot(); snap.FollowerLEOs[2] != -1 {
		t.Fatalf("the leader recorded LEO %d for a fetch beyond its log end", snap.FollowerLEOs[2])
	}
}

// A follower behind the leader's log start restarts its log there.
func TestFetcherResetsBelowTheLeadersLogStart(t *testing.T) {
	r := newFetcherRig(t)
	r.produce(4)
	st := PartitionState{Topic: "t", TopicID: rigTopicID, Replicas: []int32{1, 2}, ISR: []int32{1}, Leader: 1, LeaderEpoch: 1, PartitionEpoch: 2}
	must(t, r.leader.MakeLeader(st, 1)) // the follower is out of the ISR: the HW follows the leader alone
	r.produce(1)
	if _, err := r.leader.DeleteRecordsBefore(4); err != nil {
		t.Fatal(err)
	}
	r.round()
	if _, leo, start := r.follower.Offsets(); start != 4 || leo != 4 {
		t.Fatalf("follower log [%d, %d), want it restarted at 4", start, leo)
	}
	r.round()
	if _, leo, _ := r.follower.Offsets(); leo != 5 {
		t.Fatalf("follower LEO %d, want 5", leo)
	}
}

// DeleteRecords moved the leader's log start into a batch: the follower
// restarts there, fetches that whole batch, restarts its empty log at the
// batch's base (Kafka's UnexpectedAppendOffsetException handling) and then
// follows the leader's log start again.
func TestFetcherRestartsInsideABatchAtItsBase(t *testing.T) {
	r := newFetcherRig(t)
	r.produce(4) // offsets 0-3
	st := PartitionState{Topic: "t", TopicID: rigTopicID, Replicas: []int32{1, 2}, ISR: []int32{1}, Leader: 1, LeaderEpoch: 1, PartitionEpoch: 2}
	must(t, r.leader.MakeLeader(st, 1))
	r.produce(1)
	if _, err := r.leader.DeleteRecordsBefore(3); err != nil {
		t.Fatal(err)
	}
	r.round() // out of range: restart at 3
	r.round() // the batch 0-3: restart at 0 and append it
	r.round()
	if _, leo, _ := r.follower.Offsets(); leo != 5 {
		t.Fatalf("follower LEO %d, want 5", leo)
	}
	if _, _, start := r.follower.Offsets(); start != 3 {
		t.Fatalf("follower log start %d, want the leader's 3", start)
	}
}

// A truncation inside the batch that holds the log start (which lies
// inside it after DeleteRecords) drops the batch whole; the log restarts at
// its log start rather than end below it (storage.Log would leave the log
// end below the log start).
func TestFollowerTruncationInsideTheLogStartBatchKeepsTheLog(t *testing.T) {
	clock := testsupport.NewClock(time.Unix(1000, 0))
	for name, log := range map[string]ReplicaLog{"storage": newTestReplica(t, 2, clock).p.log, "memlog": newMemLog(memLogConfig{})} {
		t.Run(name, func(t *testing.T) {
			p := memPartition(2, clock, log)
			st := PartitionState{Topic: "t", TopicID: rigTopicID, Replicas: []int32{1, 2}, ISR: []int32{1, 2}, Leader: 1, LeaderEpoch: 1, PartitionEpoch: 1}
			if _, err := p.MakeFollower(st); err != nil {
				t.Fatal(err)
			}
			must(t, p.AppendAsFollower(1, leaderBatch(0, 4), 4, 2)) // offsets 0-3; log start 2 follows the leader's
			if _, _, start := p.Offsets(); start != 2 {
				t.Fatalf("log start %d, want 2", start)
			}
			must(t, p.TruncateTo(1, 3))
			if hw, leo, start := p.Offsets(); leo < start || hw < start {
				t.Fatalf("HW %d, LEO %d below the log start %d", hw, leo, start)
			}
		})
	}
}

// A partition error backs off that partition only, for metadataLagBackoff
// when the leader is a step behind (NOT_LEADER), on the injected clock.
func TestFetcherBacksOffAPartitionOnTheInjectedClock(t *testing.T) {
	r := newFetcherRig(t)
	r.leader = memPartition(1, r.clock, newMemLog(memLogConfig{})) // a broker 1 that does not lead yet
	r.round()
	if _, ok := r.f.nextRound(); ok {
		t.Fatal("a round right after NOT_LEADER: the partition did not back off")
	}
	if d := r.f.nextDelay(); d != metadataLagBackoff {
		t.Fatalf("next delay %v, want %v", d, metadataLagBackoff)
	}
	r.clock.Advance(metadataLagBackoff)
	if _, ok := r.f.nextRound(); !ok {
		t.Fatal("no round after the backoff")
	}
}

func TestFetcherWaitsABackoffAfterAFailedSend(t *testing.T) {
	r := newFetcherRig(t)
	r.client.down = func() bool { return true }
	if wait := r.round(); wait != time.Second {
		t.Fatalf("wait %v after a failed send, want the backoff", wait)
	}
}

// A partition that no longer follows this fetcher's leader leaves it; the
// fetcher is then idle.
func TestFetcherDropsPartitionsOfAnotherLeader(t *testing.T) {
	r := newFetcherRig(t)
	st := PartitionState{Topic: "t", TopicID: rigTopicID, Replicas: []int32{1, 2, 3}, ISR: []int32{2, 3}, Leader: 3, LeaderEpoch: 2, PartitionEpoch: 2}
	if _, err := r.follower.MakeFollower(st); err != nil {
		t.Fatal(err)
	}
	if _, ok := r.f.nextRound(); ok {
		t.Fatal("a round for a partition following broker 3")
	}
	if !r.f.idle() {
		t.Fatal("the fetcher kept the partition")
	}
}

// A response cut by the leader's byte limit in the middle of a batch: only
// whole batches are appended.
func TestFetcherAppendsOnlyWholeBatches(t *testing.T) {
	r := newFetcherRig(t)
	r.produce(1)
	r.produce(1)
	rd, _ := r.f.nextRound()
	resp, _ := r.client.Fetch(context.Background(), rd.req)
	data := resp.Topics[0].Partitions[0].RecordBatches
	resp.Topics[0].Partitions[0].RecordBatches = data[:len(data)-5]
	r.f.complete(rd, resp, nil)
	if _, leo, _ := r.follower.Offsets(); leo != 1 {
		t.Fatalf("follower LEO %d, want 1 (the whole first batch only)", leo)
	}
}

// The loop: rounds until its context ends, then closes the connection.
func TestFetcherRunStopsAndClosesItsClient(t *testing.T) {
	r := newFetcherRig(t)
	r.produce(2)
	go r.f.run()
	waitFor(t, func() bool { _, leo, _ := r.follower.Offsets(); return leo == 2 })
	r.f.stop()
	if !r.client.isClosed() {
		t.Fatal("the client is still open")
	}
}

// A fetcher whose last partition left retires and closes its connection
// instead of waking every backoff (the manager then drops it).
func TestFetcherWithoutPartitionsRetires(t *testing.T) {
	r := newFetcherRig(t)
	retired := make(chan struct{})
	r.f.retire = func(*fetcher) bool { close(retired); return true }
	go r.f.run()
	r.f.remove(r.follower)
	<-retired
	<-r.f.done
	if !r.client.isClosed() {
		t.Fatal("a retired fetcher kept its connection")
	}
}

func TestMetadataLagErrors(t *testing.T) {
	for _, err := range []error{kerr.UnknownLeaderEpoch, kerr.NotLeaderForPartition, kerr.UnknownTopicOrPartition, kerr.UnknownTopicID} {
		if !metadataLag(err) {
			t.Errorf("%v is metadata lag", err)
		}
	}
	if metadataLag(kerr.FencedLeaderEpoch) {
		t.Error("FENCED_LEADER_EPOCH is not metadata lag: our epoch is the stale one")
	}
}

// A round in an established session whose partitions and their states are
// last round's lists nothing (and builds nothing over its partitions); an
// answer carrying one of them is handled all the same, and the partition
// is listed again once its state moved.
func TestFetcherIdleRoundListsNothing(t *testing.T) {
	r := newFetcherRig(t)
	r.produce(2)
	rd, _ := r.f.nextRound()
	resp, _ := r.client.Fetch(context.Background(), rd.req)
	resp.SessionID = 7 // the leader made a session
	r.f.complete(rd, resp, nil)
	moved, _ := r.f.nextRound()
	if got := listed(moved.req); moved.req.SessionID != 7 || moved.req.SessionEpoch != 1 || len(got) != 1 ||
		moved.req.Topics[0].Partitions[0].FetchOffset != 2 {
		t.Fatalf("after an append: session %d epoch %d parts %v", moved.req.SessionID, moved.req.SessionEpoch, got)
	}
	empty := kmsg.NewPtrFetchResponse()
	empty.SessionID = 7
	r.f.complete(moved, empty, nil)
	idle, _ := r.f.nextRound()
	if got := listed(idle.req); idle.req.SessionEpoch != 2 || len(got) != 0 || len(idle.req.ForgottenTopics) != 0 {
		t.Fatalf("idle round: epoch %d parts %v forgotten %v", idle.req.SessionEpoch, got, idle.req.ForgottenTopics)
	}
	// The leader answers the unlisted partition (its session has it).
	r.produce(1)
	data := fetchOverWire(r.leader, moved.req)
	data.SessionID = 7
	r.f.complete(idle, data, nil)
	if _, leo, _ := r.follower.Offsets(); leo != 3 {
		t.Fatalf("follower LEO %d after the idle round's answer, want 3", leo)
	}
	next, _ := r.f.nextRound()
	if got := listed(next.req); len(got) != 1 || next.req.Topics[0].Partitions[0].FetchOffset != 3 || next.req.SessionEpoch != 3 {
		t.Fatalf("after the answer: epoch %d parts %v", next.req.SessionEpoch, got)
	}
}

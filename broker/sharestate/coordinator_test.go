package sharestate

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The life of a share-partition's state: initialize, the leader reads it,
// writes acknowledgements, and a new coordinator replays the same state.
func TestStateLifecycle(t *testing.T) {
	e := newEnv(t, nil)
	if code := e.initialize("g", topicA, 0, 1, -1); code != 0 {
		t.Fatalf("initialize: %d", code)
	}
	rp := e.read("g", topicA, 0, 0)
	if rp.ErrorCode != 0 || rp.StartOffset != -1 || rp.StateEpoch != 1 || len(rp.StateBatches) != 0 {
		t.Fatalf("read after initialize: %+v", rp)
	}
	// The leader (epoch 4) settles on start offset 0 and writes as records are acknowledged.
	if rp = e.read("g", topicA, 0, 4); rp.ErrorCode != 0 {
		t.Fatalf("read: %+v", rp)
	}
	steps := []struct {
		start   int64
		batches []StateBatch
	}{
		{0, []StateBatch{sb(0, 4, ac, 1), sb(5, 9, av, 1)}},
		{5, []StateBatch{sb(5, 6, ac, 1)}},
		{7, []StateBatch{sb(7, 9, ar, 2)}},
		{10, nil},
		{10, []StateBatch{sb(10, 19, av, 1)}},
	}
	for i, s := range steps {
		if code := e.write("g", topicA, 0, 1, 4, s.start, s.batches...); code != 0 {
			t.Fatalf("write %d: %d", i, code)
		}
	}
	want := []StateBatch{sb(10, 19, av, 1)}
	rp = e.read("g", topicA, 0, 4)
	if rp.StartOffset != 10 || !reflect.DeepEqual(batchesOf(rp), want) {
		t.Fatalf("state %d %v", rp.StartOffset, batchesOf(rp))
	}
	e.reload()
	rp = e.read("g", topicA, 0, 4)
	if rp.ErrorCode != 0 || rp.StartOffset != 10 || rp.StateEpoch != 1 || !reflect.DeepEqual(batchesOf(rp), want) {
		t.Fatalf("after reload: %+v", rp)
	}
	if sum := e.summary("g", topicA, 0); sum.StartOffset != 10 || sum.LeaderEpoch != 4 || sum.StateEpoch != 1 {
		t.Fatalf("summary %+v", sum)
	}
}

// Every UpdatesPerSnapshot (3 here) updates the next write is a snapshot.
func TestSnapshotEveryNUpdates(t *testing.T) {
	e := newEnv(t, nil)
	e.initialize("g", topicA, 0, 0, -1)
	for i := range 9 {
		if code := e.write("g", topicA, 0, 0, 0, int64(i), sb(int64(i), int64(i), ac, 1)); code != 0 {
			t.Fatal(code)
		}
	}
	var kinds []int16
	for r := range e.log.all() {
		typ, _, _ := decodeKey(r.Key)
		kinds = append(kinds, typ)
	}
	// The initialization's snapshot, then the nine writes.
	want := []int16{typeSnapshot, typeUpdate, typeUpdate, typeUpdate, typeSnapshot, typeUpdate, typeUpdate, typeUpdate, typeSnapshot, typeUpdate}
	if !reflect.DeepEqual(kinds, want) {
		t.Fatalf("record types %v, want %v", kinds, want)
	}
}

// Fencing as Kafka's ShareCoordinatorShardTest: stale leader and state
// epochs are refused and nothing is written.
func TestFencing(t *testing.T) {
	e := newEnv(t, nil)
	e.initialize("g", topicA, 0, 5, 0)
	if code := e.write("g", topicA, 0, 5, 3, 0); code != 0 {
		t.Fatal(code)
	}
	n := e.log.Len()
	if code := e.write("g", topicA, 0, 5, 2, 0, sb(0, 0, ac, 1)); code != kerr.FencedLeaderEpoch.Code {
		t.Fatalf("stale leader write: %d", code)
	}
	if code := e.write("g", topicA, 0, 4, 3, 0, sb(0, 0, ac, 1)); code != kerr.FencedStateEpoch.Code {
		t.Fatalf("stale state write: %d", code)
	}
	if rp := e.read("g", topicA, 0, 2); rp.ErrorCode != kerr.FencedLeaderEpoch.Code {
		t.Fatalf("stale leader read: %+v", rp)
	}
	if code := e.initialize("g", topicA, 0, 4, 0); code != kerr.FencedStateEpoch.Code {
		t.Fatalf("stale initialize: %d", code)
	}
	if e.log.Len() != n {
		t.Fatal("a fenced request wrote")
	}
	// A new leader's read records its epoch, fencing the old leader's writes.
	if rp := e.read("g", topicA, 0, 9); rp.ErrorCode != 0 {
		t.Fatal(rp.ErrorCode)
	}
	if code := e.write("g", topicA, 0, 5, 3, 0); code != kerr.FencedLeaderEpoch.Code {
		t.Fatalf("old leader after new leader read: %d", code)
	}
	e.reload()
	if code := e.write("g", topicA, 0, 5, 8, 0); code != kerr.FencedLeaderEpoch.Code {
		t.Fatalf("leader epoch not durable: %d", code)
	}
}

func TestRequestErrors(t *testing.T) {
	e := newEnv(t, func(o *Options) {
		o.PartitionExists = func(id [16]byte, p int32) bool { return id == topicA && p < 2 }
	})
	if code := e.write("", topicA, 0, 0, 0, 0); code != kerr.InvalidGroupID.Code {
		t.Fatalf("empty group: %d", code)
	}
	if code := e.write("g", topicA, -1, 0, 0, 0); code != kerr.InvalidRequest.Code {
		t.Fatalf("negative partition: %d", code)
	}
	if code := e.write("g", topicA, 2, 0, 0, 0); code != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("unknown partition: %d", code)
	}
	if rp := e.read("g", topicB, 0, 0); rp.ErrorCode != kerr.UnknownTopicOrPartition.Code || rp.StartOffset != -1 {
		t.Fatalf("unknown topic read: %+v", rp)
	}
	if code := e.delete("g", topicA, 0); code != 0 || e.log.Len() != 0 {
		t.Fatalf("delete of nothing: %d, %d records", code, e.log.Len())
	}
	e.c.Resign(0)
	if code := e.write("g", topicA, 0, 0, 0, 0); code != kerr.NotCoordinator.Code {
		t.Fatalf("not led: %d", code)
	}
}

// A failed append leaves the state as it was and answers the mapped code.
func TestAppendFailure(t *testing.T) {
	e := newEnv(t, nil)
	e.initialize("g", topicA, 0, 0, -1)
	e.write("g", topicA, 0, 0, 0, 0, sb(0, 9, av, 1))
	for _, c := range []struct {
		err  error
		want int16
	}{
		{kerr.NotEnoughReplicas, kerr.CoordinatorNotAvailable.Code},
		{kerr.NotLeaderForPartition, kerr.NotCoordinator.Code},
		{errDisk, kerr.CoordinatorNotAvailable.Code},
		{kerr.MessageTooLarge, kerr.UnknownServerError.Code},
	} {
		e.log.FailNext(c.err)
		if code := e.write("g", topicA, 0, 0, 0, 5, sb(5, 9, ac, 1)); code != c.want {
			t.Fatalf("%v: code %d, want %d", c.err, code, c.want)
		}
		if rp := e.read("g", topicA, 0, 0); rp.StartOffset != 0 || !reflect.DeepEqual(batchesOf(rp), []StateBatch{sb(0, 9, av, 1)}) {
			t.Fatalf("%v: state changed: %+v", c.err, rp)
		}
	}
}

func TestDeleteState(t *testing.T) {
	e := newEnv(t, nil)
	e.initialize("g", topicA, 0, 1, 5)
	if code := e.delete("g", topicA, 0); code != 0 {
		t.Fatal(code)
	}
	// Deleted is uninitialized: reads and writes are refused (KAFKA-19338).
	if rp := e.read("g", topicA, 0, 0); rp.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("after delete: %+v", rp)
	}
	if code := e.write("g", topicA, 0, 1, 0, 5); code != kerr.InvalidRequest.Code {
		t.Fatalf("write after delete: %d", code)
	}
	if sum := e.summary("g", topicA, 0); sum.ErrorCode != 0 || sum.StartOffset != -1 {
		t.Fatalf("summary after delete: %+v", sum)
	}
	e.reload()
	if rp := e.read("g", topicA, 0, 0); rp.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("delete not durable: %+v", rp)
	}
	// Deleted state takes any epochs again.
	if code := e.initialize("g", topicA, 0, 0, 3); code != 0 {
		t.Fatal(code)
	}
}

// Partitions loading answer COORDINATOR_LOAD_IN_PROGRESS; a corrupt record
// is skipped, not fatal.
func TestLoading(t *testing.T) {
	clockless := Options{NumPartitions: 1}
	c := NewCoordinator(clockless)
	defer c.Close()
	log := &memLog{}
	release := make(chan struct{})
	loaded := make(chan error, 1)
	good := sampleRecords()[0]
	records := func(yield func(LoggedRecord, error) bool) {
		if !yield(LoggedRecord{Offset: 0, Record: Record{Key: good.Key, Value: []byte{0, 0, 1}}}, nil) {
			return
		}
		<-release
		yield(LoggedRecord{Offset: 1, Record: good}, nil)
	}
	go func() { loaded <- c.BecomeLeader(0, log, records) }()
	req := kmsg.NewPtrReadShareGroupStateSummaryRequest()
	req.GroupID = "g"
	rt := kmsg.NewReadShareGroupStateSummaryRequestTopic()
	rt.TopicID = [16]byte{1, 2, 3}
	rt.Partitions = []kmsg.ReadShareGroupStateSummaryRequestTopicPartition{{Partition: 7}}
	req.Topics = append(req.Topics, rt)
	deadline := time.Now().Add(5 * time.Second)
	for {
		code := c.ReadShareGroupStateSummary(context.Background(), req).Topics[0].Partitions[0].ErrorCode
		if code == kerr.CoordinatorLoadInProgress.Code {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("never loading: %d", code)
		}
	}
	close(release)
	if err := <-loaded; err != nil {
		t.Fatal(err)
	}
	p := c.ReadShareGroupStateSummary(context.Background(), req).Topics[0].Partitions[0]
	if p.ErrorCode != 0 || p.StartOffset != 100 || p.DeliveryCompleteCount != 5 {
		t.Fatalf("loaded: %+v", p)
	}
}

// Resign cancels an append in flight; its caller gets NOT_COORDINATOR.
func TestResignCancelsAppend(t *testing.T) {
	e := newEnv(t, nil)
	e.initialize("g", topicA, 0, 0, -1)
	entered, release := e.log.Block()
	defer release()
	got := make(chan int16, 1)
	go func() { got <- e.write("g", topicA, 0, 0, 0, 0) }()
	<-entered // the append is in flight
	e.c.Resign(0)
	if code := <-got; code != kerr.NotCoordinator.Code {
		t.Fatalf("code %d", code)
	}
}

// Pruning deletes what no key needs; cold snapshots let idle keys move on.
func TestPrune(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.UpdatesPerSnapshot = 1000 })
	e.clock.Advance(time.Minute)                      // the prune timer fires at 5m, 10m, ...
	e.initialize("g", topicA, 0, 0, 0)                // snapshot at 0
	e.write("g", topicA, 0, 0, 0, 0, sb(0, 9, av, 1)) // update at 1
	for i := range 4 {
		e.write("g", topicA, 0, 0, 0, int64(i+1), sb(int64(i), int64(i), ac, 1)) // updates at 2..5
	}
	e.initialize("g", topicB, 0, 0, 0) // snapshot of another key at 6
	if e.log.Len() != 7 {
		t.Fatalf("%d records", e.log.Len())
	}
	// At the first round (5m) the keys have been idle for 4 minutes only:
	// nothing is cold, and the oldest snapshot (0) holds the log.
	e.clock.Advance(4 * time.Minute)
	if e.log.LogStart() != 0 {
		t.Fatalf("pruned to %d too early", e.log.LogStart())
	}
	want := []StateBatch{sb(4, 9, av, 1)}
	// At 10m both keys are cold: they are snapshotted again at 7 and 8 and
	// everything before 7 goes.
	e.clock.Advance(5 * time.Minute)
	if e.log.LogStart() != 7 || e.log.Len() != 2 {
		t.Fatalf("log start %d, %d records", e.log.LogStart(), e.log.Len())
	}
	e.reload()
	if rp := e.read("g", topicA, 0, 0); rp.StartOffset != 4 || !reflect.DeepEqual(batchesOf(rp), want) {
		t.Fatalf("after prune and reload: %+v", rp)
	}
	// A quiet partition is not rewritten again.
	e.clock.Advance(10 * time.Minute)
	if e.log.Len() != 2 {
		t.Fatalf("quiet keys rewritten: %d records", e.log.Len())
	}
}

// Concurrent writers on many keys and on one key (race detector); the
// final state equals a replay.
func TestConcurrentWrites(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.NumPartitions = 1 })
	for g := range 4 {
		e.initialize(fmt.Sprintf("g%d", g), topicA, 0, 0, -1)
	}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				group := fmt.Sprintf("g%d", w%4)
				off := int64(i)
				if code := e.write(group, topicA, 0, 0, 0, -1, sb(off, off, ac, int16(1+w%2))); code != 0 {
					t.Errorf("write: %d", code)
					return
				}
				e.summary(group, topicA, 0)
			}
		}()
	}
	wg.Wait()
	before := make(map[string][]StateBatch)
	for g := range 4 {
		before[fmt.Sprint(g)] = batchesOf(e.read(fmt.Sprintf("g%d", g), topicA, 0, 0))
	}
	e.reload()
	for g := range 4 {
		if got := batchesOf(e.read(fmt.Sprintf("g%d", g), topicA, 0, 0)); !reflect.DeepEqual(got, before[fmt.Sprint(g)]) {
			t.Fatalf("group %d: replay %v, served %v", g, got, before[fmt.Sprint(g)])
		}
	}
	if got := before["0"]; !reflect.DeepEqual(got, []StateBatch{sb(0, 49, ac, 2)}) && !reflect.DeepEqual(got, []StateBatch{sb(0, 49, ac, 1)}) {
		// w=0 and w=4 write count 1, so group 0 holds count 1 everywhere.
		t.Fatalf("group 0 state %v", got)
	}
}

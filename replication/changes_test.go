package replication

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/kbroker/kbroker/internal/testsupport"
	"github.com/kbroker/kbroker/storage"
)

// idleFetcher is a fetcher of broker 2 holding n partitions that follow
// broker 1 at epoch 1, on in-memory logs, nothing sent anywhere: rounds are
// built with duePartitions only.
func idleFetcher(t *testing.T, n int) (*fetcher, []*Partition, *fakeClock) {
	t.Helper()
	clock := testsupport.NewClock(time.Unix(1000, 0))
	f := newFetcher(fetcherConfig{parent: context.Background(), leader: 1, localID: 2,
		opts: FetcherOptions{Backoff: time.Second}, client: &directClient{}, now: clock.Now,
		after: (&fakeTimers{clock: clock}).After, logger: slog.New(slog.DiscardHandler), retire: func(*fetcher) bool { return true }})
	ps := make([]*Partition, n)
	for i := range ps {
		ps[i] = NewPartition("t", int32(i), newMemLog(memLogConfig{}), PartitionOptions{LocalID: 2, Now: clock.Now})
		st := PartitionState{Topic: "t", Partition: int32(i), TopicID: rigTopicID, Replicas: []int32{1, 2}, ISR: []int32{1, 2},
			Leader: 1, LeaderEpoch: 1, PartitionEpoch: 1}
		if _, err := ps[i].MakeFollower(st); err != nil {
			t.Fatal(err)
		}
		f.add(ps[i])
	}
	return f, ps, clock
}

// round builds one round's partitions and returns how many partitions it
// checked, whether it reports a change, and the due partitions.
func checkRound(f *fetcher) (checked int, changed bool, due []sent) {
	before := f.checked
	due, changed = f.duePartitions()
	return f.checked - before, changed, due
}

// An idle round of a fetcher checks none of its partitions: only those
// that told it of a change (a truncation, a log start move, a role change),
// the ones backing off, and all of them once per fullCheckInterval.
func TestFetcherIdleRoundChecksOnlyChangedPartitions(t *testing.T) {
	const n = 200
	f, ps, clock := idleFetcher(t, n)
	if checked, changed, due := checkRound(f); checked != n || !changed || len(due) != n {
		t.Fatalf("first round: checked %d, changed %v, %d due; want %d, true, %d", checked, changed, len(due), n, n)
	}
	for range 3 {
		if checked, changed, due := checkRound(f); checked != 0 || changed || len(due) != n {
			t.Fatalf("idle round: checked %d, changed %v, %d due; want 0, false, %d", checked, changed, len(due), n)
		}
	}
	// A reset moves one fetch offset: that partition alone is checked, and
	// the round carries its new state.
	if err := ps[7].ResetTo(1, 5); err != nil {
		t.Fatal(err)
	}
	checked, changed, due := checkRound(f)
	if checked != 1 || !changed || len(due) != n {
		t.Fatalf("after a reset: checked %d, changed %v, %d due; want 1, true, %d", checked, changed, len(due), n)
	}
	if st := stateOf(due, ps[7]); st.FetchOffset != 5 {
		t.Fatalf("reset partition's fetch offset %d, want 5", st.FetchOffset)
	}
	if checked, changed, _ := checkRound(f); checked != 0 || changed {
		t.Fatalf("idle round after the reset: checked %d, changed %v", checked, changed)
	}
	// A log start move (a follower following its leader's).
	if err := ps[9].AppendAsFollower(1, nil, 0, 0); err != nil {
		t.Fatal(err)
	}
	if err := ps[9].ResetTo(1, 10); err != nil {
		t.Fatal(err)
	}
	checkRound(f)
	if err := ps[9].AppendAsFollower(1, nil, 10, 10); err != nil {
		t.Fatal(err)
	}
	if checked, _, _ := checkRound(f); checked != 0 {
		// The log start did not move: 10 is already the start. Nothing told.
		t.Fatalf("checked %d after an append that moved nothing, want 0", checked)
	}
	// A partition that becomes the leader leaves the fetcher.
	if err := ps[3].MakeLeader(PartitionState{Topic: "t", Partition: 3, TopicID: rigTopicID, Replicas: []int32{1, 2}, ISR: []int32{1, 2},
		Leader: 2, LeaderEpoch: 2, PartitionEpoch: 2}, 1); err != nil {
		t.Fatal(err)
	}
	if checked, changed, due := checkRound(f); checked != 1 || !changed || len(due) != n-1 {
		t.Fatalf("after a role change: checked %d, changed %v, %d due; want 1, true, %d", checked, changed, len(due), n-1)
	}
	// A partition backing off is checked each round until it is due again.
	f.backoff(ps[11], errUnreachable)
	for range 2 {
		if checked, _, due := checkRound(f); checked < 1 || len(due) != n-2 {
			t.Fatalf("backing off: checked %d, %d due; want >= 1, %d", checked, len(due), n-2)
		}
	}
	clock.Advance(time.Second)
	if checked, changed, due := checkRound(f); checked == 0 || !changed || len(due) != n-1 {
		t.Fatalf("backoff over: checked %d, changed %v, %d due; want >0, true, %d", checked, changed, len(due), n-1)
	}
	if checked, _, _ := checkRound(f); checked != 0 {
		t.Fatalf("idle round after the backoff: checked %d, want 0", checked)
	}
	// The guard: every partition once per fullCheckInterval.
	clock.Advance(fullCheckInterval)
	if checked, changed, _ := checkRound(f); checked != n-1 || changed {
		t.Fatalf("full check: checked %d, changed %v; want %d, false", checked, changed, n-1)
	}
}

func stateOf(due []sent, p *Partition) FollowerFetchState {
	for _, s := range due {
		if s.p == p {
			return s.state
		}
	}
	return FollowerFetchState{FetchOffset: -1}
}

// A follower's fetched records reach the next round, which checks only
// that partition (the append told the fetcher).
func TestFetcherAppendTellsTheNextRound(t *testing.T) {
	r := newFetcherRig(t)
	r.round()
	before := r.f.checked
	r.f.duePartitions()
	if got := r.f.checked - before; got != 0 {
		t.Fatalf("idle round checked %d partitions, want 0", got)
	}
	r.produce(3)
	r.round() // appends the 3 records; the HW follows next round
	before = r.f.checked
	due, changed := r.f.duePartitions()
	if got := r.f.checked - before; got != 1 || !changed || len(due) != 1 || due[0].state.FetchOffset != 3 {
		t.Fatalf("after an append: checked %d, changed %v, due %+v; want 1, true, fetch offset 3", got, changed, due)
	}
}

// The leader's side: a follower session learns which of its idle marks
// may have changed (FollowerSession.Changed) from the partitions, for an
// append, an HW move, a state change, a log start move and a release by
// the partition, and of none while nothing happens.
func TestFollowerSessionToldOfChangedMarks(t *testing.T) {
	r := newIdleRig(t)
	r.follower3()
	r.fetch()
	if r.mark == nil {
		t.Fatal("no mark")
	}
	changed := func() []*IdleMark { return r.s.Changed(nil) }
	changed() // the first read's
	for range 3 {
		if !r.fetch() {
			t.Fatal("an unchanged idle partition was read")
		}
		if got := changed(); len(got) != 0 {
			t.Fatalf("idle: %d marks told changed, want 0", len(got))
		}
	}
	expectTold := func(what string) {
		t.Helper()
		got := changed()
		if len(got) == 0 || got[0] != r.mark {
			t.Fatalf("%s: marks told %v, want the session's %p", what, got, r.mark)
		}
		if r.fetch() {
			t.Fatalf("%s: skipped", what)
		}
		changed()
		if !r.fetch() {
			t.Fatalf("%s: not skipped once marked again", what)
		}
	}
	if _, err := r.l.p.AppendAsLeader(batch(2), 1, storage.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	expectTold("append")
	r.follower3() // the HW moves
	expectTold("HW move")
	r.l.p.mu.Lock()
	r.l.p.bumpVersionLocked()
	r.l.p.mu.Unlock()
	expectTold("state change")
	if _, err := r.l.p.DeleteRecordsBefore(1); err != nil {
		t.Fatal(err)
	}
	expectTold("log start move")
	// The follower's fetch observed through another session (none here)
	// releases the session's mark.
	_, leo, _ := r.l.p.Offsets()
	if _, err := r.l.p.UpdateFollowerAndRead(FollowerFetch{ReplicaID: 2, FetchOffset: leo, CurrentLeaderEpoch: 1, LastFetchedEpoch: -1, MaxBytes: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	if got := changed(); len(got) == 0 || got[0] != r.mark || r.mark.Unchanged() {
		t.Fatalf("release by the partition: told %v, unchanged %v", got, r.mark.Unchanged())
	}
}

// Retention moves a storage log's start offset in storage's own loop, with
// no partition call: the log's listener tells the partition's listeners.
func TestRetentionLogStartMoveIsTold(t *testing.T) {
	clock := testsupport.NewClock(time.Unix(1000, 0))
	cfg := storage.DefaultLogConfig()
	cfg.SegmentBytes = 200
	cfg.RetentionBytes = 1
	log, err := storage.OpenLog(filepath.Join(t.TempDir(), "t-0"), cfg, storage.LogState{},
		storage.LogOptions{Now: clock.Now, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { log.Close() })
	p := NewPartition("t", 0, log, PartitionOptions{LocalID: 1, Now: clock.Now})
	must(t, p.MakeLeader(PartitionState{Topic: "t", Replicas: []int32{1}, ISR: []int32{1}, Leader: 1, LeaderEpoch: 1, PartitionEpoch: 1}, 1))
	for range 5 {
		if _, err := p.AppendAsLeader(batch(5), 1, storage.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var told changeSet
	p.WatchOn(&Waiter{C: make(chan struct{}, 1), onChange: told.add})
	if n, err := log.DeleteOldSegments(clock.Now()); err != nil || n == 0 {
		t.Fatalf("retention deleted %d segments (%v), want some", n, err)
	}
	if got := told.take(nil); len(got) != 1 || got[0] != p {
		t.Fatalf("told %v after retention, want the partition", got)
	}
}

// A change made between a mark's read of the partition and its
// registration with the session tells no one: the mark is checked once
// registered (FollowerSession.recheck) and told changed if it is.
func TestIdleMarkRecheckedOnceRegistered(t *testing.T) {
	r := newIdleRig(t)
	r.follower3()
	r.fetch()
	r.s.Changed(nil)
	r.s.recheck(r.mark)
	if got := r.s.Changed(nil); len(got) != 0 {
		t.Fatalf("unchanged mark told changed: %v", got)
	}
	// An append straight to the log: the partition tells no listener.
	if _, err := r.l.p.Log().AppendAsLeader(batch(1), 1, storage.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := r.s.Changed(nil); len(got) != 0 {
		t.Fatalf("told %v of an append the partition never saw", got)
	}
	r.s.recheck(r.mark)
	if got := r.s.Changed(nil); len(got) != 1 || got[0] != r.mark {
		t.Fatalf("recheck told %v, want the moved mark", got)
	}
}

package replication

import (
	"math"
	"testing"
	"time"

	"github.com/kbroker/kbroker/internal/sampled"
	"github.com/kbroker/kbroker/internal/testsupport"
)

func TestParseThrottledReplicas(t *testing.T) {
	cases := []struct {
		list []string
		want ThrottledPartitions
	}{
		{nil, ThrottledPartitions{}},
		{[]string{"*"}, ThrottledPartitions{All: true}},
		{[]string{"0:1", "0:2", "1:2", " 3 : 2 ", "1:2", "bad", "4:x"}, ThrottledPartitions{Partitions: []int32{0, 1, 3}}},
		{[]string{"0:1"}, ThrottledPartitions{}},
	}
	for _, tc := range cases {
		got := ParseThrottledReplicas(tc.list, 2)
		if got.All != tc.want.All || len(got.Partitions) != len(tc.want.Partitions) {
			t.Fatalf("%q: %+v, want %+v", tc.list, got, tc.want)
		}
		for i := range got.Partitions {
			if got.Partitions[i] != tc.want.Partitions[i] {
				t.Fatalf("%q: %+v, want %+v", tc.list, got, tc.want)
			}
		}
	}
}

// A side's quota: exceeded once the throttled traffic's SimpleRate passes
// the bound; in-sync replicas and unlisted partitions are never held back.
func TestReplicaQuota(t *testing.T) {
	clock := testsupport.NewClock(time.Unix(1000, 0))
	q := NewReplicaQuota(sampled.Config{Samples: 11, Window: time.Second}, clock.Now)
	q.SetThrottled(map[string]ThrottledPartitions{"t": {Partitions: []int32{0}}})
	q.Record(10 << 20)
	if q.IsQuotaExceeded() {
		t.Fatal("exceeded without a rate")
	}
	q.SetRate(2 << 20)
	if !q.ShouldThrottle("t", 0, false) {
		t.Fatal("10 MB in the first window is not above 2 MB/s")
	}
	if q.ShouldThrottle("t", 0, true) || q.ShouldThrottle("t", 1, false) || q.ShouldThrottle("u", 0, false) {
		t.Fatal("an in-sync replica or an unlisted partition was throttled")
	}
	clock.Advance(5 * time.Second)
	if q.IsQuotaExceeded() {
		rate, _ := q.Stats()
		t.Fatalf("10 MB over 5 s is exactly 2 MB/s, not above: rate %v", rate)
	}
	q.SetRate(math.MaxInt64)
	if _, bound := q.Stats(); !math.IsInf(bound, 1) {
		t.Fatal("Long.MAX_VALUE is not unbounded")
	}
	var none *ReplicaQuota
	if none.ShouldThrottle("t", 0, false) {
		t.Fatal("nil quota throttles")
	}
}

// The follower side in the fetcher: an out-of-sync throttled partition
// sits out rounds while the rate is exceeded; an in-sync one (lag 0: its
// log end reached the leader's HW of its last fetch) never does.
func TestFetcherFollowerThrottle(t *testing.T) {
	r := newFetcherRig(t)
	q := NewReplicaQuota(sampled.Config{Samples: 11, Window: time.Second}, r.clock.Now)
	q.SetThrottled(map[string]ThrottledPartitions{"t": {All: true}})
	q.SetRate(1) // one byte per second: the first fetch exceeds it
	r.f.opts.Throttle = q
	r.produce(50)
	r.round() // before any fetch the lag is unknown (-1), but nothing is measured yet
	if rate, _ := q.Stats(); rate <= 1 {
		t.Fatalf("follower rate %v after a fetch of 50 records", rate)
	}
	lag := func() int64 {
		r.f.mu.Lock()
		defer r.f.mu.Unlock()
		return r.f.partitions[r.follower].lag
	}
	// The leader's HW in that answer was 0, below our new log end: caught up.
	if got := lag(); got != 0 {
		t.Fatalf("lag %d after fetching the whole log", got)
	}
	if _, ok := r.f.nextRound(); !ok {
		t.Fatal("an in-sync partition was throttled")
	}
	// A replica behind the leader's HW (a reassignment's new replica).
	r.f.fetched(r.follower, 0, 80)
	if got := lag(); got != 30 {
		t.Fatalf("lag %d, want HW 80 - log end 50", got)
	}
	if _, ok := r.f.nextRound(); ok {
		t.Fatal("a throttled out-of-sync partition was fetched")
	}
	// The rate falls back below the bound: fetched again.
	r.clock.Advance(time.Hour)
	if _, ok := r.f.nextRound(); !ok {
		t.Fatal("still throttled after the rate fell")
	}
}

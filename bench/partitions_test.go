package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestPartitionLayout(t *testing.T) {
	for _, c := range []struct {
		total, per int
		want       []int
	}{{1000, 100, []int{100, 100, 100, 100, 100, 100, 100, 100, 100, 100}}, {250, 100, []int{100, 100, 50}}, {30, 100, []int{30}}} {
		specs := partitionLayout(c.total, c.per)
		var got []int
		names := map[string]bool{}
		for _, s := range specs {
			got = append(got, s.partitions)
			names[s.name] = true
		}
		if len(names) != len(specs) || !equalInts(got, c.want) {
			t.Errorf("partitionLayout(%d, %d) = %v (%d names), want %v", c.total, c.per, got, len(names), c.want)
		}
	}
	if n := len(partitionLayout(10000, 100)); n != 100 {
		t.Fatalf("10,000 partitions make %d topics, want 100 (issue 20: 100 x 100)", n)
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func mdPartition(id, leader int32, replicas, isr []int32, offline ...int32) kmsg.MetadataResponseTopicPartition {
	p := kmsg.NewMetadataResponseTopicPartition()
	p.Partition, p.Leader, p.Replicas, p.ISR, p.OfflineReplicas = id, leader, replicas, isr, offline
	return p
}

func mdTopic(name string, errCode int16, ps ...kmsg.MetadataResponseTopicPartition) kmsg.MetadataResponseTopic {
	t := kmsg.NewMetadataResponseTopic()
	t.Topic, t.ErrorCode, t.Partitions = kmsg.StringPtr(name), errCode, ps
	return t
}

// testMetadata: topic a has one ready partition, one with a short ISR and
// an offline replica, one without a leader; b is still unknown; c is not
// wanted.
func testMetadata() *kmsg.MetadataResponse {
	md := kmsg.NewPtrMetadataResponse()
	all := []int32{1, 2, 3}
	md.Topics = []kmsg.MetadataResponseTopic{
		mdTopic("a", 0, mdPartition(0, 1, all, all), mdPartition(1, 2, all, []int32{2, 1}, 3), mdPartition(2, -1, all, nil)),
		mdTopic("b", 3),
		mdTopic("c", 0, mdPartition(0, 1, all, all)),
	}
	md.Topics[0].Partitions[2].ErrorCode = 5 // LEADER_NOT_AVAILABLE
	return md
}

func TestCountReady(t *testing.T) {
	got := countReady(testMetadata(), map[string]int{"a": 3, "b": 2}, 3)
	want := partCount{Want: 5, Listed: 2, Led: 2, FullISR: 1, Offline: 1}
	if got != want {
		t.Fatalf("countReady = %+v, want %+v", got, want)
	}
	// kfake lists min(RF, brokers) replicas: with RF 3 on 3 that is 3,
	// and a partition with 2 replicas is not ready at RF 3.
	md := kmsg.NewPtrMetadataResponse()
	md.Topics = []kmsg.MetadataResponseTopic{mdTopic("a", 0, mdPartition(0, 1, []int32{1, 2}, []int32{1, 2}))}
	if n := countReady(md, map[string]int{"a": 1}, 3); n.FullISR != 0 {
		t.Fatalf("a partition with 2 of 3 replicas counted ready: %+v", n)
	}
}

func TestCountInSync(t *testing.T) {
	md := testMetadata()
	if in, of := countInSync(md, map[string]int{"a": 3}, 3); in != 1 || of != 3 {
		t.Fatalf("node 3: in the ISR of %d of %d, want 1 of 3 (partition 1 lacks it, 2 has no leader)", in, of)
	}
	if in, of := countInSync(md, map[string]int{"a": 3}, 1); in != 2 || of != 3 {
		t.Fatalf("node 1: %d of %d, want 2 of 3", in, of)
	}
}

func TestProgressWatch(t *testing.T) {
	t0 := time.Unix(1000, 0)
	w := newProgressWatch(t0, time.Minute, 10*time.Second)
	for i, c := range []struct {
		at       time.Duration
		progress int
		ends     bool
	}{{0, 0, false}, {5 * time.Second, 10, false}, {14 * time.Second, 10, false}, {16 * time.Second, 9, true}} {
		why := w.observe(t0.Add(c.at), c.progress)
		if (why != "") != c.ends {
			t.Fatalf("step %d (%v, %d): %q", i, c.at, c.progress, why)
		}
		if c.ends && !strings.Contains(why, "no progress for 10s") {
			t.Fatalf("step %d: %q does not say it stalled", i, why)
		}
	}
	w = newProgressWatch(t0, time.Minute, 10*time.Second)
	for at := time.Duration(0); at < time.Minute; at += 5 * time.Second {
		if why := w.observe(t0.Add(at), int(at/time.Second)); why != "" {
			t.Fatalf("growing progress ended at %v: %q", at, why)
		}
	}
	if why := w.observe(t0.Add(time.Minute), 1000); !strings.Contains(why, "deadline") {
		t.Fatalf("at the deadline: %q", why)
	}
}

func TestWaitProgressEnds(t *testing.T) {
	ctx := context.Background()
	n := 0
	if _, err := waitProgress(ctx, time.Now(), time.Minute, time.Minute, func() pollResult {
		n++
		return pollResult{progress: n, done: n == 3}
	}); err != nil || n != 3 {
		t.Fatalf("done after %d polls: %v", n, err)
	}
	_, err := waitProgress(ctx, time.Now(), time.Minute, 300*time.Millisecond, func() pollResult {
		return pollResult{progress: 1, detail: []string{"broker 1: stuck"}}
	})
	if err == nil || !strings.Contains(err.Error(), "no progress") || !strings.Contains(err.Error(), "broker 1: stuck") {
		t.Fatalf("a stalled wait: %v", err)
	}
	boom := errors.New("broker 2 exited")
	if _, err := waitProgress(ctx, time.Now(), time.Minute, time.Minute, func() pollResult { return pollResult{fatal: boom} }); !errors.Is(err, boom) {
		t.Fatalf("a fatal poll: %v", err)
	}
}

func TestDurQuantile(t *testing.T) {
	var ds []time.Duration
	for i := 100; i >= 1; i-- {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	if p50, p99 := durQuantile(ds, 0.5), durQuantile(ds, 0.99); p50 != 50*time.Millisecond || p99 != 99*time.Millisecond {
		t.Fatalf("p50 %v p99 %v of 1..100 ms", p50, p99)
	}
	if durQuantile(nil, 0.5) != 0 || durQuantile(ds[:1], 0.99) != 100*time.Millisecond {
		t.Fatal("empty or single")
	}
}

func TestParseCounts(t *testing.T) {
	if got, err := parseCounts("1000, 10000"); err != nil || !equalInts(got, []int{1000, 10000}) {
		t.Fatalf("%v, %v", got, err)
	}
	for _, bad := range []string{"", "0", "-3", "x", "100,y"} {
		if _, err := parseCounts(bad); err == nil {
			t.Errorf("parseCounts(%q) accepted", bad)
		}
	}
}

// TestPartitionsWorkloadOnKfake runs the partitions workload on in-process
// kfake at two small counts: every step is reached, topics are laid out as
// asked, and the report has the table, the goals, the growth and each
// repetition.
func TestPartitionsWorkloadOnKfake(t *testing.T) {
	sc := defaultScale
	sc.PartitionCounts, sc.PerTopic, sc.Idle, sc.MetadataRequests = []int{20, 50}, 10, 50*time.Millisecond, 10
	sc.ReadyTimeout, sc.Stall = 30*time.Second, 10*time.Second
	cfg := suiteConfig{Out: t.TempDir(), Reps: 2, WarmupReps: 1, Timeout: 30 * time.Second, Targets: []targetKind{kindKfake, kindNull},
		Workloads: []string{"partitions"}, Scale: sc}
	var report bytes.Buffer
	s := newSuite(cfg, &report)
	s.start, s.logf = inProcessStarter(t), t.Logf
	if err := s.measure(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if len(s.partRuns) != 4 {
		t.Fatalf("%d repetitions recorded, want 4 (2 counts x 2 reps, kfake only: the null broker holds no partitions)", len(s.partRuns))
	}
	for _, r := range s.partRuns {
		if r.Err != "" {
			t.Fatalf("%d partitions rep %d: %s", r.Partitions, r.Rep, r.Err)
		}
		if r.Topics != r.Partitions/10 || r.Ready <= 0 || r.MetaP50 <= 0 || r.MetaP99 < r.MetaP50 || r.MetaRequests != 10 ||
			r.ProduceAll <= 0 || r.IdleWindow != sc.Idle || r.Restart != nil {
			t.Fatalf("%d partitions rep %d: a step was not measured: %+v", r.Partitions, r.Rep, r)
		}
	}
	s.report()
	for _, want := range []string{"## Partitions", "kfake 20 | kfake 50", "### Goals at 50 partitions", "the goals are for 10,000",
		"from 20 to 50 partitions", "### Each repetition", "## How long each part took", "- partitions 20, 50:"} {
		if !strings.Contains(report.String(), want) {
			t.Errorf("the report lacks %q", want)
		}
	}
	if t.Failed() {
		t.Log(report.String())
	}
}

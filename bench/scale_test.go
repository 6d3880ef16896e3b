package main

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestExpandWorkloads(t *testing.T) {
	got := expandWorkloads([]string{"w2", "connections", "consumers", "partitions", "conn-one"})
	want := []string{"w2", "conn-one", "conn-idle", "conn-many", "cg-fill", "cg-one", "cg-many", "partitions"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if err := checkNames([]targetKind{kindKbroker}, got); err != nil {
		t.Fatal(err)
	}
	if err := checkNames([]targetKind{kindKbroker}, []string{"cg-many"}); err == nil {
		t.Fatal("cg-many without cg-fill accepted")
	}
}

func TestConnectionCapsFollowConnOne(t *testing.T) {
	caps, err := parseCaps("conn-one=5000")
	if err != nil {
		t.Fatal(err)
	}
	if caps["conn-idle"] != 5000 || caps["conn-many"] != 5000 || caps["cg-fill"] != defaultCaps["cg-fill"] {
		t.Fatalf("got %v: conn-idle and conn-many must follow conn-one", caps)
	}
	if caps, _ = parseCaps("conn-one=5000,conn-many=7"); caps["conn-many"] != 7 || caps["conn-idle"] != 5000 {
		t.Fatalf("an explicit conn-many cap was overridden: %v", caps)
	}
}

// TestGroupBarrier: a group counts once however often it is assigned, and
// nobody passes until all have arrived.
func TestGroupBarrier(t *testing.T) {
	b := newGroupBarrier(2)
	var g1, g2 atomic.Bool
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	b.arrive(ctx, &g1)
	b.arrive(ctx, &g1) // a second assignment of the same group
	select {
	case <-b.all:
		t.Fatal("the barrier opened with one of two groups")
	default:
	}
	b.arrive(context.Background(), &g2)
	select {
	case <-b.all:
	default:
		t.Fatal("the barrier stayed shut with both groups in")
	}
}

// TestConsumeGroupsReadsEveryRecordPerGroup: each group reads the whole
// topic, the sum is reported, the joins are outside the timed window, and
// the groups are deleted afterwards.
func TestConsumeGroupsReadsEveryRecordPerGroup(t *testing.T) {
	addrs := startKfakeForTest(t, 3)
	ctx := testCtx(t)
	if _, err := runLoad(ctx, loadConfig{Brokers: addrs, Topic: "g", Partitions: 3, RF: 3, RecordBytes: 100, Acks: "1",
		Records: 400, WarmRecords: 100, Linger: time.Millisecond, Mode: "produce"}); err != nil {
		t.Fatal(err)
	}
	res, err := runLoad(ctx, loadConfig{Brokers: addrs, Topic: "g", Mode: "groups", Groups: 3})
	if err != nil {
		t.Fatal(err)
	}
	if res.Records != 3*500 || res.Bytes != 3*500*100 || res.Groups != 3 || res.Setup <= 0 || res.Elapsed <= 0 || res.Errors != 0 {
		t.Fatalf("got %d records, %d bytes, %d groups, setup %v, elapsed %v, %d errors (%s)", res.Records, res.Bytes, res.Groups,
			res.Setup, res.Elapsed, res.Errors, res.FirstError)
	}
	adm, cl, err := adminClient(addrs)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	gs, err := adm.ListGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if names := gs.Groups(); len(names) != 0 {
		t.Fatalf("groups left after the run: %v", names)
	}
}

// TestScaleGroupsRules runs the connections and consumers workloads on
// in-process kfake and null with small sizes: every produce run times its
// cap (conn-many's shared by its producers, conn-idle's beside its idle
// connections), each group reads all of its repetition's topic, the null
// broker skips the consumer groups, and the report compares the runs.
func TestScaleGroupsRules(t *testing.T) {
	sc := defaultScale
	sc.IdleConns, sc.Producers, sc.Groups = 30, 4, 3
	caps := map[string]int64{"conn-one": 2000, "conn-idle": 2000, "conn-many": 2000, "cg-fill": 1500}
	cfg := suiteConfig{Out: t.TempDir(), Reps: 2, WarmupReps: 1, Caps: caps, Timeout: 30 * time.Second, Scale: sc,
		Targets: []targetKind{kindKfake, kindNull}, Workloads: expandWorkloads([]string{"connections", "consumers"})}
	var report bytes.Buffer
	s := newSuite(cfg, &report)
	s.start, s.logf = inProcessStarter(t), t.Logf
	s.after = func(rr runRecord, c *cluster) {
		if rr.Err != "" {
			t.Errorf("%s %s rep %d failed: %s", rr.Workload, rr.Target, rr.Rep, rr.Err)
			return
		}
		checkScaleRun(t, s, rr, c)
	}
	if err := s.measure(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	// kfake: 6 workloads, null: the 3 connections ones (no cg-*); 2
	// repetitions each.
	if want := 2 * (6 + 3); len(s.runs) != want {
		t.Fatalf("%d runs recorded, want %d", len(s.runs), want)
	}
	s.report()
	for _, want := range []string{"## Connections and consumer groups", "memory per idle connection", "aggregate MB/s: one producer -> 4 producers",
		"total MB/s delivered: one group -> 3 groups at once", "growth: broker CPU per extra group", "- conn-one, conn-idle, conn-many:"} {
		if !strings.Contains(report.String(), want) {
			t.Errorf("the report lacks %q", want)
		}
	}
	if strings.Contains(report.String(), "## Issue 20") {
		t.Error("a scale-only run printed the issue 20 goal table (nothing of it ran)")
	}
}

func checkScaleRun(t *testing.T, s *suite, rr runRecord, c *cluster) {
	t.Helper()
	w := s.ws[rr.Workload]
	if w.reads != "" {
		want := int64(w.load.Groups) * (s.cfg.Caps[w.reads] + s.ws[w.reads].load.WarmRecords)
		if rr.Result.Records != want {
			t.Errorf("%s %s rep %d read %d records, want %d", rr.Workload, rr.Target, rr.Rep, rr.Result.Records, want)
		}
	} else if rr.Result.Records != s.cfg.Caps[rr.Workload] {
		t.Errorf("%s %s rep %d timed %d records, want the cap %d", rr.Workload, rr.Target, rr.Rep, rr.Result.Records, s.cfg.Caps[rr.Workload])
	}
	if rr.Workload == "conn-idle" && rr.Result.Idle.Conns != s.cfg.Scale.IdleConns {
		t.Errorf("conn-idle %s: %d idle connections, want %d", rr.Target, rr.Result.Idle.Conns, s.cfg.Scale.IdleConns)
	}
	if rr.Workload == "cg-fill" || rr.Workload == "cg-one" {
		return // read next
	}
	if ok, err := topicExists(testCtx(t), c.addrs, w.load.Topic); err != nil || ok {
		t.Errorf("%s %s rep %d: topic %s still listed (%v) after its group", rr.Workload, rr.Target, rr.Rep, w.load.Topic, err)
	}
}

package compat

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupFlags make group tests react in seconds.
var groupFlags = []string{"--group.initial.rebalance.delay.ms=0", "--group.min.session.timeout.ms=1000"}

// member is a franz-go group consumer that records its assignment.
type member struct {
	name string
	cl   *kgo.Client

	mu       sync.Mutex
	assigned map[int32]bool
	revokes  int
	records  []*kgo.Record
	stop     context.CancelFunc
	done     chan struct{}
}

func startMember(t *testing.T, seeds []string, group, topic, name string, opts ...kgo.Opt) *member {
	t.Helper()
	m := &member{name: name, assigned: map[int32]bool{}, done: make(chan struct{})}
	base := []kgo.Opt{
		kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(200 * time.Millisecond),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, a map[string][]int32) {
			m.mu.Lock()
			for _, p := range a[topic] {
				m.assigned[p] = true
			}
			m.mu.Unlock()
		}),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, r map[string][]int32) {
			m.mu.Lock()
			for _, p := range r[topic] {
				delete(m.assigned, p)
			}
			m.revokes++
			m.mu.Unlock()
		}),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, r map[string][]int32) {
			m.mu.Lock()
			for _, p := range r[topic] {
				delete(m.assigned, p)
			}
			m.mu.Unlock()
		}),
	}
	if os.Getenv("KBROKER_TEST_CLIENT_LOGS") != "" {
		base = append(base, kgo.WithLogger(kgo.BasicLogger(os.Stderr, kgo.LogLevelDebug, func() string { return name + " " })))
	}
	m.cl = newClient(t, seeds, append(base, opts...)...)
	ctx, cancel := context.WithCancel(context.Background())
	m.stop = cancel
	go func() {
		defer close(m.done)
		for ctx.Err() == nil {
			fs := m.cl.PollFetches(ctx)
			m.mu.Lock()
			m.records = append(m.records, fs.Records()...)
			m.mu.Unlock()
		}
	}()
	t.Cleanup(func() { m.halt() })
	return m
}

// halt stops polling (the client stays in the group until closed).
func (m *member) halt() {
	m.stop()
	<-m.done
}

func (m *member) partitions() []int32 {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []int32
	for p := range m.assigned {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func (m *member) consumed() []*kgo.Record {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]*kgo.Record(nil), m.records...)
}

// waitSplit waits until the members own all n partitions between them, each
// owning at least one and none shared.
func waitSplit(t *testing.T, d time.Duration, n int, members ...*member) {
	t.Helper()
	waitFor(t, d, "partitions split across members", func() error {
		owner := map[int32]string{}
		for _, m := range members {
			ps := m.partitions()
			if len(ps) == 0 {
				return fmt.Errorf("%s owns nothing", m.name)
			}
			for _, p := range ps {
				if o, ok := owner[p]; ok {
					return fmt.Errorf("partition %d owned by %s and %s", p, o, m.name)
				}
				owner[p] = m.name
			}
		}
		if len(owner) != n {
			return fmt.Errorf("%d of %d partitions owned", len(owner), n)
		}
		return nil
	})
}

func produceN(t *testing.T, seeds []string, topic string, n int, prefix string) {
	t.Helper()
	cl := newClient(t, seeds, kgo.DefaultProduceTopic(topic))
	ctx := ctxTimeout(t, time.Minute)
	var rs []*kgo.Record
	for i := range n {
		rs = append(rs, &kgo.Record{Key: []byte(fmt.Sprint(i)), Value: []byte(fmt.Sprintf("%s-%d", prefix, i))})
	}
	must(t, cl.ProduceSync(ctx, rs...).FirstErr(), "produce")
}

// Cooperative-sticky members split the partitions; one leaving is noticed at
// once (long before its session timeout) and the other takes everything.
func TestGroupCooperativeStickyJoinSplitLeave(t *testing.T) {
	tg := singleNode(t, groupFlags...)
	adm := newAdmin(t, tg.seeds)
	topic := newTopic(t, adm, 6, 1, nil)
	group := uniqueTopic("coop")
	opts := []kgo.Opt{kgo.Balancers(kgo.CooperativeStickyBalancer()), kgo.SessionTimeout(30 * time.Second)}
	m1 := startMember(t, tg.seeds, group, topic, "m1", opts...)
	m2 := startMember(t, tg.seeds, group, topic, "m2", opts...)
	waitSplit(t, 30*time.Second, 6, m1, m2)
	m2.halt()
	m2.cl.Close() // LeaveGroup
	start := time.Now()
	waitFor(t, 20*time.Second, "m1 owning every partition after m2 left", func() error {
		if n := len(m1.partitions()); n != 6 {
			return fmt.Errorf("m1 owns %d", n)
		}
		return nil
	})
	if took := time.Since(start); took > 25*time.Second {
		t.Fatalf("rebalance after a leave took %v: not at once", took)
	}
	groups, err := adm.DescribeGroups(ctxTimeout(t, 10*time.Second), group)
	must(t, err, "DescribeGroups")
	g := groups[group]
	if g.Err != nil || g.State != "Stable" || len(g.Members) != 1 || g.Protocol != "cooperative-sticky" {
		t.Fatalf("DescribeGroups: err %v state %s members %d protocol %s", g.Err, g.State, len(g.Members), g.Protocol)
	}
}

// A range member and a kcat (librdkafka) member share a group; kcat killed
// with SIGKILL is noticed after its session timeout and its partitions move.
func TestGroupRangeWithKcatMemberKilled(t *testing.T) {
	t.Parallel()
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		t.Skip("kcat is not installed")
	}
	tg := singleNode(t, groupFlags...)
	adm := newAdmin(t, tg.seeds)
	topic := newTopic(t, adm, 4, 1, nil)
	group := uniqueTopic("range")
	produceN(t, tg.seeds, topic, 100, "r")
	m1 := startMember(t, tg.seeds, group, topic, "franz", kgo.Balancers(kgo.RangeBalancer()))
	cmd := exec.Command(kcat, "-b", tg.seeds[0], "-G", group, topic, "-o", "beginning",
		"-X", "partition.assignment.strategy=range", "-X", "session.timeout.ms=6000", "-X", "heartbeat.interval.ms=500", "-q")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	waitFor(t, 45*time.Second, "the kcat member to take half", func() error {
		if n := len(m1.partitions()); n != 2 {
			return fmt.Errorf("franz owns %d partitions", n)
		}
		return nil
	})
	described, err := adm.DescribeGroups(ctxTimeout(t, 10*time.Second), group)
	must(t, err, "DescribeGroups")
	if g := described[group]; len(g.Members) != 2 || g.Protocol != "range" {
		t.Fatalf("group: %d members, protocol %q", len(g.Members), g.Protocol)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	killed := time.Now()
	waitFor(t, 45*time.Second, "the killed member's partitions to move", func() error {
		if n := len(m1.partitions()); n != 4 {
			return fmt.Errorf("franz owns %d partitions", n)
		}
		return nil
	})
	if took := time.Since(killed); took < 3*time.Second {
		t.Fatalf("partitions moved %v after the kill: before the 6 s session timeout could expire", took)
	}
}

// Static members (group.instance.id) restarting within the session timeout
// get their partitions back without a rebalance.
func TestGroupStaticMemberRestartNoRebalance(t *testing.T) {
	tg := singleNode(t, groupFlags...)
	adm := newAdmin(t, tg.seeds)
	topic := newTopic(t, adm, 4, 1, nil)
	group := uniqueTopic("static")
	opts := func(id string) []kgo.Opt {
		return []kgo.Opt{kgo.InstanceID(id), kgo.SessionTimeout(20 * time.Second), kgo.Balancers(kgo.RangeBalancer())}
	}
	a := startMember(t, tg.seeds, group, topic, "a", opts("a")...)
	b := startMember(t, tg.seeds, group, topic, "b", opts("b")...)
	waitSplit(t, 30*time.Second, 4, a, b)
	before := b.partitions()
	b.mu.Lock()
	revokesBefore := b.revokes
	b.mu.Unlock()

	a.halt()
	a.cl.Close() // static: no LeaveGroup
	a2 := startMember(t, tg.seeds, group, topic, "a2", opts("a")...)
	waitSplit(t, 30*time.Second, 4, a2, b)
	b.mu.Lock()
	revokes := b.revokes
	b.mu.Unlock()
	if revokes != revokesBefore || fmt.Sprint(b.partitions()) != fmt.Sprint(before) {
		t.Fatalf("the other member was rebalanced: revokes %d -> %d, partitions %v -> %v", revokesBefore, revokes, before, b.partitions())
	}
}

// Committed offsets survive a kill -9 of the coordinator broker: a member
// starting afterwards finds the new coordinator and resumes exactly after the
// last commit, for the classic and the KIP-848 protocol.
func TestGroupCommitSurvivesCoordinatorKill(t *testing.T) {
	needOwnCluster(t)
	for _, tc := range []struct {
		name string
		opts []kgo.Opt
	}{
		{"classic", []kgo.Opt{kgo.Balancers(kgo.RangeBalancer())}},
		{"kip848", []kgo.Opt{kgo.Balancers(kgo.RangeBalancer()), kgo.ServerSideBalancer()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			coordinatorFailover(t, tc.opts)
		})
	}
}

func coordinatorFailover(t *testing.T, opts []kgo.Opt) {
	c := startCluster(t, clusterOpts{brokers: 3, flags: append(replicationFlags(), groupFlags...)})
	adm := newAdmin(t, c.seeds())
	topic := newTopic(t, adm, 3, 3, nil)
	c.waitTopicEverywhere(topic, 3, 3)
	group := uniqueTopic("failover")
	produceN(t, c.seeds(), topic, 300, "v")

	m := startMember(t, c.seeds(), group, topic, "first", append(opts, kgo.DisableAutoCommit())...)
	waitFor(t, 60*time.Second, "150 records consumed", func() error {
		if n := len(m.consumed()); n < 150 {
			return fmt.Errorf("%d consumed", n)
		}
		return nil
	})
	m.halt()
	got := m.consumed()
	// Commit the first half exactly.
	committed := map[int32]int64{}
	var toCommit []*kgo.Record
	for _, r := range got[:150] {
		toCommit = append(toCommit, r)
		if r.Offset+1 > committed[r.Partition] {
			committed[r.Partition] = r.Offset + 1
		}
	}
	must(t, m.cl.CommitRecords(ctxTimeout(t, 20*time.Second), toCommit...), "commit")
	m.cl.Close()

	coord := findCoordinator(t, c, group)
	offsets, err := adm.FetchOffsets(ctxTimeout(t, 10*time.Second), group)
	must(t, err, "FetchOffsets")
	for p, o := range committed {
		if r, ok := offsets.Lookup(topic, p); !ok || r.At != o {
			t.Fatalf("partition %d: committed %d, OffsetFetch says %+v", p, o, r)
		}
	}
	t.Logf("group coordinator is broker %d; killing it", coord)
	c.node(coord).kill9()

	m2 := startMember(t, c.runningSeeds(), group, topic, "second", opts...)
	want := 300 - 150
	waitFor(t, 90*time.Second, "the rest consumed by a new member", func() error {
		if n := len(m2.consumed()); n < want {
			return fmt.Errorf("%d of %d consumed", n, want)
		}
		return nil
	})
	m2.halt()
	first := map[int32]int64{}
	for _, r := range m2.consumed() {
		if _, ok := first[r.Partition]; !ok {
			first[r.Partition] = r.Offset
		}
	}
	counts := map[int32]int{}
	for _, r := range m2.consumed() {
		counts[r.Partition]++
	}
	ends := endOffsets(t, c.runningSeeds(), topic)
	for p, o := range committed {
		at, ok := first[p]
		if !ok && ends[p] == o {
			continue // everything in it was committed: nothing left to read
		}
		if at != o {
			t.Fatalf("partition %d: resumed at %d, committed %d (re-read or skipped); first offsets %v, counts %v", p, at, o, first, counts)
		}
	}
	if n := len(m2.consumed()); n != want {
		t.Fatalf("the new member read %d records, want exactly %d", n, want)
	}
	if next := findCoordinator(t, c, group); next == coord {
		t.Fatalf("coordinator still %d after it was killed", next)
	}
}

// findCoordinator asks for a group's coordinator until one is available.
func findCoordinator(t *testing.T, c *cluster, group string) int32 {
	t.Helper()
	var id int32
	waitFor(t, 60*time.Second, "a group coordinator", func() error {
		cl := newClient(t, c.runningSeeds())
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorKey = group
		req.CoordinatorKeys = []string{group}
		resp, err := req.RequestWith(ctxTimeout(t, 5*time.Second), cl)
		if err != nil {
			return err
		}
		code, node := resp.ErrorCode, resp.NodeID
		if len(resp.Coordinators) == 1 {
			code, node = resp.Coordinators[0].ErrorCode, resp.Coordinators[0].NodeID
		}
		if err := kerr.ErrorForCode(code); err != nil {
			return err
		}
		id = node
		return nil
	})
	return id
}

// kadm's list, describe and delete of groups and offsets show the truth.
func TestGroupAdmin(t *testing.T) {
	tg := singleNode(t, groupFlags...)
	adm := newAdmin(t, tg.seeds)
	topic := newTopic(t, adm, 2, 1, nil)
	group := uniqueTopic("admin")
	ctx := ctxTimeout(t, time.Minute)

	// The offsets topic is created on first use: COORDINATOR_NOT_AVAILABLE
	// (retriable) until it has leaders, then -1 offsets and no error.
	waitFor(t, 30*time.Second, "offsets of a group that never committed", func() error {
		never, err := adm.FetchOffsets(ctx, uniqueTopic("never-committed"))
		if err != nil {
			return err
		}
		if err := never.Error(); err != nil {
			if errors.Is(err, kerr.CoordinatorNotAvailable) || errors.Is(err, kerr.CoordinatorLoadInProgress) {
				return err
			}
			t.Fatalf("an unknown group's offsets: %v, want no error", err)
		}
		return nil
	})

	produceN(t, tg.seeds, topic, 20, "a")
	m := startMember(t, tg.seeds, group, topic, "m", kgo.DisableAutoCommit())
	waitFor(t, 30*time.Second, "records", func() error {
		if len(m.consumed()) < 20 {
			return errors.New("not yet")
		}
		return nil
	})
	m.halt()
	var commitErr error
	m.cl.CommitOffsetsSync(ctx, map[string]map[int32]kgo.EpochOffset{topic: {0: {Epoch: -1, Offset: 7}, 1: {Epoch: -1, Offset: 3}}},
		func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
			commitErr = err
			if err == nil {
				for _, rt := range resp.Topics {
					for _, rp := range rt.Partitions {
						if e := kerr.ErrorForCode(rp.ErrorCode); e != nil {
							commitErr = e
						}
					}
				}
			}
		})
	must(t, commitErr, "commit")

	listed, err := adm.ListGroups(ctx)
	must(t, err, "ListGroups")
	lg, ok := listed[group]
	if !ok || lg.State != "Stable" || lg.ProtocolType != "consumer" {
		t.Fatalf("ListGroups: %+v (found %v)", lg, ok)
	}
	described, err := adm.DescribeGroups(ctx, group)
	must(t, err, "DescribeGroups")
	if d := described[group]; d.State != "Stable" || len(d.Members) != 1 {
		t.Fatalf("DescribeGroups: state %s, %d members", d.State, len(d.Members))
	}
	fetched, err := adm.FetchOffsets(ctx, group)
	must(t, err, "FetchOffsets")
	for p, want := range map[int32]int64{0: 7, 1: 3} {
		if r, ok := fetched.Lookup(topic, p); !ok || r.At != want {
			t.Fatalf("partition %d: offset %+v, want %d", p, r, want)
		}
	}

	deleted, err := adm.DeleteGroups(ctx, group)
	must(t, err, "DeleteGroups")
	if !errors.Is(deleted[group].Err, kerr.NonEmptyGroup) {
		t.Fatalf("deleting a live group: %v, want NON_EMPTY_GROUP", deleted[group].Err)
	}
	m.cl.Close()
	waitFor(t, 30*time.Second, "the group to be empty", func() error {
		d, err := adm.DescribeGroups(ctx, group)
		if err != nil {
			return err
		}
		if d[group].State != "Empty" {
			return fmt.Errorf("state %s", d[group].State)
		}
		return nil
	})
	// An empty group takes commits from anyone (generation -1); metadata
	// strings round-trip.
	commit := kadm.Offsets{}
	commit.Add(kadm.Offset{Topic: topic, Partition: 0, At: 9, LeaderEpoch: -1, Metadata: "meta-0"})
	resp, err := adm.CommitOffsets(ctx, group, commit)
	must(t, err, "admin commit")
	must(t, resp.Error(), "admin commit")
	fetched, err = adm.FetchOffsets(ctx, group)
	must(t, err, "FetchOffsets")
	if r, _ := fetched.Lookup(topic, 0); r.At != 9 || r.Metadata != "meta-0" {
		t.Fatalf("offset %+v, want 9 with metadata meta-0", r)
	}
	deleted, err = adm.DeleteGroups(ctx, group)
	must(t, err, "DeleteGroups")
	must(t, deleted[group].Err, "delete empty group")
	listed, err = adm.ListGroups(ctx)
	must(t, err, "ListGroups")
	if _, ok := listed[group]; ok {
		t.Fatal("deleted group still listed")
	}
	fetched, err = adm.FetchOffsets(ctx, group)
	must(t, err, "FetchOffsets after delete")
	if r, ok := fetched.Lookup(topic, 0); ok && r.At != -1 {
		t.Fatalf("offsets of a deleted group: %+v", r)
	}
}

package replication

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/internal/testsupport"
	"github.com/kbroker/kbroker/storage"
)

// managerRig is broker 1's Manager on real storage, with a fake clock and
// timers, and broker 2 as an in-memory leader its fetchers reach through
// long-polling direct clients.
type managerRig struct {
	t      *testing.T
	m      *Manager
	clock  *fakeClock
	timers *fakeTimers
	remote *Partition // broker 2's replica

	mu      sync.Mutex
	clients []*pollingClient
}

// pollingClient is a directClient whose empty answers wait, like a leader's
// long poll, until the leader's log or HW moves, MaxWait passes (on the
// wall clock: the leader's timer) or the fetcher stops.
type pollingClient struct{ directClient }

func (c *pollingClient) Fetch(ctx context.Context, req *kmsg.FetchRequest) (*kmsg.FetchResponse, error) {
	w := NewWaiter()
	leader := c.leader()
	stop := leader.Watch(w)
	defer stop()
	resp, err := c.directClient.Fetch(ctx, req)
	if err != nil || len(resp.Topics) == 0 || len(resp.Topics[0].Partitions[0].RecordBatches) > 0 ||
		resp.Topics[0].Partitions[0].ErrorCode != 0 {
		return resp, err
	}
	select {
	case <-w.C:
	case <-time.After(time.Duration(req.MaxWaitMillis) * time.Millisecond):
	case <-ctx.Done():
	}
	return resp, nil
}

func newManagerRig(t *testing.T, alter AlterPartitionFunc) *managerRig {
	clock := testsupport.NewClock(time.Unix(1000, 0))
	r := &managerRig{t: t, clock: clock, timers: &fakeTimers{clock: clock},
		remote: memPartition(2, clock, newMemLog(memLogConfig{}))}
	logs, err := storage.NewManager([]string{t.TempDir()}, storage.ManagerOptions{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logs.Close() })
	r.m = NewManager(ManagerOptions{LocalID: 1, Logs: logs, AlterPartition: alter, ReplicaLagTimeMax: 10 * time.Second,
		Fetcher: FetcherOptions{MaxWait: 10 * time.Millisecond, Backoff: time.Second, Client: r.newClient}, Now: clock.Now, After: r.timers.After})
	r.m.Start()
	t.Cleanup(r.m.Close)
	return r
}

func (r *managerRig) newClient(leader int32) LeaderClient {
	c := &pollingClient{directClient{leader: func() *Partition { return r.remote }}}
	r.mu.Lock()
	r.clients = append(r.clients, c)
	r.mu.Unlock()
	return c
}

func (r *managerRig) openClients() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, c := range r.clients {
		if !c.isClosed() {
			n++
		}
	}
	return n
}

func (r *managerRig) fetcherCount() int {
	r.m.mu.RLock()
	defer r.m.mu.RUnlock()
	return len(r.m.fetchers)
}

func rigState(leader, epoch int32, isr ...int32) PartitionState {
	return PartitionState{Topic: "t", Replicas: []int32{1, 2}, ISR: isr, Leader: leader, LeaderEpoch: epoch, PartitionEpoch: epoch}
}

// follow makes broker 1 follow broker 2 at epoch (broker 2 leads it).
func (r *managerRig) follow(epoch int32) *Partition {
	r.t.Helper()
	must(r.t, r.remote.MakeLeader(rigState(2, epoch, 1, 2), 1))
	p, err := r.m.MakeFollower(rigState(2, epoch, 1, 2), storage.DefaultLogConfig())
	if err != nil {
		r.t.Fatal(err)
	}
	return p
}

func TestManagerFollowerFetchesFromItsLeader(t *testing.T) {
	r := newManagerRig(t, nil)
	p := r.follow(1)
	if _, err := r.remote.AppendAsLeader(batch(3), 1, storage.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { hw, leo, _ := p.Offsets(); return leo == 3 && hw == 3 })
	if n := r.fetcherCount(); n != 1 {
		t.Fatalf("%d fetchers, want 1", n)
	}
}

// Idle fetchers: when its last partition leaves (this broker now leads
// it), the fetcher closes its connection and leaves the manager.
func TestManagerIdleFetcherStops(t *testing.T) {
	r := newManagerRig(t, nil)
	r.follow(1)
	waitFor(t, func() bool { return r.openClients() == 1 })
	if _, err := r.m.MakeLeader(rigState(1, 2, 1, 2), storage.DefaultLogConfig(), 1); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return r.fetcherCount() == 0 && r.openClients() == 0 })
}

// A partition added while its fetcher retires is never left with a fetcher
// that stopped: leadership flips between the two brokers, racing the idle
// fetcher's retirement with the next followership, and the follower still
// replicates at the end.
func TestManagerAddDoesNotRaceIdleRetirement(t *testing.T) {
	r := newManagerRig(t, nil)
	var p *Partition
	epoch := int32(1)
	for range 100 {
		p = r.follow(epoch)
		if _, err := r.m.MakeLeader(rigState(1, epoch+1, 1, 2), storage.DefaultLogConfig(), 1); err != nil {
			t.Fatal(err)
		}
		epoch += 2
	}
	p = r.follow(epoch)
	if _, err := r.remote.AppendAsLeader(batch(2), 1, storage.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		r.timers.Advance(time.Second) // partitions backing off after a fenced fetch resume
		_, leo, _ := p.Offsets()
		return leo == r.remote.log.LogEndOffset()
	})
	r.m.mu.RLock()
	f := r.m.fetchers[2]
	r.m.mu.RUnlock()
	if f == nil {
		t.Fatal("no fetcher for broker 2")
	}
	f.mu.Lock()
	_, held := f.partitions[p]
	f.mu.Unlock()
	if !held {
		t.Fatal("the partition is not in broker 2's fetcher")
	}
}

// The ISR shrink check runs on the manager's timer source; its proposal
// reaches AlterPartition and the committed answer lands in the partition.
func TestManagerShrinksTheISRThroughAlterPartition(t *testing.T) {
	sent := make(chan []AlterISR, 1)
	alter := func(_ context.Context, changes []AlterISR) ([]AlterISRResult, error) {
		sent <- changes
		out := make([]AlterISRResult, len(changes))
		for i, c := range changes {
			out[i] = AlterISRResult{ISR: c.NewISR, LeaderEpoch: c.LeaderEpoch, PartitionEpoch: c.PartitionEpoch + 1}
		}
		return out, nil
	}
	r := newManagerRig(t, alter)
	p, err := r.m.MakeLeader(rigState(1, 1, 1, 2), storage.DefaultLogConfig(), 1)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return r.timers.waiting() > 0 }) // the shrink loop's timer
	r.timers.Advance(11 * time.Second)                        // past replica.lag.time.max.ms: broker 2 never fetched
	changes := <-sent
	if len(changes) != 1 || !slices.Equal(changes[0].NewISR, []int32{1}) {
		t.Fatalf("AlterPartition got %+v, want the ISR [1]", changes)
	}
	waitFor(t, func() bool { return slices.Equal(p.Snapshot().ISR, []int32{1}) })
}

// Without a controller to send it to, a proposal is answered with an error
// and the change is dropped (to be proposed again after a backoff).
func TestManagerWithoutAlterPartitionRefusesTheChange(t *testing.T) {
	r := newManagerRig(t, nil)
	p, err := r.m.MakeLeader(rigState(1, 1, 1, 2), storage.DefaultLogConfig(), 1)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return r.timers.waiting() > 0 })
	r.timers.Advance(11 * time.Second)
	waitFor(t, func() bool {
		p.mu.RLock()
		defer p.mu.RUnlock()
		return p.isr.kind == isrCommitted && !p.isrRetryAfter.IsZero()
	})
	if isr := p.Snapshot().ISR; !slices.Equal(isr, []int32{1, 2}) {
		t.Fatalf("ISR %v, want it unchanged", isr)
	}
}

func TestManagerRemoveTakesThePartitionOffline(t *testing.T) {
	r := newManagerRig(t, nil)
	p := r.follow(1)
	must(t, r.m.Remove("t", 0, true))
	if role := p.Role(); role != RoleOffline {
		t.Fatalf("role %s after Remove, want offline", role)
	}
	if _, ok := r.m.Partition("t", 0); ok {
		t.Fatal("the manager still holds the partition")
	}
	waitFor(t, func() bool { return r.fetcherCount() == 0 && r.openClients() == 0 })
}

func TestManagerCloseStopsItsFetchers(t *testing.T) {
	r := newManagerRig(t, nil)
	r.follow(1)
	waitFor(t, func() bool { return r.openClients() == 1 })
	r.m.Close()
	if n := r.openClients(); n != 0 {
		t.Fatalf("%d connections open after Close", n)
	}
	if _, err := r.m.MakeFollower(rigState(2, 2, 1, 2), storage.DefaultLogConfig()); err != nil {
		t.Fatal(err)
	}
	if n := r.fetcherCount(); n != 0 {
		t.Fatalf("a fetcher started after Close (%d)", n)
	}
}

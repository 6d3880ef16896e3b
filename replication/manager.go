package replication

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/kbroker/kbroker/storage"
)

// AlterISRResult is the controller's answer for one AlterISR.
type AlterISRResult struct {
	ISR            []int32
	LeaderEpoch    int32
	PartitionEpoch int32
	Err            error
}

// AlterPartitionFunc sends ISR changes to the active controller in one
// AlterPartition request and returns one result per change, in order. An
// error means the answer was lost: the changes may or may not have been
// applied, and they are sent again while still pending.
type AlterPartitionFunc func(ctx context.Context, changes []AlterISR) ([]AlterISRResult, error)

// ManagerOptions configure a Manager.
type ManagerOptions struct {
	LocalID int32
	Logs    *storage.Manager
	// AlterPartition reaches the controller. Required for replicated topics.
	AlterPartition AlterPartitionFunc
	// ReplicaLagTimeMax is replica.lag.time.max.ms.
	ReplicaLagTimeMax time.Duration
	// Fetcher tunes the replica fetchers.
	Fetcher FetcherOptions
	// OnISRChange, if set, is told of every ISR change a leader here made.
	OnISRChange func(p *Partition, shrink bool)
	// HoldLeaderAppends holds every append as leader of the manager's
	// partitions until OpenLeaderAppends (appendgate.go): a broker opens
	// them once it serves, so that it never appends at the leader epoch of
	// an image it replayed at start.
	HoldLeaderAppends bool
	// Now and After are the clock and timer source of the manager and its
	// fetchers (time.Now and time.After when nil).
	Now    func() time.Time
	After  func(time.Duration) <-chan time.Time
	Logger *slog.Logger
}

// Manager owns this broker's partitions (Kafka's ReplicaManager): it creates
// them, applies leader/follower transitions, runs the ISR shrink check, sends
// ISR changes to the controller and runs one replica fetcher per leader.
type Manager struct {
	opts   ManagerOptions
	logger *slog.Logger

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // background goroutines and fetchers

	// mu guards the fields below. Lock order: mu, then a fetcher's mu, then
	// a Partition's locks.
	mu         sync.RWMutex
	partitions map[storage.TopicPartition]*Partition
	fetchers   map[int32]*fetcher // by leader broker id
	closed     bool               // no fetcher starts after Close

	alterCh chan alterItem // ISR proposals to the sender goroutine

	// appends holds the partitions' appends as leader; nil: never held.
	appends *LeaderAppendGate
}

type alterItem struct {
	p      *Partition
	change AlterISR
}

// NewManager returns a manager; Start runs its background work.
func NewManager(opts ManagerOptions) *Manager {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.After == nil {
		opts.After = time.After
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.ReplicaLagTimeMax <= 0 {
		opts.ReplicaLagTimeMax = 30 * time.Second
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &Manager{
		opts: opts, logger: opts.Logger, ctx: ctx, cancel: cancel,
		partitions: make(map[storage.TopicPartition]*Partition),
		fetchers:   make(map[int32]*fetcher),
		alterCh:    make(chan alterItem, 1024),
	}
	if opts.HoldLeaderAppends {
		m.appends = NewLeaderAppendGate()
	}
	return m
}

// OpenLeaderAppends lets the partitions take appends as leader from now on
// (ManagerOptions.HoldLeaderAppends).
func (m *Manager) OpenLeaderAppends() {
	if m.appends != nil {
		m.appends.Open()
	}
}

// Start runs the ISR shrink check and the AlterPartition sender.
func (m *Manager) Start() {
	m.wg.Add(2)
	go func() { defer m.wg.Done(); m.shrinkLoop() }()
	go func() { defer m.wg.Done(); m.alterLoop() }()
}

// Close stops fetchers and background work. Logs stay open (the storage
// manager closes them).
func (m *Manager) Close() {
	m.cancel() // fetchers' contexts derive from it
	m.mu.Lock()
	m.closed = true
	m.fetchers = map[int32]*fetcher{}
	m.mu.Unlock()
	m.wg.Wait()
}

// Partition returns this broker's replica of topic-index.
func (m *Manager) Partition(topic string, index int32) (*Partition, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	p, ok := m.partitions[storage.TopicPartition{Topic: topic, Partition: index}]
	return p, ok
}

// Partitions returns every partition this broker holds.
func (m *Manager) Partitions() []*Partition {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]*Partition, 0, len(m.partitions))
	for _, p := range m.partitions {
		out = append(out, p)
	}
	return out
}

// Ensure opens (or creates) the partition's log and returns the partition.
func (m *Manager) Ensure(st PartitionState, cfg storage.LogConfig) (*Partition, error) {
	tp := storage.TopicPartition{Topic: st.Topic, Partition: st.Partition}
	m.mu.RLock()
	p, ok := m.partitions[tp]
	m.mu.RUnlock()
	if ok {
		return p, nil
	}
	log, err := m.opts.Logs.Open(tp, st.TopicID, cfg)
	if err != nil {
		return nil, fmt.Errorf("opening log %s-%d: %w", st.Topic, st.Partition, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if p, ok := m.partitions[tp]; ok {
		return p, nil
	}
	p = NewPartition(st.Topic, st.Partition, log, PartitionOptions{
		LocalID: m.opts.LocalID, Now: m.opts.Now, Logger: m.logger, ProposeISR: m.proposeISR, OnISRChange: m.opts.OnISRChange,
		LeaderAppends: m.appends,
	})
	m.partitions[tp] = p
	return p, nil
}

// MakeLeader applies a leadership of this broker.
func (m *Manager) MakeLeader(st PartitionState, cfg storage.LogConfig, minISR int32) (*Partition, error) {
	p, err := m.Ensure(st, cfg)
	if err != nil {
		return nil, err
	}
	m.removeFromFetchers(p)
	return p, p.MakeLeader(st, minISR)
}

// MakeFollower applies a followership (st.Leader may be -1: offline).
func (m *Manager) MakeFollower(st PartitionState, cfg storage.LogConfig) (*Partition, error) {
	p, err := m.Ensure(st, cfg)
	if err != nil {
		return nil, err
	}
	changed, err := p.MakeFollower(st)
	if err != nil || !changed {
		return p, err
	}
	m.removeFromFetchers(p)
	if st.Leader >= 0 && st.Leader != m.opts.LocalID {
		m.addToFetcher(st.Leader, p)
	}
	return p, nil
}

// addToFetcher hands p to the fetcher for leader, starting one if needed.
// It holds mu throughout, so an idle fetcher cannot retire between the
// lookup and the add (retireIdle takes mu too).
func (m *Manager) addToFetcher(leader int32, p *Partition) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return
	}
	f, ok := m.fetchers[leader]
	if !ok {
		f = m.newFetcher(leader)
		m.fetchers[leader] = f
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			f.run()
		}()
	}
	f.add(p)
}

func (m *Manager) newFetcher(leader int32) *fetcher {
	opts := m.opts.Fetcher.withDefaults()
	var client LeaderClient
	if opts.Client != nil {
		client = opts.Client(leader)
	} else {
		client = newProtocolLeaderClient(leader, m.opts.LocalID, opts)
	}
	return newFetcher(fetcherConfig{
		parent: m.ctx, leader: leader, localID: m.opts.LocalID, opts: opts, client: client,
		now: m.opts.Now, after: m.opts.After, logger: m.logger, retire: m.retireIdle,
	})
}

// retireIdle takes f out of the fetchers if it still holds no partition
// (Kafka's shutdownIdleFetcherThreads) and reports whether it did; f then
// closes its connection and stops.
func (m *Manager) retireIdle(f *fetcher) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !f.idle() {
		return false // a partition was added meanwhile
	}
	if m.fetchers[f.leader] == f {
		delete(m.fetchers, f.leader)
	}
	return true
}

// Remove stops replicating a partition and, if deleteLog, deletes its log.
func (m *Manager) Remove(topic string, index int32, deleteLog bool) error {
	tp := storage.TopicPartition{Topic: topic, Partition: index}
	m.mu.Lock()
	p, ok := m.partitions[tp]
	delete(m.partitions, tp)
	m.mu.Unlock()
	if ok {
		m.removeFromFetchers(p)
		if err := p.makeOffline(); err != nil {
			m.logger.Warn("taking a removed partition offline", "partition", p.String(), "err", err)
		}
	}
	if deleteLog {
		return m.opts.Logs.Delete(tp)
	}
	return nil
}

func (m *Manager) removeFromFetchers(p *Partition) {
	m.mu.RLock()
	fetchers := make([]*fetcher, 0, len(m.fetchers))
	for _, f := range m.fetchers {
		fetchers = append(fetchers, f)
	}
	m.mu.RUnlock()
	for _, f := range fetchers {
		f.remove(p)
	}
}

// proposeISR queues an ISR change for the sender goroutine.
func (m *Manager) proposeISR(p *Partition, change AlterISR) {
	select {
	case m.alterCh <- alterItem{p: p, change: change}:
	case <-m.ctx.Done():
	}
}

// alterLoop batches queued ISR changes into AlterPartition requests.
func (m *Manager) alterLoop() {
	for {
		var batch []alterItem
		select {
		case it := <-m.alterCh:
			batch = append(batch, it)
		case <-m.ctx.Done():
			return
		}
	drain:
		for len(batch) < 500 {
			select {
			case it := <-m.alterCh:
				batch = append(batch, it)
			default:
				break drain
			}
		}
		m.sendAlter(batch)
	}
}

func (m *Manager) sendAlter(batch []alterItem) {
	changes := make([]AlterISR, len(batch))
	for i, it := range batch {
		changes[i] = it.change
	}
	if m.opts.AlterPartition == nil {
		for _, it := range batch {
			it.p.ISRResult(it.change, nil, 0, 0, errNoController)
		}
		return
	}
	ctx, cancel := context.WithTimeout(m.ctx, 10*time.Second)
	results, err := m.opts.AlterPartition(ctx, changes)
	cancel()
	for i, it := range batch {
		var resend bool
		if err != nil || i >= len(results) {
			if err == nil {
				err = fmt.Errorf("AlterPartition answered %d of %d changes", len(results), len(batch))
			}
			resend = it.p.ISRResult(it.change, nil, 0, 0, err)
		} else {
			r := results[i]
			resend = it.p.ISRResult(it.change, r.ISR, r.LeaderEpoch, r.PartitionEpoch, r.Err)
		}
		if resend {
			m.resendLater(it)
		}
	}
}

// resendLater sends a change whose answer was lost again after
// isrRetryBackoff, if it is still the one pending.
func (m *Manager) resendLater(it alterItem) {
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		select {
		case <-m.opts.After(isrRetryBackoff):
			if it.p.stillPending(it.change) {
				m.proposeISR(it.p, it.change)
			}
		case <-m.ctx.Done():
		}
	}()
}

// shrinkLoop checks every half lag period for followers to drop from ISRs,
// as Kafka's isr-expiration task does.
func (m *Manager) shrinkLoop() {
	period := max(m.opts.ReplicaLagTimeMax/2, 10*time.Millisecond)
	for {
		select {
		case <-m.opts.After(period):
			for _, p := range m.Partitions() {
				p.MaybeShrinkISR(m.opts.ReplicaLagTimeMax)
			}
		case <-m.ctx.Done():
			return
		}
	}
}

package sharepartition

import (
	"context"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Manager holds a broker's share-partitions (Kafka's SharePartitionManager
// partition cache) and its share sessions.
//
// Concurrency: mu guards the map only and is never held while a partition
// initializes or writes. Lock order: Manager.mu, then Partition.mu.
type Manager struct {
	opts     Options
	sessions *SessionCache

	mu    sync.Mutex // guards the following
	parts map[partKey]*Partition
}

type partKey struct {
	group     string
	topicID   [16]byte
	partition int32
}

func keyOf(k Key) partKey { return partKey{k.Group, k.TopicID, k.Partition} }

// NewManager returns a manager without share-partitions.
func NewManager(opts Options) *Manager {
	opts = opts.withDefaults()
	return &Manager{opts: opts, sessions: NewSessionCache(opts.MaxSessions), parts: make(map[partKey]*Partition)}
}

// Sessions returns the broker's share session cache.
func (m *Manager) Sessions() *SessionCache { return m.sessions }

// Partition returns the share-partition of key for the topic-partition's
// current leader epoch, initialized (its state read from the share
// coordinator). A share-partition of an older leader epoch, or one whose
// initialization failed or that was fenced, is replaced by a new one. The
// code is 0 or the partition's error for the request.
func (m *Manager) Partition(ctx context.Context, key Key, leaderEpoch int32, log Log) (*Partition, int16) {
	m.mu.Lock()
	pk := keyOf(key)
	p := m.parts[pk]
	if p == nil || p.leaderEpoch != leaderEpoch || p.dead() {
		if p != nil {
			p.Close()
		}
		p = newPartition(key, leaderEpoch, log, m.opts)
		m.parts[pk] = p
	}
	m.mu.Unlock()
	if code := p.Initialize(ctx); code != 0 {
		return nil, code
	}
	return p, 0
}

// Existing returns the share-partition of key if this broker has it active
// (acknowledgements go only to a share-partition that handed records out;
// Kafka answers the others UNKNOWN_TOPIC_OR_PARTITION).
func (m *Manager) Existing(key Key) (*Partition, int16) {
	m.mu.Lock()
	p := m.parts[keyOf(key)]
	m.mu.Unlock()
	if p == nil {
		return nil, kerr.UnknownTopicOrPartition.Code
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if code := p.stateCodeLocked(); code != 0 {
		return nil, code
	}
	return p, 0
}

func (p *Partition) dead() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.state == stateFailed || p.state == stateFenced
}

// LeadershipLost closes the share-partitions of a topic-partition this
// broker no longer leads (or whose topic was deleted).
func (m *Manager) LeadershipLost(topicID [16]byte, partition int32) {
	m.mu.Lock()
	var closing []*Partition
	for pk, p := range m.parts {
		if pk.topicID == topicID && pk.partition == partition {
			closing = append(closing, p)
			delete(m.parts, pk)
		}
	}
	m.mu.Unlock()
	for _, p := range closing {
		p.Close()
	}
}

// ReleaseSession releases the records member holds on the partitions of
// a closed share session, group by group as the session names them.
func (m *Manager) ReleaseSession(ctx context.Context, closed ClosedSession) {
	for _, tp := range closed.Partitions {
		m.mu.Lock()
		p := m.parts[partKey{closed.Key.Group, tp.TopicID, tp.Partition}]
		m.mu.Unlock()
		if p != nil {
			p.ReleaseMember(ctx, closed.Key.Member)
		}
	}
}

// ConnectionClosed closes the share sessions of a connection and releases
// their members' records.
func (m *Manager) ConnectionClosed(ctx context.Context, conn string) {
	for _, s := range m.sessions.ConnectionClosed(conn) {
		m.ReleaseSession(ctx, s)
	}
}

// Stats returns the metrics of every share-partition.
func (m *Manager) Stats() map[Key]Stats {
	m.mu.Lock()
	parts := make([]*Partition, 0, len(m.parts))
	for _, p := range m.parts {
		parts = append(parts, p)
	}
	m.mu.Unlock()
	out := make(map[Key]Stats, len(parts))
	for _, p := range parts {
		out[p.key] = p.Stats()
	}
	return out
}

// Close closes every share-partition.
func (m *Manager) Close() {
	m.mu.Lock()
	parts := m.parts
	m.parts = make(map[partKey]*Partition)
	m.mu.Unlock()
	for _, p := range parts {
		p.Close()
	}
}

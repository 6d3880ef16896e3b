package replication

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kbroker/kbroker/internal/sampled"
)

// Replication throttles (KIP-73), as Kafka's ReplicationQuotaManager: one
// quota for what this broker sends as a leader, one for what it fetches as
// a follower. A partition is throttled on a side when its topic's
// leader.replication.throttled.replicas (or follower.) lists it with this
// broker's id, or is "*"; the side's rate is leader.replication.
// throttled.rate (or follower.), a dynamic broker config. Traffic of
// throttled partitions is measured with SimpleRate over replication.
// quota.window.num windows; once the rate is above the bound:
//
//   - a leader answers an out-of-sync follower's fetch of a throttled
//     partition with no records (ReplicaManager.shouldLeaderThrottle);
//   - a follower leaves its throttled partitions out of its fetches while
//     it is behind the leader's high watermark
//     (ReplicaFetcherThread.shouldFollowerThrottle).
//
// In-sync replicas are never throttled, so throttling cannot shrink an ISR;
// their bytes count towards the rate all the same. What is throttled is
// catch-up traffic: reassignment (kafka-reassign-partitions --throttle sets
// these configs) and replicas returning after an outage.

// ReplicaQuota is one side's throttle. Safe for concurrent use.
type ReplicaQuota struct {
	cfg sampled.Config
	now func() time.Time

	mu        sync.Mutex // guards the fields below
	rate      sampled.SimpleRate
	bound     float64 // bytes/s; +Inf: no throttle
	throttled map[string]ThrottledPartitions
}

// ThrottledPartitions are a topic's throttled partitions on one broker and
// side: every one (the "*" form) or those listed.
type ThrottledPartitions struct {
	All        bool
	Partitions []int32
}

func (t ThrottledPartitions) has(partition int32) bool {
	return t.All || slices.Contains(t.Partitions, partition)
}

// NewReplicaQuota returns a side's quota measured over cfg's windows, with
// no rate bound and no throttled partition.
func NewReplicaQuota(cfg sampled.Config, now func() time.Time) *ReplicaQuota {
	return &ReplicaQuota{cfg: cfg, now: now, bound: math.Inf(1)}
}

// SetRate sets the bound in bytes/s; math.MaxInt64 (Kafka's default) is no
// bound.
func (q *ReplicaQuota) SetRate(bytesPerSecond int64) {
	bound := float64(bytesPerSecond)
	if bytesPerSecond == math.MaxInt64 {
		bound = math.Inf(1)
	}
	q.mu.Lock()
	q.bound = bound
	q.mu.Unlock()
}

// SetThrottled replaces the throttled partitions, by topic.
func (q *ReplicaQuota) SetThrottled(byTopic map[string]ThrottledPartitions) {
	q.mu.Lock()
	q.throttled = byTopic
	q.mu.Unlock()
}

// IsThrottled reports whether the partition is throttled on this side.
func (q *ReplicaQuota) IsThrottled(topic string, partition int32) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	t, ok := q.throttled[topic]
	return ok && t.has(partition)
}

// IsQuotaExceeded reports whether the measured rate is above the bound.
func (q *ReplicaQuota) IsQuotaExceeded() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if math.IsInf(q.bound, 1) {
		return false
	}
	return q.rate.Measure(q.cfg, sampled.Millis(q.now())) > q.bound
}

// Record adds bytes of throttled traffic to the rate.
func (q *ReplicaQuota) Record(bytes int) {
	if bytes <= 0 {
		return
	}
	q.mu.Lock()
	q.rate.Record(q.cfg, float64(bytes), sampled.Millis(q.now()))
	q.mu.Unlock()
}

// ShouldThrottle is shouldLeaderThrottle / shouldFollowerThrottle: the
// replica is out of sync, its partition throttled, and the rate above the
// bound.
func (q *ReplicaQuota) ShouldThrottle(topic string, partition int32, inSync bool) bool {
	return q != nil && !inSync && q.IsThrottled(topic, partition) && q.IsQuotaExceeded()
}

// Stats returns the measured rate (bytes/s) and the bound (+Inf: none).
func (q *ReplicaQuota) Stats() (rate, bound float64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.rate.Measure(q.cfg, sampled.Millis(q.now())), q.bound
}

// ParseThrottledReplicas reads a topic's throttled replicas config (Kafka's
// "partition:broker,..." list, or "*") for broker: the partitions listed
// with its id (ConfigHandler.parseThrottledPartitions). Malformed items,
// which config validation refuses, are skipped.
func ParseThrottledReplicas(list []string, broker int32) ThrottledPartitions {
	var out ThrottledPartitions
	for _, item := range list {
		item = strings.TrimSpace(item)
		if item == "*" {
			return ThrottledPartitions{All: true}
		}
		p, b, ok := strings.Cut(item, ":")
		pi, perr := strconv.ParseInt(strings.TrimSpace(p), 10, 32)
		bi, berr := strconv.ParseInt(strings.TrimSpace(b), 10, 32)
		if ok && perr == nil && berr == nil && int32(bi) == broker && !slices.Contains(out.Partitions, int32(pi)) {
			out.Partitions = append(out.Partitions, int32(pi))
		}
	}
	return out
}

// InSync reports whether replica is in the partition's committed ISR (a
// leader's view; Kafka's Partition.inSyncReplicaIds).
func (p *Partition) InSync(replica int32) bool {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return slices.Contains(p.isr.committed, replica)
}

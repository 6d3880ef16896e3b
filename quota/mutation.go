package quota

import (
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kbroker/kbroker/internal/sampled"
)

// Versions from which CreateTopics, DeleteTopics and CreatePartitions know
// THROTTLING_QUOTA_EXCEEDED, and the controller mutation quota is strict
// (KIP-599). Older versions are throttled after the fact: the mutation is
// made, the answer carries the throttle time.
const (
	StrictCreateTopicsVersion     = 6
	StrictDeleteTopicsVersion     = 5
	StrictCreatePartitionsVersion = 3
)

// ThrottlingQuotaExceeded is the error a strict mutation quota answers a
// topic with once the token bucket is empty.
var ThrottlingQuotaExceeded = &Error{Code: kerr.ThrottlingQuotaExceeded.Code, Message: "The throttling quota has been exceeded."}

// MutationQuota is one request's controller mutation quota (Kafka's
// StrictControllerMutationQuota / PermissiveControllerMutationQuota): each
// topic's partitions are recorded as they are created or deleted. Not safe
// for concurrent use: one request's decisions are sequential. The nil
// MutationQuota is unbounded.
type MutationQuota struct {
	m      *Manager
	s      *sensor
	bound  float64
	strict bool

	lastThrottleMs int64
	lastRecordedMs int64
}

// NewMutationQuota returns the quota of a (user, client id) for one
// request: strict when the request's version knows
// THROTTLING_QUOTA_EXCEEDED, nil (unbounded) when no entity has a
// controller_mutation_rate or none applies to this client.
func (m *Manager) NewMutationQuota(user, clientID string, strict bool) *MutationQuota {
	if m == nil || !m.Enabled() {
		return nil
	}
	t, bound, ok := m.Resolve(user, clientID)
	if !ok {
		return nil
	}
	return &MutationQuota{m: m, s: m.sensorFor(t, m.nowMs()), bound: bound, strict: strict}
}

// Record takes permits (partitions) from the bucket. A strict quota whose
// bucket is already below zero refuses with THROTTLING_QUOTA_EXCEEDED and
// records nothing; otherwise the permits are taken, even into debt, so one
// large request still passes (KIP-599), and a permissive quota notes the
// throttle time of the debt.
func (q *MutationQuota) Record(permits float64) *Error {
	if q == nil {
		return nil
	}
	now := q.m.nowMs()
	q.s.mu.Lock()
	defer q.s.mu.Unlock()
	q.s.lastMs = now
	cfg := q.m.cfg
	if q.strict {
		if tokens := q.s.bucket.Measure(cfg, q.bound, now); tokens < 0 {
			q.noteThrottle(tokens, now)
			return ThrottlingQuotaExceeded
		}
	}
	q.s.rate.Record(throttleAvgConfig, permits, now)
	q.s.bucket.Record(cfg, q.bound, permits, now)
	if !q.strict {
		if tokens := q.s.bucket.Measure(cfg, q.bound, now); tokens < 0 {
			q.noteThrottle(tokens, now)
		}
	}
	return nil
}

func (q *MutationQuota) noteThrottle(tokens float64, now int64) {
	q.lastThrottleMs = sampled.ThrottleTime(tokens, q.bound)
	q.lastRecordedMs = now
}

// ThrottleTime is the time the client must wait, in ms: the throttle noted
// when the quota was exceeded, less the time since (the answer goes out
// after the records are committed).
func (q *MutationQuota) ThrottleTime() int {
	if q == nil || q.lastThrottleMs <= 0 {
		return 0
	}
	elapsed := q.m.nowMs() - q.lastRecordedMs
	return clampMs(q.lastThrottleMs - elapsed)
}

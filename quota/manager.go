package quota

import (
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kbroker/kbroker/internal/sampled"
)

// Kind is what a manager measures (Kafka's QuotaType).
type Kind int

const (
	Produce            Kind = iota // producer_byte_rate: request bytes
	Fetch                          // consumer_byte_rate: response bytes
	Request                        // request_percentage: handler time
	ControllerMutation             // controller_mutation_rate: partitions
)

// Key is the quota config key the kind enforces.
func (k Kind) Key() string {
	return [...]string{ProducerByteRate, ConsumerByteRate, RequestPercentage, ControllerMutationRate}[k]
}

// String is Kafka's QuotaType name, its metrics' group.
func (k Kind) String() string {
	return [...]string{"Produce", "Fetch", "Request", "ControllerMutation"}[k]
}

// Sensor expiry: Kafka drops a client's sensors after an hour without a
// record; the sweep that does it runs at most once a minute, on a record.
const (
	sensorExpiry  = time.Hour
	sweepInterval = time.Minute
)

// throttleAvgConfig is Kafka's default MetricConfig (metrics.num.samples,
// metrics.sample.window.ms), which the throttle-time averages use.
var throttleAvgConfig = sampled.Config{Samples: 2, Window: 30 * time.Second}

// Manager measures clients against one kind of quota: Kafka's
// ClientQuotaManager (and ClientRequestQuotaManager,
// ControllerMutationQuotaManager). Safe for concurrent use.
type Manager struct {
	kind Kind
	cfg  sampled.Config
	now  func() time.Time

	limits atomic.Pointer[Limits]

	mu        sync.RWMutex // guards sensors
	sensors   map[Tags]*sensor
	nextSweep atomic.Int64 // ms
}

// sensor is one tag set's measures.
type sensor struct {
	mu       sync.Mutex
	rate     sampled.Rate        // byte-rate, request-time, mutation-rate
	bucket   sampled.TokenBucket // tokens (ControllerMutation)
	throttle sampled.Avg         // throttle-time
	lastMs   int64
}

// NewManager returns a manager of kind measuring over cfg's windows
// (quota.window.num and quota.window.size.seconds, or the controller.
// ones for ControllerMutation).
func NewManager(kind Kind, cfg sampled.Config, now func() time.Time) *Manager {
	m := &Manager{kind: kind, cfg: cfg, now: now, sensors: map[Tags]*sensor{}}
	m.limits.Store(&Limits{})
	return m
}

// Kind returns what the manager measures.
func (m *Manager) Kind() Kind { return m.kind }

// SetQuotas takes the cluster's quotas (on every metadata image). Sensors
// keep their measures; their bounds follow at once.
func (m *Manager) SetQuotas(q Quotas) {
	l := q.Limits(m.kind.Key())
	m.limits.Store(&l)
}

// Enabled reports whether any entity has this kind's quota: until one
// has, nothing is measured (ClientQuotaManager.quotasEnabled).
func (m *Manager) Enabled() bool { return len(*m.limits.Load()) > 0 }

// Resolve returns the tags a (user, client id) is measured under and its
// quota, false when it has none.
func (m *Manager) Resolve(user, clientID string) (Tags, float64, bool) {
	l := m.limits.Load()
	t := l.Tags(user, clientID)
	v, ok := l.Limit(t)
	return t, v, ok
}

func (m *Manager) nowMs() int64 { return sampled.Millis(m.now()) }

// sensorFor returns the sensor of tags, creating it.
func (m *Manager) sensorFor(t Tags, nowMs int64) *sensor {
	m.maybeSweep(nowMs)
	m.mu.RLock()
	s := m.sensors[t]
	m.mu.RUnlock()
	if s != nil {
		return s
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if s = m.sensors[t]; s == nil {
		s = &sensor{lastMs: nowMs}
		m.sensors[t] = s
	}
	return s
}

func (m *Manager) maybeSweep(nowMs int64) {
	next := m.nextSweep.Load()
	if nowMs < next || !m.nextSweep.CompareAndSwap(next, nowMs+sweepInterval.Milliseconds()) {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for t, s := range m.sensors {
		s.mu.Lock()
		idle := nowMs-s.lastMs >= sensorExpiry.Milliseconds()
		s.mu.Unlock()
		if idle {
			delete(m.sensors, t)
		}
	}
}

// RecordAndGetThrottleTime is ClientQuotaManager.recordAndGetThrottleTimeMs:
// value is recorded, and if the rate is then above the quota the answer is
// the time until it falls back to it, in ms (0: within quota). It records
// nothing while no entity has this kind's quota.
func (m *Manager) RecordAndGetThrottleTime(user, clientID string, value float64) int {
	if !m.Enabled() {
		return 0
	}
	t, bound, limited := m.Resolve(user, clientID)
	now := m.nowMs()
	s := m.sensorFor(t, now)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastMs = now
	s.rate.Record(m.cfg, value, now)
	if !limited {
		return 0
	}
	rate := s.rate.Measure(m.cfg, now)
	if rate <= bound {
		return 0
	}
	return clampMs(s.rate.ThrottleTime(m.cfg, rate, bound, now))
}

// RecordNoThrottle records value without checking the quota.
func (m *Manager) RecordNoThrottle(user, clientID string, value float64) {
	if !m.Enabled() {
		return
	}
	t, _, _ := m.Resolve(user, clientID)
	now := m.nowMs()
	s := m.sensorFor(t, now)
	s.mu.Lock()
	s.lastMs = now
	s.rate.Record(m.cfg, value, now)
	s.mu.Unlock()
}

// Unrecord takes back value (a throttled fetch answered empty:
// ClientQuotaManager.unrecordQuotaSensor).
func (m *Manager) Unrecord(user, clientID string, value float64) {
	m.RecordNoThrottle(user, clientID, -value)
}

// MaxValueInQuotaWindow is the most that can be recorded at once without a
// certain throttle: quota * (samples-1) * window seconds; +Inf without a
// quota. Fetches are capped to it.
func (m *Manager) MaxValueInQuotaWindow(user, clientID string) float64 {
	if !m.Enabled() {
		return math.Inf(1)
	}
	if _, bound, ok := m.Resolve(user, clientID); ok {
		return bound * float64(m.cfg.Samples-1) * m.cfg.Window.Seconds()
	}
	return math.Inf(1)
}

// Throttle records a throttle of ms in the tags' throttle-time average
// (ClientQuotaManager.throttle; the connection is muted by the caller).
func (m *Manager) Throttle(user, clientID string, ms int) {
	if ms <= 0 || !m.Enabled() {
		return
	}
	t, _, _ := m.Resolve(user, clientID)
	now := m.nowMs()
	s := m.sensorFor(t, now)
	s.mu.Lock()
	s.throttle.Record(throttleAvgConfig, float64(ms), now)
	s.mu.Unlock()
}

// Stat is one sensor's measures, for metrics.
type Stat struct {
	Kind Kind
	Tags Tags
	// Rate is bytes/s (Produce, Fetch), request-time % (Request) or
	// partitions/s (ControllerMutation).
	Rate float64
	// ThrottleTimeMs is the average throttle time, NaN when none.
	ThrottleTimeMs float64
	// Quota is the bound, +Inf when none applies.
	Quota float64
	// Tokens is what the token bucket holds (ControllerMutation only).
	Tokens float64
}

// Stats returns every live sensor's measures, for a metrics scrape.
func (m *Manager) Stats() []Stat {
	now := m.nowMs()
	l := m.limits.Load()
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]Stat, 0, len(m.sensors))
	for t, s := range m.sensors {
		st := Stat{Kind: m.kind, Tags: t, Quota: math.Inf(1)}
		bound, limited := l.Limit(t)
		if limited {
			st.Quota = bound
		}
		s.mu.Lock()
		cfg := m.cfg
		if m.kind == ControllerMutation {
			cfg = throttleAvgConfig // mutation-rate is a plain Rate
			if limited {
				st.Tokens = s.bucket.Measure(m.cfg, bound, now)
			}
		}
		st.Rate = s.rate.Measure(cfg, now)
		st.ThrottleTimeMs = s.throttle.Measure(throttleAvgConfig, now)
		s.mu.Unlock()
		out = append(out, st)
	}
	return out
}

func clampMs(ms int64) int {
	return int(min(max(ms, 0), math.MaxInt32))
}

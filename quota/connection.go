package quota

import (
	"math"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kbroker/kbroker/internal/sampled"
)

// ConnectionManager is the per-IP connection rate quota of Kafka's
// ConnectionQuotas (KIP-612): connection_creation_rate of an IP entity,
// else of the <default> IP entity, bounds the connections per second a
// client address may open. A connection over it is not served: Kafka
// holds it and closes it once the throttle time has passed, at most one
// quota window (QuotaUtils.boundedThrottleTime). Safe for concurrent use.
type ConnectionManager struct {
	cfg sampled.Config
	now func() time.Time

	limits atomic.Pointer[ipLimits]

	mu        sync.Mutex // guards the fields below
	sensors   map[string]*ipSensor
	nextSweep int64
}

// ipLimits are the connection_creation_rate overrides, by normalized IP.
type ipLimits struct {
	byIP    map[string]float64
	def     float64
	hasDef  bool
	enabled bool
}

type ipSensor struct {
	rate   sampled.Rate
	lastMs int64
}

// NewConnectionManager measures over cfg's windows (quota.window.*).
func NewConnectionManager(cfg sampled.Config, now func() time.Time) *ConnectionManager {
	m := &ConnectionManager{cfg: cfg, now: now, sensors: map[string]*ipSensor{}}
	m.limits.Store(&ipLimits{})
	return m
}

// SetQuotas takes the cluster's quotas.
func (m *ConnectionManager) SetQuotas(q Quotas) {
	l := &ipLimits{byIP: map[string]float64{}}
	for e, values := range q {
		v, ok := values[ConnectionCreationRate]
		if !ok || !e.IP.Present {
			continue
		}
		if e.IP.Default {
			l.def, l.hasDef = v, true
		} else {
			l.byIP[NormalizeIP(e.IP.Value)] = v
		}
		l.enabled = true
	}
	m.limits.Store(l)
}

// limit is the IP's quota, false when none applies.
func (l *ipLimits) limit(ip string) (float64, bool) {
	if v, ok := l.byIP[ip]; ok {
		return v, true
	}
	return l.def, l.hasDef
}

// Record counts a new connection from ip and returns how long it must be
// held before it is closed unserved (then it is not counted), 0 when it
// may be served.
func (m *ConnectionManager) Record(ip net.IP) time.Duration {
	l := m.limits.Load()
	if !l.enabled || ip == nil {
		return 0
	}
	key := ip.String()
	bound, ok := l.limit(key)
	if !ok {
		return 0
	}
	now := sampled.Millis(m.now())
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sweepLocked(now)
	s := m.sensors[key]
	if s == nil {
		s = &ipSensor{}
		m.sensors[key] = s
	}
	s.lastMs = now
	s.rate.Record(m.cfg, 1, now)
	rate := s.rate.Measure(m.cfg, now)
	if rate <= bound {
		return 0
	}
	ms := min(s.rate.ThrottleTime(m.cfg, rate, bound, now), m.cfg.Window.Milliseconds())
	// A connection not accepted does not count (recordIpConnectionMaybeThrottle).
	s.rate.Record(m.cfg, -1, now)
	return time.Duration(ms) * time.Millisecond
}

func (m *ConnectionManager) sweepLocked(now int64) {
	if now < m.nextSweep {
		return
	}
	m.nextSweep = now + sweepInterval.Milliseconds()
	for ip, s := range m.sensors {
		if now-s.lastMs >= sensorExpiry.Milliseconds() {
			delete(m.sensors, ip)
		}
	}
}

// IPStat is one address's connection rate, for metrics.
type IPStat struct {
	IP    string
	Rate  float64 // connections/s
	Quota float64 // +Inf: none
}

// Stats returns the measured addresses.
func (m *ConnectionManager) Stats() []IPStat {
	l := m.limits.Load()
	now := sampled.Millis(m.now())
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]IPStat, 0, len(m.sensors))
	for ip, s := range m.sensors {
		st := IPStat{IP: ip, Rate: s.rate.Measure(m.cfg, now), Quota: math.Inf(1)}
		if v, ok := l.limit(ip); ok {
			st.Quota = v
		}
		out = append(out, st)
	}
	return out
}

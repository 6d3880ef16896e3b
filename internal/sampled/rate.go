package sampled

import "math"

// Rate is Kafka's Rate (per second) over a windowed sum: the sum divided by
// the time since the oldest sample started, which is counted as at least
// Samples-1 whole windows. So a burst right after a quiet period is
// measured over most of the quota window, not over its own few
// milliseconds (Rate.windowSize's "first window" special case).
type Rate struct{ w windowed }

// Record adds value at nowMs (negative values take back an earlier record,
// as ClientQuotaManager.unrecordQuotaSensor does).
func (r *Rate) Record(c Config, value float64, nowMs int64) { r.w.record(c, value, nowMs) }

// Measure returns the rate per second at nowMs.
func (r *Rate) Measure(c Config, nowMs int64) float64 {
	sum := r.w.sum(c, nowMs)
	return sum / (float64(r.WindowSize(c, nowMs)) / 1000)
}

// WindowSize is the time, in ms, the rate is measured over: since the
// oldest non-obsolete sample started, and at least Samples-1 windows plus
// the elapsed part of the current one.
func (r *Rate) WindowSize(c Config, nowMs int64) int64 {
	r.w.purge(c, nowMs)
	elapsed := nowMs - r.w.oldest(nowMs).startTimeMs
	full := elapsed / c.windowMs()
	if minFull := int64(c.samples() - 1); full < minFull {
		elapsed += (minFull - full) * c.windowMs()
	}
	return max(elapsed, 1)
}

// ThrottleTime is QuotaUtils.throttleTime: how long, in ms, until a rate of
// value measured at nowMs falls back to bound if nothing more is recorded:
// (value - bound) / bound * the rate's window.
func (r *Rate) ThrottleTime(c Config, value, bound float64, nowMs int64) int64 {
	if bound <= 0 {
		return 0
	}
	ms := (value - bound) / bound * float64(r.WindowSize(c, nowMs))
	return int64(math.Round(ms))
}

// SimpleRate is Kafka's SimpleRate, the ReplicationQuotaManager's rate: the
// windowed sum over the elapsed time since the oldest sample, counted as at
// least one window.
type SimpleRate struct{ w windowed }

// Record adds value at nowMs.
func (r *SimpleRate) Record(c Config, value float64, nowMs int64) { r.w.record(c, value, nowMs) }

// Measure returns the rate per second at nowMs.
func (r *SimpleRate) Measure(c Config, nowMs int64) float64 {
	sum := r.w.sum(c, nowMs)
	r.w.purge(c, nowMs)
	elapsed := max(nowMs-r.w.oldest(nowMs).startTimeMs, c.windowMs())
	return sum / (float64(elapsed) / 1000)
}

// Avg is Kafka's Avg: the mean of the values recorded in the non-obsolete
// samples, NaN when there is none.
type Avg struct{ w windowed }

// Record adds one value at nowMs.
func (a *Avg) Record(c Config, value float64, nowMs int64) { a.w.record(c, value, nowMs) }

// Measure returns the mean at nowMs.
func (a *Avg) Measure(c Config, nowMs int64) float64 {
	n := a.w.count(c, nowMs)
	if n == 0 {
		return math.NaN()
	}
	return a.w.sum(c, nowMs) / float64(n)
}

package sampled

import "time"

// Config is Kafka's MetricConfig for a sampled stat: how many samples are
// kept and how long each one's window is.
type Config struct {
	Samples int
	Window  time.Duration
}

// windowMs is the window in milliseconds, at least 1.
func (c Config) windowMs() int64 { return max(c.Window.Milliseconds(), 1) }

// samples is the sample count, at least 1.
func (c Config) samples() int { return max(c.Samples, 1) }

// sample is one window's share of a sampled stat.
type sample struct {
	value       float64
	eventCount  int64
	startTimeMs int64
	lastEventMs int64
}

func newSample(nowMs int64) sample {
	return sample{startTimeMs: nowMs, lastEventMs: nowMs}
}

func (s *sample) reset(nowMs int64) { *s = newSample(nowMs) }

func (s *sample) complete(nowMs int64, c Config) bool {
	return nowMs-s.startTimeMs >= c.windowMs()
}

// windowed is Kafka's SampledStat with WindowedSum's update and combine:
// values are added to the current sample, and the measure is the sum of
// every sample that is not obsolete. It keeps Samples+1 samples, as Kafka
// does since KAFKA-16368: the extra one lets a sample that overlaps the
// monitored window stay while a new one fills.
type windowed struct {
	samples []sample
	current int
}

func (w *windowed) record(c Config, value float64, nowMs int64) {
	s := w.currentSample(nowMs)
	if s.complete(nowMs, c) {
		s = w.advance(c, nowMs)
	}
	s.value += value
	s.eventCount++
	s.lastEventMs = nowMs
}

func (w *windowed) currentSample(nowMs int64) *sample {
	if len(w.samples) == 0 {
		w.samples = append(w.samples, newSample(nowMs))
	}
	return &w.samples[w.current]
}

func (w *windowed) advance(c Config, nowMs int64) *sample {
	w.current = (w.current + 1) % (c.samples() + 1)
	if w.current >= len(w.samples) {
		w.samples = append(w.samples, newSample(nowMs))
	} else {
		w.samples[w.current].reset(nowMs)
	}
	return &w.samples[w.current]
}

// purge resets the samples without an event within the monitored window
// (Samples windows back); a sample overlapping it is kept.
func (w *windowed) purge(c Config, nowMs int64) {
	expireAge := int64(c.samples()) * c.windowMs()
	for i := range w.samples {
		if nowMs-w.samples[i].lastEventMs >= expireAge {
			w.samples[i].reset(nowMs)
		}
	}
}

// oldest is the sample that started first (creating one when there is none).
func (w *windowed) oldest(nowMs int64) *sample {
	if len(w.samples) == 0 {
		w.samples = append(w.samples, newSample(nowMs))
	}
	o := &w.samples[0]
	for i := 1; i < len(w.samples); i++ {
		if w.samples[i].startTimeMs < o.startTimeMs {
			o = &w.samples[i]
		}
	}
	return o
}

// sum purges obsolete samples and adds up the rest.
func (w *windowed) sum(c Config, nowMs int64) float64 {
	w.purge(c, nowMs)
	total := 0.0
	for _, s := range w.samples {
		total += s.value
	}
	return total
}

// count purges obsolete samples and adds up their event counts.
func (w *windowed) count(c Config, nowMs int64) int64 {
	w.purge(c, nowMs)
	var n int64
	for _, s := range w.samples {
		n += s.eventCount
	}
	return n
}

// Millis converts a time to Kafka's milliseconds since the epoch.
func Millis(t time.Time) int64 { return t.UnixMilli() }

package console

import (
	"context"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kbroker/kbroker/admin"
)

// history is how many samples each series keeps (5 minutes at 2 s).
const history = 150

// activeFor is how long after the last page view the sampler keeps asking
// the cluster for end offsets and lag; the local metrics cost nothing and
// are always sampled.
const activeFor = 2 * time.Minute

// totals are the broker's counters at one instant.
type totals struct {
	bytesIn, bytesOut, recordsIn, recordsOut float64
}

// Throughput is the series of this broker's rates, for the overview chart.
type Throughput struct {
	T          []int64   `json:"t"`           // unix ms
	BytesIn    []float64 `json:"bytes_in"`    // produce, bytes/s
	BytesOut   []float64 `json:"bytes_out"`   // fetch (consumers and followers), bytes/s
	RecordsIn  []float64 `json:"records_in"`  // produce, records/s
	RecordsOut []float64 `json:"records_out"` // fetch, records/s
}

// LagHistory is a group's lag over time, in total and per partition.
type LagHistory struct {
	T          []int64            `json:"t"`
	Total      []int64            `json:"total"`
	Partitions map[string][]int64 `json:"partitions"` // "topic/partition"
}

// sampler keeps the series the charts draw.
type sampler struct {
	now func() time.Time

	mu          sync.Mutex // guards the following
	lastView    time.Time
	throughput  Throughput
	prev        totals
	prevAt      time.Time
	ends        map[string]int64 // topic -> sum of high watermarks
	endsAt      time.Time
	topicRates  map[string]float64 // topic -> messages/s
	lags        map[string]*LagHistory
	lastSampled time.Time
}

func newSampler(now func() time.Time) *sampler {
	return &sampler{now: now, topicRates: map[string]float64{}, lags: map[string]*LagHistory{}}
}

// touch records a page view.
func (s *sampler) touch() {
	s.mu.Lock()
	s.lastView = s.now()
	s.mu.Unlock()
}

func (s *sampler) active() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.lastView.IsZero() && s.now().Sub(s.lastView) < activeFor
}

// addTotals turns counters into rates since the previous call.
func (s *sampler) addTotals(t totals) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if !s.prevAt.IsZero() {
		secs := now.Sub(s.prevAt).Seconds()
		if secs > 0 {
			tp := &s.throughput
			tp.T = keep(tp.T, now.UnixMilli())
			tp.BytesIn = keep(tp.BytesIn, rate(t.bytesIn, s.prev.bytesIn, secs))
			tp.BytesOut = keep(tp.BytesOut, rate(t.bytesOut, s.prev.bytesOut, secs))
			tp.RecordsIn = keep(tp.RecordsIn, rate(t.recordsIn, s.prev.recordsIn, secs))
			tp.RecordsOut = keep(tp.RecordsOut, rate(t.recordsOut, s.prev.recordsOut, secs))
		}
	}
	s.prev, s.prevAt = t, now
}

// rate is a counter's increase per second; a counter that went down (a
// restart) counts from zero.
func rate(cur, prev, secs float64) float64 {
	if cur < prev {
		return cur / secs
	}
	return (cur - prev) / secs
}

// keep appends v, dropping the oldest beyond history.
func keep[T any](s []T, v T) []T {
	s = append(s, v)
	if len(s) > history {
		s = append(s[:0:0], s[len(s)-history:]...)
	}
	return s
}

// addEnds turns the topics' summed high watermarks into messages/s.
func (s *sampler) addEnds(ends map[string]int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if s.ends != nil {
		secs := now.Sub(s.endsAt).Seconds()
		rates := map[string]float64{}
		for t, end := range ends {
			if prev, ok := s.ends[t]; ok && secs > 0 && end >= prev {
				rates[t] = float64(end-prev) / secs
			}
		}
		s.topicRates = rates
	}
	s.ends, s.endsAt = ends, now
}

// addLags appends each group's lag; groups gone are dropped.
func (s *sampler) addLags(groups map[string]*admin.GroupDetail) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.now().UnixMilli()
	for name := range s.lags {
		if groups[name] == nil {
			delete(s.lags, name)
		}
	}
	for name, g := range groups {
		h := s.lags[name]
		if h == nil {
			h = &LagHistory{Partitions: map[string][]int64{}}
			s.lags[name] = h
		}
		h.T, h.Total = keep(h.T, t), keep(h.Total, g.TotalLag)
		for _, p := range g.Partitions {
			key := p.Topic + "/" + strconv.Itoa(int(p.Partition))
			h.Partitions[key] = keep(h.Partitions[key], max(p.Lag, 0))
		}
	}
}

func (s *sampler) throughputCopy() Throughput {
	s.mu.Lock()
	defer s.mu.Unlock()
	tp := s.throughput
	return Throughput{T: append([]int64{}, tp.T...), BytesIn: append([]float64{}, tp.BytesIn...),
		BytesOut: append([]float64{}, tp.BytesOut...), RecordsIn: append([]float64{}, tp.RecordsIn...),
		RecordsOut: append([]float64{}, tp.RecordsOut...)}
}

func (s *sampler) topicRate(topic string) (float64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.topicRates[topic]
	return r, ok
}

func (s *sampler) lagCopy(group string) LagHistory {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.lags[group]
	out := LagHistory{T: []int64{}, Total: []int64{}, Partitions: map[string][]int64{}}
	if h == nil {
		return out
	}
	out.T, out.Total = append(out.T, h.T...), append(out.Total, h.Total...)
	for k, v := range h.Partitions {
		out.Partitions[k] = append([]int64{}, v...)
	}
	return out
}

// gather sums the broker's produce and fetch counters over topics.
func gather(g prometheus.Gatherer) totals {
	var t totals
	if g == nil {
		return t
	}
	families, _ := g.Gather()
	dst := map[string]*float64{
		"kbroker_topic_bytes_in_total":    &t.bytesIn,
		"kbroker_topic_bytes_out_total":   &t.bytesOut,
		"kbroker_topic_records_in_total":  &t.recordsIn,
		"kbroker_topic_records_out_total": &t.recordsOut,
	}
	for _, f := range families {
		p, ok := dst[f.GetName()]
		if !ok {
			continue
		}
		for _, m := range f.GetMetric() {
			*p += m.GetCounter().GetValue()
		}
	}
	return t
}

// sampleLoop samples every interval until Close.
func (c *Console) sampleLoop(ctx context.Context) {
	defer close(c.done)
	t := time.NewTicker(c.opts.Interval)
	defer t.Stop()
	for {
		c.sampleOnce(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// sampleOnce takes one sample: the local counters always, and for each
// viewer looking, through the viewer's own connection, the end offsets and
// group lags it may see; then it closes the viewers gone idle.
func (c *Console) sampleOnce(parent context.Context) {
	c.samples.addTotals(gather(c.opts.Gatherer))
	for _, v := range c.viewers.sampling() {
		c.sampleViewer(parent, v)
	}
	c.viewers.expire()
}

// sampleViewer samples what v sees into v's samples.
func (c *Console) sampleViewer(parent context.Context, v *viewer) {
	ctx, cancel := context.WithTimeout(parent, max(c.opts.Interval, 2*time.Second))
	defer cancel()
	ctx, stop := v.client.Watch(ctx)
	defer stop()
	if ends, err := v.client.Admin().ListEndOffsets(ctx); err == nil || len(ends) > 0 {
		sums := map[string]int64{}
		for t, ps := range ends {
			for p, o := range ps {
				if p >= 0 && o.Err == nil {
					sums[t] += o.Offset
				}
			}
		}
		v.samples.addEnds(sums)
	}
	if lags, err := v.client.Lags(ctx); err == nil {
		v.samples.addLags(lags)
	}
}

// sortedNames returns a map's keys in order.
func sortedNames[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
